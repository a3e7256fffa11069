//go:build linux

package procliveness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/test/testproc"
)

func TestGone(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		killErr error
		want    bool
	}{
		{"no such process", 4652, unix.ESRCH, true},
		{"alive", 4652, nil, false},
		{"alive, not ours", 4652, unix.EPERM, false},
		{"odd error", 4652, unix.EINVAL, false},
		{"no pid", 0, unix.ESRCH, false},
		{"negative pid", -1, unix.ESRCH, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			c := New(WithKill(func(int) error { called = true; return tc.killErr }))
			assert.Equal(t, []bool{tc.want}, c.Gone([]int{tc.pid}))
			assert.Equal(t, tc.pid > 0, called, "kill called for pid %d", tc.pid)
		})
	}
}

// listedRoot is a fake process root whose self names self and whose
// mountinfo mounts it as a proc file system with options opts, holding a
// folder for each of pids.
func listedRoot(t *testing.T, self int, fstype, opts string, pids ...int) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Symlink(strconv.Itoa(self), filepath.Join(root, "self")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, strconv.Itoa(self)), 0o755))
	mountinfo := fmt.Sprintf("21 26 0:20 / %s rw,relatime - tmpfs tmpfs rw\n"+
		"22 26 0:21 / %s rw,nosuid,nodev,noexec,relatime shared:13 - %s %s %s\n"+
		"23 22 0:22 / %s/sys ro,relatime - proc proc rw,hidepid=invisible\n", root, root, fstype, fstype, opts, root)
	require.NoError(t, os.WriteFile(filepath.Join(root, strconv.Itoa(self), "mountinfo"), []byte(mountinfo), 0o644))
	for _, pid := range pids {
		require.NoError(t, os.MkdirAll(filepath.Join(root, strconv.Itoa(pid)), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys"), 0o755))
	return root
}

// batch is n pids from 1000 up; the even ones are listedPIDs.
func batch(n int) (pids, listedPIDs []int) {
	for i := range n {
		pids = append(pids, 1000+i)
		if i%2 == 0 {
			listedPIDs = append(listedPIDs, 1000+i)
		}
	}
	return pids, listedPIDs
}

// A batch of pids is answered from one listing of the process root: a pid
// it lists is not gone, one it does not list is gone, and no kill is sent.
// Fewer pids are asked with kill each.
func TestGoneAnswersABatchFromOneListing(t *testing.T) {
	pids, listed := batch(ListedBatch)
	root := listedRoot(t, os.Getpid(), "proc", "rw", listed...)
	kills := 0
	c := New(WithProcRoot(root), WithKill(func(int) error { kills++; return nil }))

	gone := c.Gone(pids)
	require.Len(t, gone, len(pids))
	for i, pid := range pids {
		assert.Equal(t, pid%2 == 1, gone[i], "pid %d", pid)
	}
	assert.Zero(t, kills, "a batch sends no kill")

	assert.Equal(t, make([]bool, ListedBatch-1), c.Gone(pids[:ListedBatch-1]), "fewer pids: kill says alive")
	assert.Equal(t, ListedBatch-1, kills)
}

// Each call lists afresh: a process that started after one call's listing
// is in the next one's.
func TestGoneListsAfreshEachCall(t *testing.T) {
	pids, listed := batch(2 * ListedBatch)
	root := listedRoot(t, os.Getpid(), "proc", "rw", listed...)
	c := New(WithProcRoot(root), WithKill(func(int) error { t.Error("kill sent"); return nil }))
	late := pids[1]
	require.True(t, c.Gone(pids)[1])
	require.NoError(t, os.Mkdir(filepath.Join(root, strconv.Itoa(late)), 0o755))
	assert.False(t, c.Gone(pids)[1], "pid %d started after the first listing", late)
}

// The listing is used only when it names every process kill finds: a root
// of another pid namespace (its self is not our pid), one whose
// processes are hidden (hidepid), or one that is no proc mount is not
// listed; each pid is asked with kill(pid, 0) instead. So are the pids of
// a batch smaller than the number of processes (the root's link count).
func TestGoneKillsEachWhenTheListingCannotTell(t *testing.T) {
	pids, listed := batch(2 * ListedBatch)
	for _, tc := range []struct {
		name   string
		self   int
		fstype string
		opts   string
		listed bool
	}{
		{"ours", os.Getpid(), "proc", "rw", true},
		{"hidepid=1 lists all", os.Getpid(), "proc", "rw,hidepid=1", true},
		{"hidepid=noaccess lists all", os.Getpid(), "proc", "rw,hidepid=noaccess", true},
		{"hidepid=off lists all", os.Getpid(), "proc", "rw,hidepid=off", true},
		{"another pid namespace", os.Getpid() + 1, "proc", "rw", false},
		{"hidepid=2", os.Getpid(), "proc", "rw,hidepid=2", false},
		{"hidepid=invisible", os.Getpid(), "proc", "rw,hidepid=invisible,gid=10", false},
		{"hidepid=ptraceable", os.Getpid(), "proc", "rw,hidepid=ptraceable", false},
		{"not a proc mount", os.Getpid(), "tmpfs", "rw", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := listedRoot(t, tc.self, tc.fstype, tc.opts, listed...)
			kills := 0
			c := New(WithProcRoot(root), WithKill(func(int) error { kills++; return unix.EPERM }))
			gone := c.Gone(pids)
			if tc.listed {
				assert.Zero(t, kills)
				assert.True(t, gone[1])
				return
			}
			assert.Equal(t, len(pids), kills, "kill for each pid")
			assert.Equal(t, make([]bool, len(pids)), gone, "EPERM is not gone")
		})
	}

	t.Run("more processes than pids", func(t *testing.T) {
		many := make([]int, 0, 2*len(pids))
		for i := range 2 * len(pids) {
			many = append(many, 5000+i)
		}
		root := listedRoot(t, os.Getpid(), "proc", "rw", many...)
		kills := 0
		c := New(WithProcRoot(root), WithKill(func(int) error { kills++; return unix.ESRCH }))
		assert.Equal(t, []bool{true, true}, c.Gone(pids)[:2])
		assert.Equal(t, len(pids), kills, "a listing longer than the batch costs more than its kills")
	})
	t.Run("no self", func(t *testing.T) {
		root := listedRoot(t, os.Getpid(), "proc", "rw", listed...)
		require.NoError(t, os.Remove(filepath.Join(root, "self")))
		kills := 0
		c := New(WithProcRoot(root), WithKill(func(int) error { kills++; return unix.ESRCH }))
		assert.Equal(t, []bool{true, true}, c.Gone(pids)[:2])
		assert.Equal(t, len(pids), kills)
	})
	t.Run("not mounted", func(t *testing.T) {
		root := listedRoot(t, os.Getpid(), "proc", "rw", listed...)
		require.NoError(t, os.WriteFile(filepath.Join(root, strconv.Itoa(os.Getpid()), "mountinfo"), []byte("21 26 0:20 / / rw - ext4 /dev/root rw\n"), 0o644))
		kills := 0
		c := New(WithProcRoot(root), WithKill(func(int) error { kills++; return nil }))
		c.Gone(pids)
		assert.Equal(t, len(pids), kills)
	})
}

// On this machine's /proc: this process and its parent are not gone, a
// reaped child is, asked alone or in a batch (listed, where /proc lists
// every process, else killed each).
func TestGoneRealProcesses(t *testing.T) {
	dead := testproc.DeadPID(t)
	c := New()
	assert.Equal(t, []bool{false, false, true}, c.Gone([]int{os.Getpid(), os.Getppid(), dead}))

	pids := []int{os.Getpid(), os.Getppid(), dead}
	for len(pids) < ListedBatch {
		pids = append(pids, os.Getpid())
	}
	gone := c.Gone(pids)
	assert.Equal(t, []bool{false, false, true}, gone[:3])
	t.Logf("/proc lists every process: %v", listsEveryProcess("/proc"))
}

// Listed names every process of a listing that names them all, and none
// where Gone would kill each instead (the same roots as above).
func TestListed(t *testing.T) {
	_, listed := batch(ListedBatch)
	for _, tc := range []struct {
		name   string
		self   int
		fstype string
		opts   string
		ok     bool
	}{
		{"ours", os.Getpid(), "proc", "rw", true},
		{"another pid namespace", os.Getpid() + 1, "proc", "rw", false},
		{"hidepid=invisible", os.Getpid(), "proc", "rw,hidepid=invisible", false},
		{"not a proc mount", os.Getpid(), "tmpfs", "rw", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := listedRoot(t, tc.self, tc.fstype, tc.opts, listed...)
			pids, ok := New(WithProcRoot(root)).Listed()
			assert.Equal(t, tc.ok, ok)
			if !tc.ok {
				assert.Nil(t, pids)
				return
			}
			assert.ElementsMatch(t, append(slices.Clone(listed), tc.self), pids)
		})
	}
}

// On this machine's /proc: this process and a running child are listed,
// a reaped child is not; the count of processes is at least theirs.
func TestListedRealProcesses(t *testing.T) {
	if !listsEveryProcess("/proc") {
		t.Skip("this /proc does not list every process")
	}
	dead := testproc.DeadPID(t)
	child := testproc.Sleeper(t)
	c := New()
	pids, ok := c.Listed()
	require.True(t, ok)
	assert.Contains(t, pids, os.Getpid())
	assert.Contains(t, pids, child)
	assert.NotContains(t, pids, dead)
	assert.GreaterOrEqual(t, c.Processes(), 2)
}
