//go:build unix

package scriptedmodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// Live (PEERCTL_LIVE=1): real `claude -p` takes the stand-in for its model,
// offline and with no login: the run's result is the scripted text, and
// the request it sent carried the prompt.
func TestLiveClaudeTakesTheScriptedAnswer(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	srv := scriptedmodel.Start(t, func(r *scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Say("scripted answer: ünï")
	})
	root := livecc.NewRoot(t)
	cwd := filepath.Join(root, "proj")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "json", "--no-session-persistence")
	cmd.Dir = cwd
	cmd.Env = livecc.Env(filepath.Join(root, "config"), "HOME="+filepath.Join(root, "home"), "TMPDIR="+filepath.Join(root, "tmp"),
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY="+srv.Key())
	cmd.Stdin = strings.NewReader("the prompt, sent as is")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "claude -p\nstdout: %s\nstderr: %s", stdout.Bytes(), stderr.Bytes())
	var out struct {
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %s", stdout.Bytes())
	assert.False(t, out.IsError)
	assert.Equal(t, "scripted answer: ünï", out.Result)
	found := false
	for _, r := range srv.Requests() {
		for _, text := range r.UserTexts() {
			found = found || strings.Contains(text, "the prompt, sent as is")
		}
	}
	assert.True(t, found, "a request carried the prompt")
}
