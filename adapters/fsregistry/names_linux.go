//go:build linux

package fsregistry

import (
	"bytes"
	"errors"
	"io/fs"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/internal/dirents"
)

// candidateNames lists dir's candidate record names (Candidate), in
// directory order, with dirents.Walk: no string is made for the entries it
// drops (the *.key files, half of a registry), and nothing is sorted here.
// The errors are os.ReadDir's.
func candidateNames(dir string) ([]string, error) {
	var names []string
	err := dirents.Walk(dir, func(name []byte) bool {
		if s, ok := candidate(name); ok {
			names = append(names, s)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// candidate is name as a string when it is a candidate record name. The
// cheap test first, on the bytes: most entries that are not candidates
// (the *.key files) end in ".key".
func candidate(name []byte) (string, bool) {
	if !bytes.HasSuffix(name, []byte(".json")) {
		return "", false
	}
	s := string(name)
	return s, Candidate(s)
}

func openDir(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
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
	found := false
	err := dirents.Walk(dir, func(name []byte) bool {
		_, found = candidate(name)
		return !found
	})
	return found, err
}
