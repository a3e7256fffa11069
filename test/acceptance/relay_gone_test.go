//go:build unix

package acceptance

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneReplier is a registry with one addressable session, "one", whose
// socket answers "pong: <text>"; the replier counts what reached it.
func oneReplier(t *testing.T) (config string, r *replier) {
	t.Helper()
	config, sessions := catRegistry(t)
	sock := filepath.Join(catSocketDir(t), "one.sock")
	catWriteJSON(t, sessions, catFile(os.Getpid()), catRecord(t, os.Getpid(), "one", sock))
	return config, startReplier(t, sock, "one", pong)
}

func (r *replier) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// A relay whose reader has gone (`peerctl relay | head -1` once head has
// exited) sends nothing more: each answer would be lost, and a host that
// retries would deliver twice. It exits non-zero and says why on stderr.
func TestRelayStopsWhenItsReaderIsGone(t *testing.T) {
	config, rep := oneReplier(t)
	bin := peerctlBin(t) // built before the bound starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config-dir", config, "relay")
	cmd.Env = fakeEnv(t, "sent")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = outW
	require.NoError(t, cmd.Start())
	outW.Close()
	ready, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, ready, `"type":"ready"`)
	require.NoError(t, outR.Close()) // the reader goes away, as head does
	for i := range 8 {
		_, err := fmt.Fprintf(stdin, `{"id":%d,"to":"one","text":"m%d"}`+"\n", i, i)
		if err != nil {
			break // the relay stopped reading: what this test wants
		}
	}
	_ = stdin.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	assert.Equal(t, 1, ee.ExitCode(), "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "stdout")
	assert.Empty(t, rep.received(), "nothing is sent once the answers cannot be written")
}

// A relay started with stdout closed (Go puts /dev/null in its place, so
// every answer would vanish) refuses to start; nothing is sent.
func TestRelayRefusesAClosedStdout(t *testing.T) {
	config, rep := oneReplier(t)
	for _, redirect := range []string{">&-", ">/dev/null"} {
		t.Run(redirect, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", `printf '%s\n' '{"id":1,"to":"one","text":"m"}' | "$0" --config-dir "$1" relay `+redirect, peerctlBin(t), config)
			cmd.Env = fakeEnv(t, "sent")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
			assert.Equal(t, 2, ee.ExitCode(), "stderr: %s", stderr.String())
			assert.Contains(t, stderr.String(), "stdout")
			assert.Empty(t, rep.received())
		})
	}
}
