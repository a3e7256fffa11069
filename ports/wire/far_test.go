package wire

import (
	"strings"
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

// Agrees: an answer for another session than the call named is said so,
// naming both; one the far side could have resolved passes.
func TestAgrees(t *testing.T) {
	const id, other = "26df9a5b-d23c-4223-a45d-b9ec61fda652", "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	ep := "cc-peer:v1:4652:proj-89:/tmp/s.sock"
	mine := Named{Harness: "claude-code", Endpoint: ep, PID: 4652, SessionID: id, Name: "proj-89"}
	for _, address := range []string{id, "proj-89", "26df9a5b", ep} {
		assert.NoError(t, Agrees(address, mine), address)
	}
	assert.NoError(t, Agrees(ep, Named{PID: 4652, SessionID: id, Name: "proj-89"}), "a relay receipt says no endpoint or harness")
	for name, tc := range map[string]struct {
		address string
		s       Named
	}{
		"another id":       {id, Named{PID: 5031, SessionID: other, Name: "proj-89"}},
		"another name":     {"proj-89", Named{PID: 5031, SessionID: other, Name: "proj-90"}},
		"another prefix":   {"26df9a5b", Named{PID: 5031, SessionID: other, Name: "x"}},
		"another pid":      {ep, Named{PID: 4653, SessionID: id, Name: "proj-89"}},
		"another endpoint": {ep, Named{Endpoint: "cc-peer:v1:4652:proj-89:/tmp/t.sock", PID: 4652, SessionID: id, Name: "proj-89"}},
		"another harness":  {ep, Named{Harness: "qwen-code", PID: 4652, SessionID: id, Name: "proj-89"}},
		"no session id":    {id, Named{PID: 1}},
	} {
		err := Agrees(tc.address, tc.s)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "not for the one asked for, "+tc.address, name)
		if tc.s.SessionID != "" {
			assert.Contains(t, err.Error(), "session "+tc.s.SessionID, name)
		} else {
			assert.Contains(t, err.Error(), "a session with no id", name)
			assert.NotContains(t, err.Error(), "session  ", name)
		}
	}
	err := Agrees(id, Named{SessionID: "x\x1b[2J", Name: "n\x1b[2J"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "\x1b")
}

// TestHostEndpointQuotesOnce: a refused endpoint is quoted once, its
// control characters escaped once (\x1b, never \\x1b).
func TestHostEndpointQuotesOnce(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	_, err = HostEndpoint(d, "ssh:v1:other:\x1b[31m")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"ssh:v1:other:\x1b[31m"`)
	assert.NotContains(t, err.Error(), `\\x1b`)
}

// TestReadListingChecksLiveEntries: a far side's live entry that this
// build's list --json never prints (wire.CheckLive) is left out with a
// note, as presence does; the others are kept.
func TestReadListingChecksLiveEntries(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	good := `{"host":"","harness":"claude-code","sessionId":"s1","pid":7,"name":"a","nameSource":"","cwd":"/p","status":"idle","kind":"interactive","version":"2.1.332","startedAt":"","socketPath":"","endpoint":"","addressable":false,"verdict":"live","reason":"","file":"7.json"}`
	stale := strings.Replace(strings.Replace(good, `"verdict":"live"`, `"verdict":"stale"`, 1), `"sessionId":"s1"`, `"sessionId":"s3"`, 1)
	bad := strings.Replace(strings.Replace(good, `"status":"idle"`, `"status":"\u001b[31mowned"`, 1), `"sessionId":"s1"`, `"sessionId":"s2"`, 1)
	l, err := ReadListing(d, ports.RemoteResult{Stdout: []byte("[" + good + "," + bad + "," + stale + "]\n")})
	require.NoError(t, err)
	var ids []string
	for _, s := range l.Sessions {
		ids = append(ids, s.SessionID)
	}
	assert.Equal(t, []string{"s1", "s3"}, ids)
	require.Len(t, l.Notes, 1)
	assert.Contains(t, l.Notes[0], "s2")
	assert.NotContains(t, l.Notes[0], "\x1b")
}

func TestRedactURLsHidesPasswordsAndTokens(t *testing.T) {
	assert.Equal(t, "nats://user:xxxxx@a:4222,tls://xxxxx@b:4222,c:4222",
		RedactURLs("nats://user:hunter2@a:4222, tls://s3cret@b:4222,c:4222"))
	assert.Equal(t, "nats://xxxxx@[::1", RedactURLs("nats://user:hunter2@[::1"))
}
