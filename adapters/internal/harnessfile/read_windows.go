package harnessfile

import (
	"io"
	"os"
	"time"
)

// Read reads the regular file at path, of at most max bytes, without
// following links: lstat (a symlink or junction is refused), open, stat
// the open file and check it is the file lstat saw (os.SameFile: volume
// serial and file index) and regular under the cap, read at most max+1
// bytes. Windows has no FIFOs to block on in a folder. The modification
// time is lstat's. A non-nil error is an *Error.
func Read(path string, max int64) ([]byte, time.Time, error) {
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, time.Time{}, sysErr("stat", err)
	}
	mod := lst.ModTime()
	if p := check(lst.Mode(), lst.Size(), max, "symlink, not followed"); p != nil {
		return nil, mod, p
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, mod, sysErr("open", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, mod, sysErr("stat", err)
	}
	if !os.SameFile(lst, st) {
		return nil, mod, &Error{text: "replaced while opened"}
	}
	if p := check(st.Mode(), st.Size(), max, "replaced while opened"); p != nil {
		return nil, mod, p
	}
	buf, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, mod, sysErr("read", err)
	}
	if int64(len(buf)) > max {
		return nil, mod, grew(max)
	}
	return buf, mod, nil
}
