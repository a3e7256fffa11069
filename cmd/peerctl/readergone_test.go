package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write that finds the reader gone (EPIPE, however wrapped) ends watch
// cleanly; any other write error is the watch's error.
func TestWatchWriteErr(t *testing.T) {
	tests := []struct {
		err   error
		clean bool
	}{
		{syscall.EPIPE, true},
		{&fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}, true},
		{fmt.Errorf("encode: %w", &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}), true},
		{syscall.ENOSPC, false},
		{errors.New("short write"), false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			got := writeErr(tt.err)
			if tt.clean {
				assert.NoError(t, got)
			} else {
				assert.ErrorIs(t, got, tt.err)
			}
		})
	}
}

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
