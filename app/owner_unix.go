//go:build unix

package app

import (
	"fmt"
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

// fileID returns what fi is on disk, "<device>:<inode>" ("" when unknown).
func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino)) //nolint:unconvert // Dev is uint32 on some platforms
	}
	return ""
}
