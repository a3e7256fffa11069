package serve

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// A schema-2 request (command line and environment) becomes the order its
// flags and the settings' variables say (and the harnesses' carried
// settings, resolved from its environment: opencode's database); no other
// variable is kept.
func TestUpgradeV2KeepsTheSendNotTheEnvironment(t *testing.T) {
	old, err := json.Marshal(storedV2{
		Argv: []string{"--qwen-home", "/q", "send", "--json", "--transport", "socket", "--timeout", "9s", "--wait", "--durable=2h",
			"--key", "k", "--from", "ci", "--no-confirm", "--host", "box", "--", "proj-89", "-"},
		Env: []string{"CLAUDE_CONFIG_DIR=/c", "PEERCTL_CLAUDE=/bin/fake", "PEERCTL_HOST_TIMEOUT=5s", "PEERCTL_SSH=ssh -4",
			"OPENCODE_SERVER_PASSWORD=hunter2", "HOME=/home/x"},
	})
	require.NoError(t, err)
	got, err := upgradeV2(old)
	require.NoError(t, err)
	assert.NotContains(t, string(got), "hunter2")
	o, err := loadOrder(ports.OutboxMessage{Request: got, Address: "proj-89", Text: "hi", Key: "k", Host: "box"})
	require.NoError(t, err)
	assert.Equal(t, wire.SendOrder{Query: wire.SendQuery{Address: "proj-89", Text: "hi", Transport: "socket", From: "ci", Timeout: 9 * time.Second,
		ConfirmTimeout: o.Query.ConfirmTimeout, Wait: v2Wait, NoConfirm: true}, Host: "box", Durable: 2 * time.Hour, Key: "k",
		Settings: wire.Settings{Flags: map[string]string{"config-dir": "/c", "claude": "/bin/fake", "qwen-home": "/q",
			"opencode-db": "/home/x/.local/share/opencode/opencode.db"}, HostTimeout: 5 * time.Second, SSH: "ssh -4"}}, o)
	_, err = upgradeV2([]byte(`{"argv":[],"env":["A=b"]}`))
	assert.Error(t, err)
}
