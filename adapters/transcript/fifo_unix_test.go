//go:build unix

package transcript

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
)

// FIFOs exist on unix only.

// TestWaitEnqueuedFIFONeverBlocks: a FIFO planted at the transcript path must
// not block the open (nothing writes to it): the wait ends with an error.
func TestWaitEnqueuedFIFONeverBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := New(nil).WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "hi", Since: time.Now()})
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a regular file")
	case <-time.After(5 * time.Second):
		// Unblock a reader stuck in open(2) so the test can end.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("WaitEnqueued blocked opening a FIFO")
	}
}

// A FIFO planted at the transcript path is refused at once, never waited on.
func TestTakenUpRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), sid+".jsonl")
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	done := make(chan error, 1)
	go func() { _, _, err := New(nil).TakenUp(context.Background(), p, "go", 0, time.Now()); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("TakenUp blocked on a FIFO")
	}
}
