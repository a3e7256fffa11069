//go:build !linux

package fsregistry

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
)

// candidateNames lists dir's candidate record names (Candidate). Linux
// reads the folder with getdents64 (names_linux.go); elsewhere os.ReadDir
// does it, with its errors.
func candidateNames(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if Candidate(de.Name()) {
			names = append(names, de.Name())
		}
	}
	return names, nil
}

// folderSize is dir's size.
func folderSize(dir string) (int64, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// pidNames returns the names <pid>.json of pids that dir holds, one
// lookup each (names_linux.go says more).
func pidNames(dir string, pids []int) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	var names []string
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		name := strconv.Itoa(pid) + ".json"
		if _, err := os.Lstat(dir + string(os.PathSeparator) + name); !errors.Is(err, fs.ErrNotExist) {
			names = append(names, name)
		}
	}
	return names, nil
}

// hasCandidate reports whether dir holds a candidate record name.
func hasCandidate(dir string) (bool, error) {
	names, err := candidateNames(dir)
	return len(names) > 0, err
}
