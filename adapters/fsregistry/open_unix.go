package fsregistry

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readNoFollow opens path with O_NOFOLLOW|O_NONBLOCK (so a symlink swapped
// in after Lstat, or a FIFO, cannot make us follow or block), checks it is
// still a regular file, and reads at most limit+1 bytes.
func readNoFollow(path string, limit int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}
