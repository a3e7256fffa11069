//go:build unix

package fleet

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// folderID is dir's device and inode ("DEV:INO"), "" when it cannot be
// read: a folder mounted over the same path elsewhere is another.
func folderID(dir string) string {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
