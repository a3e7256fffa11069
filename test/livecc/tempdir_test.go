//go:build unix

package livecc_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/test/livecc"
)

// TestTempRootOutlivesNothing: a detached process that keeps writing into
// a test's root (as a harness's updater does, from its own session so the
// tmux teardown does not reach it) is killed, and the root is gone after
// the test, not recreated behind its back.
func TestTempRootOutlivesNothing(t *testing.T) {
	var dir string
	var pids []int
	t.Run("session", func(t *testing.T) {
		dir = livecc.TempRoot(t, "lcc")
		for _, how := range []struct{ cwd, env string }{{dir, ""}, {"/", "HOME=" + filepath.Join(dir, "h")}} {
			cmd := exec.Command("sh", "-c", `while :; do mkdir -p "$0/npm-cache"; sleep 0.05; done`, dir)
			cmd.Dir = how.cwd
			cmd.Env = append(os.Environ(), how.env)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			require.NoError(t, cmd.Start())
			pids = append(pids, cmd.Process.Pid)
			go func() { _ = cmd.Wait() }() // reaped as soon as it dies
		}
	})
	for _, pid := range pids {
		assert.Eventually(t, func() bool { return errors.Is(unix.Kill(pid, 0), unix.ESRCH) }, 10*time.Second, 10*time.Millisecond, "pid %d outlived the test", pid)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	_, err := os.Lstat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "the root is gone")
}
