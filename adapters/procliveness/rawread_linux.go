package procliveness

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/internal/dirents"
)

// The few files a read of the registries takes from /proc and /etc (our
// pid domain, a record's process's stat, the mount table, the process
// root's listing) are read with plain system calls, not through an
// *os.File: a process's first *os.File sets up the runtime's poller and a
// finalizer, which cost a `list` about as much as the reads themselves
// (docs/PERFORMANCE.md).

// readSmall returns the content of the file at path, at most max bytes
// (more is cut). Its errors are os.ReadFile's: a *fs.PathError ("open" or
// "read") wrapping the errno.
func readSmall(path string, max int) ([]byte, error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, min(max, 4096))
	for len(buf) < max {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):min(cap(buf), max)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// listPIDs lists the numeric names of the process root (at most
// MaxTableProcs: whole is false when there are more), in directory order.
func listPIDs(root string) (pids []int, whole bool, err error) {
	whole = true
	err = dirents.Walk(root, func(name []byte) bool {
		if pid, ok := pidName(name); ok {
			if len(pids) >= MaxTableProcs {
				whole = false
				return false
			}
			pids = append(pids, pid)
		}
		return true
	})
	if err != nil {
		return nil, false, err
	}
	return pids, whole, nil
}

// pidName is the pid a /proc entry's name spells (decimal, above 0), or
// false.
func pidName(name []byte) (int, bool) {
	pid := 0
	for _, c := range name {
		if c < '0' || c > '9' || pid > (1<<31-1)/10 {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return pid, pid > 0
}
