//go:build linux

package acceptance

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/test/testproc"
)

// `peerctl watch --json | head -1` on a quiet registry: once the reader has
// its line and closes its end, watch ends by itself with exit 0 (not at its
// next write, not by SIGPIPE), for a pipe and for a socket.
func TestWatchEndsWhenItsReaderCloses(t *testing.T) {
	pipe := func(t *testing.T) (r, w *os.File) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		return r, w
	}
	socket := func(t *testing.T) (r, w *os.File) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		return os.NewFile(uintptr(fds[0]), "reader"), os.NewFile(uintptr(fds[1]), "writer")
	}
	tests := []struct {
		name  string
		args  []string
		ends  func(t *testing.T) (r, w *os.File)
		first string // what the one line read holds
	}{
		{"json into a pipe", []string{"--json"}, pipe, `"event":"appeared"`},
		{"text into a pipe", nil, pipe, "appeared"},
		{"json into a socket", []string{"--json"}, socket, `"event":"appeared"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, sessions := catRegistry(t)
			pid, _ := testproc.KillableSleeper(t)
			catWriteJSON(t, sessions, catFile(pid), catRecord(t, pid, "quiet", ""))
			r, w := tt.ends(t)
			cmd := exec.Command(peerctlBin(t), append([]string{"--config-dir", config, "watch"}, tt.args...)...)
			cmd.Stdout = w
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			require.NoError(t, w.Close())

			line := make(chan string, 1)
			go func() {
				l, _ := bufio.NewReader(r).ReadString('\n')
				line <- l
			}()
			select {
			case l := <-line:
				require.Contains(t, l, tt.first)
			case <-time.After(bound):
				t.Fatalf("no first line within %s; stderr: %s", bound, stderr.String())
			}
			require.NoError(t, r.Close())

			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("watch ended with %v (exit %d); stderr: %s", err, ee.ExitCode(), stderr.String())
				}
				assert.NoError(t, err, "stderr: %s", stderr.String())
			case <-time.After(bound):
				t.Fatalf("watch did not end within %s of its reader closing on a quiet registry", bound)
			}
		})
	}
}

// A registry that cannot be read (the sessions folder is a file) ends watch
// with exit 1 and the read error on stderr.
func TestWatchExitsOneOnUnreadableRegistry(t *testing.T) {
	config := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(config, "sessions"), []byte("not a folder"), 0o600))
	cmd := exec.Command(peerctlBin(t), "--config-dir", config, "watch", "--json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	assert.Equal(t, 1, exitWithin(t, cmd, "watch on an unreadable registry"))
	assert.Contains(t, stderr.String(), "read registry")
}
