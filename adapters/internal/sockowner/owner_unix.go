//go:build unix

package sockowner

import (
	"os"
	"syscall"
)

// OwnerUID is the uid owning dir (/proc/<pid>: the process's), -1 when
// unknown.
func OwnerUID(dir string) int {
	fi, err := os.Stat(dir)
	if err != nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
