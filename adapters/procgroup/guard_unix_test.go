//go:build linux || darwin

package procgroup_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/procgroup"
)

func init() {
	// As "owner", stopped right after the head started, before Start
	// returned, until the test kills it there.
	helpers["owner-dies-at-start"] = func() {
		procgroup.OnStarted(func(pid int) {
			fmt.Println(pid)
			time.Sleep(time.Minute)
		})
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=parent-stays")
		cmd.Stdout = os.Stdout
		_, _ = procgroup.Start(cmd)
		os.Exit(2)
	}
	// The same, with a guard that has not yet said it is ready when the
	// owner is killed.
	helpers["owner-dies-before-its-guard-is-ready"] = func() {
		procgroup.PauseGuard("2")
		helpers["owner-dies-at-start"]()
	}
}

// A group outlives nothing: when the process that started it is killed
// with SIGKILL (no chance to end the group itself), the group's guard ends
// the whole tree, grandchild included.
func TestGroupDiesWithItsOwner(t *testing.T) {
	killOwnerThenAwaitTree(t, "owner", 2)
}

// Nor when the owner is killed in the grace between Terminate and Kill:
// a head that ignores SIGTERM is still ended by the guard, which the
// group's SIGTERM does not end.
func TestGroupDiesWithItsOwnerAfterTerminate(t *testing.T) {
	killOwnerThenAwaitTree(t, "owner-terminates", 1)
}

// Nor when the owner is killed the moment the command has started, before
// Start returns: the guard is there first (it used to start after the
// command, and an owner killed in between left the command running).
func TestGroupDiesWithItsOwnerKilledAsItStarts(t *testing.T) {
	killOwnerThenAwaitTree(t, "owner-dies-at-start", 2)
}

// Nor when the owner is killed before its guard has written the line that
// says it is ready: the guard's write then finds no reader (it used to die
// of SIGPIPE there, and leave the command running without a parent).
func TestGroupDiesWithItsOwnerKilledBeforeItsGuardIsReady(t *testing.T) {
	killOwnerThenAwaitTree(t, "owner-dies-before-its-guard-is-ready", 2)
}

// killOwnerThenAwaitTree starts the helper mode that owns a group, reads
// the n pids its tree prints, kills the owner with SIGKILL and checks that
// the tree ends.
func killOwnerThenAwaitTree(t *testing.T, mode string, n int) {
	owner := exec.Command(os.Args[0])
	owner.Env = append(os.Environ(), helperEnv+"="+mode)
	// A pipe of our own: StdoutPipe's read end would be closed by Wait.
	out, w, err := os.Pipe()
	require.NoError(t, err)
	defer out.Close()
	owner.Stdout = w
	require.NoError(t, owner.Start())
	require.NoError(t, w.Close())
	r := bufio.NewReader(out)
	var pids []int
	for range n { // the head's pid and any grandchild's, in either order
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	t.Cleanup(func() {
		for _, p := range pids {
			_ = unix.Kill(-p, unix.SIGKILL)
			_ = unix.Kill(p, unix.SIGKILL)
		}
	})
	require.NoError(t, owner.Process.Kill())
	_ = owner.Wait()
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r)
		close(eof)
	}()
	assert.True(t, ended(t, eof), "the group (pids %v) outlived its owner's SIGKILL", pids)
}
