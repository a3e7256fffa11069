package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
)

// A message on stdin over the 64 KiB cap is read only to one byte past the
// cap; the refusal says it is over the cap and that the rest was not read,
// never a size it made up (65537). As an argument the size is known and
// given.
func TestSendOversizeStdinSaysOverTheCap(t *testing.T) {
	cfg := evConfigDir(t)
	for _, n := range []int{64*1024 + 1, 140000} {
		stdin := func(c *factory) { c.io.in = strings.NewReader(strings.Repeat("a", n)) }
		r := evRun(t, nil, stdin, "--config-dir", cfg, "send", "--transport", "socket", "anyone", "-")
		assert.Equal(t, wire.ExitInvalidMessage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "message on stdin is over the 65536-byte (64 KiB) cap")
		assert.Contains(t, r.stderr, "the rest was not read")
		assert.NotContains(t, r.stderr, "65537")

		r = evRun(t, nil, stdin, "--config-dir", cfg, "send", "--json", "--transport", "socket", "anyone", "-")
		assert.Equal(t, wire.ExitInvalidMessage, r.code, r.stderr)
		var got wire.RefusalDoc
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), "stdout: %q", r.stdout)
		assert.Equal(t, "invalid_message", got.Refusal.Reason)
		assert.Contains(t, got.Refusal.Detail, "the rest was not read")
	}
	r := evRun(t, nil, nil, "--config-dir", cfg, "send", "--transport", "socket", "anyone", strings.Repeat("a", 140000))
	assert.Equal(t, wire.ExitInvalidMessage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "message is 140000 bytes, over the 65536-byte (64 KiB) cap")
}

// endpoint parse takes every endpoint list prints: a session on another
// machine (ssh:v1:<dest>:<endpoint>) names its host, and each harness's
// form says what it pins.
func TestEndpointParseTakesEveryListedForm(t *testing.T) {
	const thread = "01a234d3-852a-7530-a429-495bba85092c"
	for _, tc := range []struct {
		endpoint string
		want     endpointJSON
		line     string
	}{
		{"ssh:v1:me@box%3A22:cc-peer:v1:42:proj:/tmp/s.sock",
			endpointJSON{Host: "me@box:22", Harness: "claude-code", PID: 42, Name: "proj", Socket: "/tmp/s.sock"}, "host:     me@box:22\n"},
		{"codex-peer:v1:7:" + thread + ":/tmp/codex-daemon-0/d.sock",
			endpointJSON{Harness: "codex", PID: 7, Name: thread, Socket: "/tmp/codex-daemon-0/d.sock"}, "thread id: " + thread + "\n"},
		{"qwen-peer:v1:9:s-1:/tmp/q.sock",
			endpointJSON{Harness: "qwen-code", PID: 9, Name: "s-1", Socket: "/tmp/q.sock"}, "session id: s-1\n"},
	} {
		p := evRun(t, nil, nil, "endpoint", "parse", "--json", tc.endpoint)
		require.Equal(t, wire.ExitOK, p.code, p.stderr)
		var got endpointJSON
		require.NoError(t, json.Unmarshal([]byte(p.stdout), &got))
		tc.want.Endpoint = tc.endpoint
		assert.Equal(t, tc.want, got)
		text := evRun(t, nil, nil, "endpoint", "parse", tc.endpoint)
		require.Equal(t, wire.ExitOK, text.code, text.stderr)
		assert.Contains(t, text.stdout, tc.line)
	}
	for _, bad := range []string{"ssh:v1:-oProxyCommand=x:cc-peer:v1:1:n:/s", "ssh:v1:box:ssh:v1:evil:cc-peer:v1:5:n:/s", "codex-peer:v1:1:../../etc:/tmp/x"} {
		p := evRun(t, nil, nil, "endpoint", "parse", bad)
		assert.Equal(t, wire.ExitUsage, p.code, bad)
	}
}

