package acceptance

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session killed and never reaped (a zombie) is reported died once; the
// registry changing afterwards does not bring it back as appeared.
func TestWatchZombieDiesOnce(t *testing.T) {
	config, sessions := catRegistry(t)
	sleeper := exec.Command("sleep", "1000")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := sleeper.Process.Pid
	catWriteJSON(t, sessions, catFile(pid), catRecord(t, pid, "zombie", ""))

	cmd := exec.Command(peerctlBin(t), "--config-dir", config, "watch", "--json")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev struct {
				Event string `json:"event"`
				PID   int    `json:"pid"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.PID == pid {
				events <- ev.Event
			}
		}
	}()
	next := func(what string) string {
		select {
		case e, ok := <-events:
			require.True(t, ok, "watch ended waiting for %s; stderr: %s", what, stderr.String())
			return e
		case <-time.After(bound):
			t.Fatalf("no event within %s for %s; stderr: %s", bound, what, stderr.String())
			return ""
		}
	}
	require.Equal(t, "appeared", next("start"))
	require.NoError(t, sleeper.Process.Kill()) // not reaped: a zombie
	require.Equal(t, "died", next("the kill"))

	// Touch the registry every 0.2 s for 3 s: nothing more about the zombie.
	other := filepath.Join(sessions, "touched.txt")
	for i := range 15 {
		require.NoError(t, os.WriteFile(other, []byte{byte(i)}, 0o600))
		select {
		case e := <-events:
			assert.Fail(t, "a zombie reported again", "event %q after the registry changed", e)
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
