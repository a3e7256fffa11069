package fsregistry

import (
	"errors"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Fast paths. Each one handles the common case (a plain record file, a
// string without escapes, a number literal) with fewer system calls or
// allocations and gives exactly what the general path would; anything else
// goes to the general path, which alone words the problems.

// fastString returns the value of the JSON string literal raw when it
// needs no decoding (no escapes, valid UTF-8): what json.Unmarshal into a
// string gives. raw must be one valid JSON value (a json.RawMessage taken
// from a document that decoded).
func fastString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			if c == '\\' || !utf8.Valid(body) {
				return "", false
			}
			break
		}
	}
	return string(body), true
}

// fastNumber returns the text of the JSON number literal raw: what
// json.Unmarshal into a json.Number gives. raw must be one valid JSON value.
func fastNumber(raw []byte) (string, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return "", false
	}
	return string(raw), true
}

// errNotPlain sends a file to the general path.
var errNotPlain = errors.New("not a plain regular file")

// readPlain reads a regular file of at most limit bytes as readRegular
// does (lstat; open with O_NOFOLLOW|O_NONBLOCK; fstat; read) but on the raw
// descriptor, with no os.File, poller registration or buffer regrowth:
// about half the system calls. It returns errNotPlain, keeping nothing,
// whenever the file is anything else (a symlink, FIFO or folder, over the
// cap, unreadable, swapped or grown meanwhile), and readRegular then looks
// again and words the problem. Like readRegular it opens nothing that
// lstat did not show as a regular file within the cap.
func readPlain(path string, limit int64) ([]byte, time.Time, error) {
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil || lst.Mode&unix.S_IFMT != unix.S_IFREG || lst.Size > limit {
		return nil, time.Time{}, errNotPlain
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, time.Time{}, errNotPlain
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > limit {
		return nil, time.Time{}, errNotPlain
	}
	buf := make([]byte, 0, st.Size+1) // one byte more to see EOF (or growth) in the same read
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, time.Time{}, errNotPlain
		}
		if n == 0 {
			return buf, time.Unix(lst.Mtim.Unix()), nil // readRegular's mtime is lstat's too
		}
		buf = buf[:len(buf)+n]
	}
	return nil, time.Time{}, errNotPlain // grew over the cap while read
}
