//go:build !linux

package fsregistry

import "os"

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
