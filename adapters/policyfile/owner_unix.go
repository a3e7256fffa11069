//go:build unix

package policyfile

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid owning fi (its stat's st_uid).
func fileOwner(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}
