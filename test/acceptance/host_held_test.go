//go:build unix

package acceptance

// A send over ssh that the far side's trust policy holds (its entrance:
// host) is kept in the far side's outbox, and the sender reads that
// receipt as a far side's: exit 0, outcome awaiting_approval, the
// message's id there, the rule, its host.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
)

func TestHostSendHeldThereIsKeptThere(t *testing.T) {
	w := newPolicyServeWorld(t, []string{"--from", "host", "--to", "*", "hold"})
	bin := t.TempDir()
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(bin, "peerctl")))
	w.more = append(w.more, "PEERCTL_SSH="+testbin.Build(t, testbin.FakeSSH), "FAKESSH_RECORD="+t.TempDir())
	w.startServe(t)
	env := append(w.env(t), "PATH="+bin+":"+os.Getenv("PATH"))
	r := catRun(t, w.sessions, runOpts{Env: env}, "send", "--host", "box", "--json", "--confirm-timeout", "300ms", w.id, "held over there")
	require.Equal(t, 0, r.Code, "a held send is kept there: exit 0; stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	var got heldReceipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "%s", r.Stdout)
	assert.Equal(t, "awaiting_approval", got.Outcome)
	assert.Equal(t, "awaiting_approval", got.Outbox.State)
	assert.Equal(t, "rule 1: hold from=host:* to=*", got.Outbox.Rule)
	assert.Equal(t, "host", got.Sender.Entrance)
	assert.Contains(t, string(r.Stdout), `"host": "box"`)
	assert.Equal(t, "awaiting_approval", w.show(t, got.Outbox.ID).State)
	assert.Empty(t, w.listener.Frames(), "nothing reached the session")

	r = catRun(t, w.sessions, runOpts{Env: env}, "send", "--host", "box", "--confirm-timeout", "300ms", w.id, "held too")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), `is held by that machine's trust policy (rule 1: hold from=host:* to=*)`)
}
