//go:build unix

package courierexec

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sweepOrphans removes, from tmp, the courier folders of peerctl processes
// that no longer exist: folders named privateDirPrefix + "<pid>-…" that
// are ours (not a link, a folder owned by our uid) and whose pid is gone
// (kill(pid, 0) says ESRCH). A peerctl killed with SIGKILL cannot remove its
// own; its courier's whole process group is ended by the group's guard
// (procgroup), and this removes what it left, Claude Code's session files
// of the courier included (unlinked, never opened). A folder whose pid
// runs, or that is another user's, is left alone; errors are ignored.
func sweepOrphans(tmp string) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	self, uid := os.Getpid(), os.Geteuid()
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), privateDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == self {
			continue
		}
		if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
			continue
		}
		path := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		_ = os.RemoveAll(path)
	}
}
