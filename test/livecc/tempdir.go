//go:build unix

package livecc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TempRoot makes a short folder under os.TempDir() (a Unix socket path under
// it must fit ~104 bytes, which t.TempDir's long names do not), symlinks
// resolved, and removes it when the test ends: first it kills every process
// that still lives in it — whose working directory is inside it, or whose
// environment names a path inside it (HOME, TMPDIR, a config dir) — such as
// a harness's detached child (an updater's `npm install`) that the session's
// own teardown does not reach and that would write into the folder after it
// was removed; then it removes the folder. The test fails when the folder is
// still there afterwards.
func TempRoot(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("make temp root: %v", err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatalf("make temp root: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			pids := livingIn(dir)
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("processes %v still live in %s 10 s after SIGKILL", pids, dir)
				break
			}
			for _, pid := range pids {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove temp root: %v", err)
		}
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp root %s is still there after the test (%v)", dir, err)
		}
	})
	return dir
}

// livingIn returns the pids, other than ours, of processes that are not
// zombies and whose working directory is dir or inside it, or whose
// environment holds a value that is a path inside dir.
func livingIn(dir string) []int {
	des, _ := os.ReadDir("/proc")
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		proc := "/proc/" + de.Name()
		if cwd, err := os.Readlink(proc + "/cwd"); err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			pids = append(pids, pid)
			continue
		}
		env, _ := os.ReadFile(proc + "/environ")
		for _, kv := range bytes.Split(env, []byte{0}) {
			if _, v, ok := bytes.Cut(kv, []byte("=")); ok && (string(v) == dir || bytes.HasPrefix(v, []byte(dir+"/"))) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
