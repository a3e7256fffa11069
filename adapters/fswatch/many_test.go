//go:build linux

package fswatch

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// procStatus reads one numeric field of /proc/self/status.
func procStatus(t *testing.T, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

func sleepers(t *testing.T, n int) []*exec.Cmd {
	t.Helper()
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = startSleeper(t)
	}
	return cmds
}

// Watching many live processes costs O(1) threads and one descriptor per
// process (plus a few), and every exit is reported.
func TestExitedManyProcesses(t *testing.T) {
	if _, err := pidfdOpen(os.Getpid()); err != nil {
		t.Skipf("no pidfd here (%v): the polling fallback is tested elsewhere", err)
	}
	const n = 500
	cmds := sleepers(t, n)
	x := &Exits{Poll: time.Hour} // a poll would take an hour: the pidfds must notice
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fdsBefore := openFDs(t)
	chans := make([]<-chan struct{}, n)
	for i, c := range cmds {
		chans[i] = x.Exited(ctx, c.Process.Pid, "")
	}
	// The most threads and descriptors seen over a second of watching (a
	// watch that blocks a thread per process builds them up as its
	// goroutines run).
	threads, fds := 0, 0
	for range 20 {
		threads, fds = max(threads, procStatus(t, "Threads")), max(fds, openFDs(t))
		time.Sleep(50 * time.Millisecond)
	}
	assert.Less(t, threads, 50, "threads while watching %d processes", n)
	assert.LessOrEqual(t, fds-fdsBefore, n+4, "descriptors while watching %d processes", n)
	for i, c := range cmds {
		select {
		case <-chans[i]:
			t.Fatalf("process %d reported ended while running", i)
		default:
		}
		require.NoError(t, c.Process.Kill())
		_ = c.Wait()
		select {
		case <-chans[i]:
		case <-time.After(bound):
			t.Fatalf("exit of process %d not noticed within %s", i, bound)
		}
	}
	// The set's goroutine ends and its descriptors close once nothing is watched.
	deadline := time.Now().Add(bound)
	for openFDs(t) > fdsBefore {
		require.True(t, time.Now().Before(deadline), "descriptors still open after every watched process ended")
		time.Sleep(10 * time.Millisecond)
	}
}

// Out of descriptors (EMFILE), a watch polls that pid instead of failing.
func TestExitedOutOfDescriptorsPolls(t *testing.T) {
	cmds := sleepers(t, 3)
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	low := lim
	low.Cur = uint64(openFDs(t)) // no descriptor left to open
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &low))
	x := &Exits{Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chans := make([]<-chan struct{}, len(cmds))
	for i, c := range cmds {
		chans[i] = x.Exited(ctx, c.Process.Pid, "")
	}
	fd, err := pidfdOpen(os.Getpid())
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	if err == nil {
		unix.Close(fd)
		t.Skip("the lowered limit did not bite")
	}
	for i, c := range cmds {
		require.NoError(t, c.Process.Kill())
		_ = c.Wait()
		select {
		case <-chans[i]:
		case <-time.After(bound):
			t.Fatalf("exit of process %d not noticed within %s", i, bound)
		}
	}
}
