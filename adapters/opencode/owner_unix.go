//go:build unix

package opencode

import (
	"os"
	"syscall"
)

// owner is the uid owning the directory (-1 when unknown).
func owner(dir string) int {
	fi, err := os.Stat(dir)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func getuid() int { return os.Getuid() }
