package procgroup_test

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() { awaitGuard = awaitGuardLinux }

// awaitGuardLinux returns once a /bin/sh (the guard) has joined group pgid,
// or after 20 s.
func awaitGuardLinux(pgid int) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == pgid {
				continue
			}
			if g, err := unix.Getpgid(pid); err != nil || g != pgid {
				continue
			}
			if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.HasPrefix(cmd, []byte("/bin/sh\x00")) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Nor when the owner is killed in the grace between Terminate and Kill:
// a head that ignores SIGTERM is still ended by the guard, which the
// group's SIGTERM does not end.
func TestGroupDiesWithItsOwnerAfterTerminate(t *testing.T) {
	killOwnerThenAwaitTree(t, "owner-terminates", 1)
}
