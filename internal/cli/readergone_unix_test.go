//go:build unix

package cli

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// readerGoneNow sees at once what readerGone polls for; isNullDevice tells
// /dev/null (what a closed stdout becomes) from a pipe or a file.
func TestReaderGoneNowAndNullDevice(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	assert.False(t, readerGoneNow(w))
	require.NoError(t, r.Close())
	assert.True(t, readerGoneNow(w))
	assert.False(t, readerGoneNow(&bytes.Buffer{}))

	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	assert.True(t, isNullDevice(null))
	assert.False(t, isNullDevice(w))
	f, err := os.Create(t.TempDir() + "/out")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isNullDevice(f))
	assert.False(t, isNullDevice(&bytes.Buffer{}))
}
