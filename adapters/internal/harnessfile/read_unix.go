//go:build unix

package harnessfile

import (
	"errors"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Read reads the regular file at path, of at most max bytes, on the raw
// descriptor: lstat (a symlink is refused, never followed); open with
// O_NOFOLLOW|O_NONBLOCK (a symlink swapped in after lstat is refused, a
// FIFO swapped in does not block the open); fstat the open descriptor
// (what was opened must be a regular file under the cap); read until EOF,
// never past max. The modification time is lstat's (zero when lstat
// failed). A non-nil error is an *Error.
func Read(path string, max int64) ([]byte, time.Time, error) {
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil {
		return nil, time.Time{}, sysErr("stat", err)
	}
	mod := time.Unix(lst.Mtim.Unix())
	if p := check(fileType(uint32(lst.Mode)), lst.Size, max, "symlink, not followed"); p != nil {
		return nil, mod, p
	}
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, mod, sysErr("open", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, mod, sysErr("stat", err)
	}
	if p := check(fileType(uint32(st.Mode)), st.Size, max, "replaced while opened"); p != nil {
		return nil, mod, p
	}
	buf := make([]byte, 0, st.Size+1) // one byte more to see EOF (or growth) in the same read
	for int64(len(buf)) <= max {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):min(cap(buf), int(max)+1)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, mod, sysErr("read", err)
		case n == 0:
			return buf, mod, nil
		}
		buf = buf[:len(buf)+n]
	}
	return nil, mod, grew(max)
}

// fileType renders a stat mode's file type as os.FileMode does ("p---------").
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
