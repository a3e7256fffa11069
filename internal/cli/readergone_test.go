package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
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
