package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/peerctl/peerctl/adapters/fsregistry" // Claude Code's spec: the far sides here print cc-peer endpoints
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// TestReadDocIsExact: a far side's document with a key this build does
// not print, or a refusal document, is not taken as a listing; a failure
// without a refusal is its message, escaped, and its exit code when
// peerctl's table has it.
func TestReadDocIsExact(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	var rows []Session
	err = ReadDoc(d, ports.RemoteResult{Stdout: []byte(`[{"sessionId":"x","SessionID":"y"}]`)}, &rows)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
	assert.Contains(t, r.Detail, "fix: peerctl hosts install box")

	err = ReadDoc(d, ports.RemoteResult{Code: 3, Stdout: []byte(`{"ok":false,"refusal":{"reason":"not_live","detail":"no such","exitCode":3}}`)}, &rows)
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
	assert.Equal(t, "on box: no such", r.Detail, "a far refusal names its host (issue 27)")

	for code, want := range map[int]int{99: 1, -1: 1, 3: 3, 12: 12} {
		err = ReadDoc(d, ports.RemoteResult{Code: code, Stderr: []byte("peerctl: \x1b[2Jboom\nRun 'peerctl list --help' for usage.\n")}, &rows)
		var fe *FarError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, want, fe.Code, "exit %d", code)
		assert.Equal(t, `box: \x1b[2Jboom`, fe.Message)
	}
}

// TestHostEndpoint: a far side's endpoint is put in its host's ssh:v1:
// form; one that names yet another machine, or is none, is refused.
func TestHostEndpoint(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	got, err := HostEndpoint(d, "cc-peer:v1:7:proj:/tmp/s.sock")
	require.NoError(t, err)
	assert.Equal(t, "ssh:v1:box:cc-peer:v1:7:proj:/tmp/s.sock", got)
	got, err = HostEndpoint(d, "")
	require.NoError(t, err)
	assert.Empty(t, got)
	for _, bad := range []string{"ssh:v1:other:cc-peer:v1:7:proj:/tmp/s.sock", "not-an-endpoint\x1b"} {
		_, err := HostEndpoint(d, bad)
		assert.Error(t, err, bad)
		if err != nil {
			assert.NotContains(t, err.Error(), "\x1b")
		}
	}
}
