//go:build linux

package fsregistry

import (
	"bytes"
	"errors"
	"io/fs"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntBuf is the getdents64 buffer: 8 KiB holds about 170 entries of a
// registry (a record's name and its .key file's), so a folder of 1,000
// sessions is listed in a dozen calls. A larger buffer saves calls of a
// microsecond each but costs page faults: a fresh process zeroes and
// touches every page of it for the first time (64 KiB: 16 pages; `list` of
// 1,000 records made 20 to 60 fewer page faults of about 500 with 8 KiB).
const direntBuf = 8 << 10

// candidateNames lists dir's candidate record names (Candidate), in
// directory order. It reads the folder with
// getdents64 itself rather than os.ReadDir: no fs.DirEntry and no string is
// made for the entries it drops (the *.key files, half of a registry), and
// nothing is sorted here. The errors are os.ReadDir's: a *fs.PathError
// ("open" or "readdirent") wrapping the errno, so fs.ErrNotExist and
// ENOTDIR (a file in the folder's place) read as before.
func candidateNames(dir string) ([]string, error) {
	fd, err := openDir(dir)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, direntBuf)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		names = appendCandidates(names, buf[:n])
	}
}

func openDir(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// appendCandidates walks one getdents64 result (struct linux_dirent64:
// d_ino u64, d_off i64, d_reclen u16, d_type u8, then the NUL-terminated
// name; getdents64(2)) and appends the candidate names.
func appendCandidates(names []string, b []byte) []string {
	const nameOff = int(unsafe.Offsetof(unix.Dirent{}.Name))
	const reclenOff = int(unsafe.Offsetof(unix.Dirent{}.Reclen))
	for len(b) >= nameOff {
		reclen := int(*(*uint16)(unsafe.Pointer(&b[reclenOff])))
		if reclen < nameOff || reclen > len(b) {
			return names
		}
		name := b[nameOff:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[reclen:]
		// The cheap test first, on the bytes: most entries that are not
		// candidates (the *.key files) end in ".key".
		if !bytes.HasSuffix(name, []byte(".json")) {
			continue
		}
		s := string(name)
		if Candidate(s) {
			names = append(names, s)
		}
	}
	return names
}

// folderSize is dir's size (st_size), following a symbolic link as a
// listing does.
func folderSize(dir string) (int64, error) {
	var st unix.Stat_t
	for {
		err := unix.Stat(dir, &st)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "stat", Path: dir, Err: err}
		}
		return st.Size, nil
	}
}

// pidNames returns the names <pid>.json of pids that dir holds (whatever
// each is: a record, a folder, a symbolic link, as a listing would name
// it), one lookup each, relative to the folder opened once. The errors
// are candidateNames' for the folder; a name that cannot be looked up for
// another reason than its absence is returned, to get its verdict.
func pidNames(dir string, pids []int) ([]string, error) {
	fd, err := openDir(dir)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var (
		names []string
		st    unix.Stat_t
		buf   [24]byte
	)
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		name := string(append(strconv.AppendInt(buf[:0], int64(pid), 10), ".json"...))
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		for errors.Is(err, unix.EINTR) {
			err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		if !errors.Is(err, unix.ENOENT) {
			names = append(names, name)
		}
	}
	return names, nil
}

// hasCandidate reports whether dir holds a candidate record name, listing
// it only up to the first one.
func hasCandidate(dir string) (bool, error) {
	fd, err := openDir(dir)
	if err != nil {
		return false, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, direntBuf)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return false, nil
		}
		if len(appendCandidates(nil, buf[:n])) > 0 {
			return true, nil
		}
	}
}
