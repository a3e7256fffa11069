//go:build unix

package fsregistry

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/domain"
)

// readRegular reads a regular file of at most MaxRecordBytes without
// following symlinks or blocking, on the raw descriptor (lstat; open with
// O_NOFOLLOW|O_NONBLOCK, so a symlink swapped in after lstat, or a FIFO,
// cannot make us follow or block; fstat; one read sized from fstat), and
// words why a file cannot be used. The modification time is lstat's.
func readRegular(path string) ([]byte, time.Time, *fileProblem) {
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil {
		return nil, time.Time{}, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("stat: %v", err)}
	}
	mod := time.Unix(lst.Mtim.Unix())
	if p := notRegular(lst, "symlink, not followed"); p != nil {
		return nil, mod, p
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("open: %v", err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("stat: %v", err)}
	}
	if p := notRegular(st, "replaced while opened"); p != nil {
		return nil, mod, p
	}
	buf := make([]byte, 0, st.Size+1) // one byte more to see EOF (or growth) in the same read
	for int64(len(buf)) <= MaxRecordBytes {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("read: %v", err)}
		case n == 0:
			return buf, mod, nil
		}
		buf = buf[:len(buf)+n]
	}
	return nil, mod, &fileProblem{domain.VerdictMalformed, fmt.Sprintf("grew over the %d-byte cap while read", MaxRecordBytes)}
}

// notRegular words why st is not a regular file within the size cap; a
// symlink gets the given words.
func notRegular(st unix.Stat_t, symlink string) *fileProblem {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &fileProblem{domain.VerdictUnreadable, symlink}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("not a regular file (%s)", fileType(uint32(st.Mode)))}
	case st.Size > MaxRecordBytes:
		return &fileProblem{domain.VerdictMalformed, fmt.Sprintf("%d bytes, over the %d-byte cap; not read", st.Size, MaxRecordBytes)}
	}
	return nil
}

// fileType renders a stat mode's file type as os.FileMode does ("d---------").
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
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
