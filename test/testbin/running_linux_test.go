package testbin

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fake claude still running when the tests end is named, killed with
// its group, and fails the package; none running is no error.
func TestLeftBehindNamesAndKillsAFakeClaude(t *testing.T) {
	bin := Build(t, FakeClaude)
	require.NoError(t, leftBehind(bin, time.Second), "nothing runs yet")
	cmd := exec.Command(bin, "-p")
	cmd.Env = []string{"FAKECLAUDE_SCENARIO=hang", "PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })

	err = leftBehind(bin, 300*time.Millisecond)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)+" (parent "+strconv.Itoa(os.Getpid())+"; tests' folders: "+t.Name()+"): "+bin+" -p", "names the test whose folder it has")
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the fake claude still runs after leftBehind")
	}
}