// endpoint format prints the endpoint alone on one line, so its output
// goes straight into endpoint parse (and send); --parts keeps the block.
func TestEndpointFormatRoundTripsThroughParse(t *testing.T) {
	for _, tc := range []struct{ pid, name, socket string }{
		{"4652", "proj-89", "/tmp/cc-socks/4652.sock"},
		{"5031", "build:main 50%", "/tmp/cc socks/50:31.sock"},
	} {
		f := evRun(t, nil, nil, "endpoint", "format", tc.pid, tc.name, tc.socket)
		require.Equal(t, wire.ExitOK, f.code, f.stderr)
		require.Equal(t, 1, strings.Count(f.stdout, "\n"), "one line: %q", f.stdout)
		ep := strings.TrimSuffix(f.stdout, "\n") // what "$(...)" gives
		assert.True(t, strings.HasPrefix(ep, "cc-peer:v1:"+tc.pid+":"), ep)

		p := evRun(t, nil, nil, "endpoint", "parse", "--json", ep)
		require.Equal(t, wire.ExitOK, p.code, p.stderr)
		var got endpointJSON
		require.NoError(t, json.Unmarshal([]byte(p.stdout), &got))
		assert.Equal(t, endpointJSON{Endpoint: ep, Harness: "claude-code", PID: got.PID, Name: tc.name, Socket: tc.socket}, got)

		block := evRun(t, nil, nil, "endpoint", "format", "--parts", tc.pid, tc.name, tc.socket)
		require.Equal(t, wire.ExitOK, block.code, block.stderr)
		assert.Equal(t, evRun(t, nil, nil, "endpoint", "parse", ep).stdout, block.stdout, "--parts prints what parse prints")
	}
}

// A path flag given empty (--config-dir "" from an unset variable, say)
// would silently mean its default (~/.claude, claude on PATH): it is a
// usage error, before anything is read or run. The environment variables
// keep their meaning: empty is unset, as Claude Code reads them.
func TestEmptyPathFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--config-dir", "", "list"},
		{"--config-dir=", "list", "--json"},
		{"list", "--config-dir", ""},
		{"--config-dir", "", "show", "x"},
		{"--config-dir", "", "send", "--dry-run", "x", "hi"},
		{"--config-dir", "", "doctor"},
		{"--config-dir", "", "whoami"},
		{"--config-dir", "", "enrich", "x"},
		{"send", "--claude", "", "--dry-run", "x", "hi"},
		{"doctor", "--claude="},
		{"--qwen-home", "", "list"},
		{"doctor", "--qwen", ""},
	} {
		r := evRun(t, map[string]string{"HOME": t.TempDir()}, nil, args...)
		assert.Equal(t, wire.ExitUsage, r.code, "%q: %s", args, r.stderr)
		assert.Regexp(t, `^peerctl: --(config-dir|qwen-home|claude|qwen) is empty: give a value, or leave the flag out to use \$`, r.stderr, "%q", args)
		assert.Empty(t, r.stdout, "%q", args)
	}
	home := t.TempDir()
	r := evRun(t, map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": ""}, nil, "list")
	assert.Equal(t, wire.ExitOK, r.code, "an empty CLAUDE_CONFIG_DIR is unset: %s", r.stderr)
	assert.Contains(t, r.stderr, home+"/.claude/sessions")
}

// The binary never executes a text/template (cobra runs one only for a
// template set with SetVersionTemplate, SetUsageTemplate or
// SetHelpTemplate): template execution calls reflect's MethodByName, which
// makes the linker keep every exported method of every type, a quarter
// more binary for every start (docs/PERFORMANCE.md). --version and help
// print without one.
func TestBinaryRunsNoTextTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := evBuild(t)
	out, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
	require.NoError(t, err, "go tool nm: %s", out)
	assert.NotContains(t, string(out), "text/template.(*state).evalField", "a text/template is executed somewhere: a cobra Set*Template call?")
	assert.Contains(t, string(out), "internal/cli.newRootCmd", "the symbol table is there")
}

