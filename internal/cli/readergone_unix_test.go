//go:build unix

package cli

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readerGone fires for a pipe whose read end closed, never for a buffer,
// and its goroutine ends when stopped.
func TestReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	gone, stop := readerGone(w)
	defer stop()
	select {
	case <-gone:
		t.Fatal("fired while the reader is still open")
	case <-time.After(3 * readerPoll):
	}
	require.NoError(t, r.Close())
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("did not notice the reader closing within 10 s")
	}

	never, stop2 := readerGone(&bytes.Buffer{})
	stop2()
	select {
	case <-never:
		t.Fatal("fired for a buffer")
	default:
	}
}
