package fsregistry

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openWatch records which entries of some folders are opened, using the
// kernel's own inotify IN_OPEN events: a file we never open produces none,
// whatever its kind or mode (a FIFO, a mode-0000 file, a key file).
type openWatch struct {
	fd    int
	names map[int]string // watch descriptor -> folder
}

func watchOpens(t *testing.T, dirs ...string) *openWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	w := &openWatch{fd: fd, names: map[int]string{}}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN)
		require.NoError(t, err)
		w.names[wd] = d
	}
	return w
}

// opened drains the events so far and returns the base names opened in the
// watched folders ("" stands for a folder itself).
func (w *openWatch) opened(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	buf := make([]byte, 64*1024)
	for {
		n, err := unix.Read(w.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return out
		}
		require.NoError(t, err)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			var ev unix.InotifyEvent
			require.NoError(t, binary.Read(bytes.NewReader(buf[off:off+unix.SizeofInotifyEvent]), binary.NativeEndian, &ev))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			if ev.Mask&unix.IN_OPEN != 0 {
				out[string(bytes.TrimRight(name, "\x00"))] = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
