package procgroup_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/procgroup"
)

// The test binary doubles as the processes of a tree: with helperEnv set to
// "parent" it starts itself again as a "sleeper" grandchild that shares its
// stdout, prints the grandchild's pid and then sleeps ("parent-stays") or
// exits ("parent"). The grandchild sleeps for a minute. The read end of
// that stdout sees EOF only once every process of the tree has ended.
const helperEnv = "PROCGROUP_TEST_HELPER"

// helpers are further modes, by name, that only some systems build.
var helpers = map[string]func(){}

func TestMain(m *testing.M) {
	if h := helpers[os.Getenv(helperEnv)]; h != nil {
		h()
	}
	switch os.Getenv(helperEnv) {
	case "sleeper":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "owner":
		// Starts a "parent-stays" tree in a group, as peerctl starts a
		// courier, prints the head's pid and then the grandchild's (the
		// tree shares this stdout), and waits to be killed.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=parent-stays")
		cmd.Stdout = os.Stdout
		if _, err := procgroup.Start(cmd); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	case "owner-terminates":
		// As "owner", with a head that ignores SIGTERM: it asks the group
		// to end (Terminate), prints the head's pid, then waits to be
		// killed before it could follow with Kill.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=deaf")
		cmd.Stdout = os.Stdout
		ready, err := cmd.StderrPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		g, err := procgroup.Start(cmd)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_, _ = bufio.NewReader(ready).ReadString('\n') // SIGTERM is ignored
		g.Terminate()
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	case "deaf":
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "ready")
		time.Sleep(time.Minute)
		os.Exit(0)
	case "parent", "parent-stays":
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), helperEnv+"=sleeper")
		gc.Stdout = os.Stdout
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(gc.Process.Pid)
		if os.Getenv(helperEnv) == "parent-stays" {
			time.Sleep(time.Minute)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tree starts the helper tree in a group and returns it, the grandchild's
// pid and a channel closed when every writer of the shared stdout is gone.
func tree(t *testing.T, mode string) (*procgroup.Group, *exec.Cmd, int, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	g, err := procgroup.Start(cmd)
	require.NoError(t, err)
	t.Cleanup(func() {
		g.Kill()
		_ = cmd.Wait()
		g.Close()
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	require.NoError(t, err, "the helper prints its grandchild's pid")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r)
		close(eof)
	}()
	return g, cmd, pid, eof
}

// ended waits (bounded, so a failing test ends) for the tree to be gone.
func ended(t *testing.T, eof <-chan struct{}) bool {
	t.Helper()
	select {
	case <-eof:
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}

func TestKillEndsTheWholeTree(t *testing.T) {
	g, cmd, _, eof := tree(t, "parent-stays")
	g.Kill()
	assert.True(t, ended(t, eof), "the grandchild still holds stdout after Kill")
	_ = cmd.Wait()
}

func TestTerminateEndsTheWholeTree(t *testing.T) {
	g, cmd, _, eof := tree(t, "parent-stays")
	g.Terminate()
	assert.True(t, ended(t, eof), "the grandchild still holds stdout after Terminate")
	_ = cmd.Wait()
}

func TestAwaitExitThenKillEndsWhatTheHeadLeft(t *testing.T) {
	g, cmd, _, eof := tree(t, "parent")
	g.AwaitExit()
	select {
	case <-eof:
		t.Fatal("precondition: the grandchild outlives its parent until the group is killed")
	default:
	}
	g.Kill()
	assert.True(t, ended(t, eof), "the grandchild still holds stdout after AwaitExit and Kill")
	require.NoError(t, cmd.Wait(), "the head exited 0 on its own")
}

func TestStartTwiceRefused(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=parent")
	cmd.Stdout = io.Discard
	g, err := procgroup.Start(cmd)
	require.NoError(t, err)
	_, err = procgroup.Start(cmd)
	assert.ErrorIs(t, err, procgroup.ErrNotStarted)
	g.Kill()
	_ = cmd.Wait()
	g.Close()
}

// Run leaves nothing behind: not what the head left when it exited on its
// own, not the tree it ends when ctx runs out (the error says so).
func TestRunLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		timeout time.Duration
	}{{"parent", time.Minute}, {"parent-stays", 300 * time.Millisecond}} {
		t.Run(tc.mode, func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer r.Close()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode)
			cmd.Stdout = w
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			err = procgroup.Run(ctx, cmd)
			require.NoError(t, w.Close())
			if tc.mode == "parent" {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			eof := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, r)
				close(eof)
			}()
			assert.True(t, ended(t, eof), "a process of the tree outlived Run")
		})
	}
}