// The peerctl binary does not link the MCP SDK: its package initialisation
// cost every command about a fifth of its start-up (docs/PERFORMANCE.md).
// Nor the fleet's NATS client (nats.go, jetstream, nkeys, and encoding/gob
// through nats.go's encoders): about a tenth of a `list`. peerctl-mcp links
// both; `peerctl mcp`, serve with a bus and list --fleet run peerctl-mcp.
// Nor gojq, --jq's filter: its builtin table, built at every start, was
// the largest package initialisation of a `list`; --jq runs peerctl-mcp.
func TestOnlyPeerctlMCPLinksTheMCPSDKAndTheBus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	for bin, want := range map[string]bool{evBuild(t): false, testbin.Build(t, testbin.PeerctlMCP): true} {
		out, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
		require.NoError(t, err, "go tool nm: %s", out)
		for _, pkg := range []string{"github.com/modelcontextprotocol/go-sdk/mcp.", "github.com/google/jsonschema-go/", "github.com/nats-io/nats%2ego.", "encoding/gob.", "github.com/itchyny/gojq."} {
			assert.Equal(t, want, strings.Contains(string(out), pkg), "%s links %s", filepath.Base(bin), pkg)
		}
	}
}

// A name flag given empty (--name "" from an unset variable, say) would
// silently mean the default name "peerctl": like an empty path flag it is
// a usage error naming the flag, before anything is read or run.
func TestEmptyNameFlagsAreUsageErrors(t *testing.T) {
	cfg, missing := t.TempDir(), filepath.Join(t.TempDir(), "no-claude")
	for _, args := range [][]string{
		{"relay", "--claude", missing, "--name", ""},
		{"relay", "--claude", missing, "--name="},
		{"send", "--claude", missing, "--from", "", "--dry-run", "x", "hi"},
		{"send", "--from=", "--transport", "socket", "x", "hi"},
	} {
		r := evRun(t, map[string]string{"HOME": t.TempDir()}, nil, append([]string{"--config-dir", cfg}, args...)...)
		assert.Equal(t, wire.ExitUsage, r.code, "%q: %s", args, r.stderr)
		assert.Regexp(t, `^peerctl: --(name|from) is empty: give a name, or leave the flag out to use "peerctl"`, r.stderr, "%q", args)
		assert.Empty(t, r.stdout, "%q", args)
	}
}

// An idempotency key follows the rule of --from for control characters: a
// key with one is a usage error before anything is stored (a key that is
// not UTF-8 is bytes, kept exactly: TestServeKeysAreBytes),
// and the relay's "key" and the MCP tool's key are checked by the same
// function (checkKey).
func TestKeyWithAControlCharacterIsRefused(t *testing.T) {
	cfg := t.TempDir()
	for _, key := range []string{"k\x1b", "a\nb", "\x7f", "c1\u0085", "bad\xffutf8\x1b"} {
		r := evRun(t, map[string]string{"HOME": t.TempDir(), serveEnv: "off"}, nil, "--config-dir", cfg, "send", "--key", key, "x", "hi")
		assert.Equal(t, wire.ExitUsage, r.code, "%q: %s", key, r.stderr)
		assert.Contains(t, r.stderr, "--key "+strconv.Quote(key)+": want a key without control characters", "%q", key)
		assert.Empty(t, r.stdout, "%q", key)
		assert.Error(t, checkKey(key), "%q", key)
	}
	for _, key := range []string{"nightly-42", "build ü日本", "k\xff", strings.Repeat("k", maxKey)} {
		assert.NoError(t, checkKey(key), "%q", key)
	}
	assert.ErrorContains(t, checkKey(""), "want 1 to 200 bytes, got 0")
	assert.ErrorContains(t, checkKey(strings.Repeat("k", maxKey+1)), "want 1 to 200 bytes, got 201")
}
