package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testproc"
)

// writePolicy writes rules as the policy file of the config home xdg.
func writePolicy(t *testing.T, xdg string, rules ...string) {
	t.Helper()
	dir := filepath.Join(xdg, "peerctl")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policy"), []byte(strings.Join(rules, "\n")+"\n"), 0o600))
}

func TestPolicyAddListRmCheck(t *testing.T) {
	xdg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "CLAUDE_CONFIG_DIR": evConfigDir(t)}
	path := filepath.Join(xdg, "peerctl", "policy")
	r := evRun(t, env, nil, "policy", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no policy file ("+path+"): the defaults alone decide")
	assert.Contains(t, r.stdout, "default 1  hold    node:*  *   -\ndefault 2  allow   *       *   -\n", "the defaults are said")

	r = evRun(t, env, nil, "policy", "add", "--from", "mcp", "--to", "prod-*", "deny")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "peerctl: added rule 1 to "+path+": deny from=mcp to=prod-*\n", r.stderr)
	r = evRun(t, env, nil, "policy", "add", "--from", "mcp:reviewer-*", "--to", "prod-*", "--cwd", "/srv/my prod", "--at", "1", "allow")
	require.Equal(t, 0, r.code, r.stderr)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r = evRun(t, env, nil, "policy", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"file":"`+path+`","exists":true,
		"rules":[{"number":1,"default":0,"action":"allow","from":"mcp:reviewer-*","to":"prod-*","harness":"","host":"","cwd":"/srv/my prod","rule":"allow from=mcp:reviewer-* to=prod-* cwd=/srv/my prod"},
			{"number":2,"default":0,"action":"deny","from":"mcp","to":"prod-*","harness":"","host":"","cwd":"","rule":"deny from=mcp to=prod-*"}],
		"defaults":[{"number":0,"default":1,"action":"hold","from":"node:*","to":"*","harness":"","host":"","cwd":"","rule":"hold from=node:* to=*"},
			{"number":0,"default":2,"action":"allow","from":"*","to":"*","harness":"","host":"","cwd":"","rule":"allow from=* to=*"}]}`, r.stdout)

	r = evRun(t, env, nil, "policy", "check", "--from", "mcp:reviewer-1", "--to", "prod-api", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var chk wire.PolicyCheck
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &chk))
	assert.Equal(t, "deny", chk.Action, "a target peerctl cannot see is known by its address: the cwd rule's allow is passed over")
	assert.Equal(t, 2, chk.Rule.Number)
	r = evRun(t, env, nil, "policy", "check", "--from", "cli", "--to", "prod-api")
	require.Equal(t, 0, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "allow by default rule 2 (allow from=* to=*): cli to \"prod-api\""), r.stdout)

	r = evRun(t, env, nil, "policy", "rm", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "peerctl: removed rule 1 from "+path+": allow from=mcp:reviewer-* to=prod-* cwd=/srv/my prod\n", r.stderr)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(raw), "\ndeny from=mcp to=prod-*\n"), string(raw))
}

// policy's --host narrows the target by host and runs here: its help says
// so, not send's "run on the machine ssh reaches".
func TestPolicyHostHelp(t *testing.T) {
	for cmd, want := range map[string]string{"check": "this machine's policy decides, here", "add": "narrow TARGET to sessions on this host"} {
		r := evRun(t, nil, nil, "policy", cmd, "--help")
		require.Equal(t, wire.ExitOK, r.code, r.stderr)
		line := regexp.MustCompile(`(?m)^ +--host .*$`).FindString(r.stdout)
		assert.Contains(t, line, want, r.stdout)
		assert.NotContains(t, line, "ssh reaches", "policy %s --host runs here", cmd)
	}
}

func TestPolicyBadInput(t *testing.T) {
	xdg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "CLAUDE_CONFIG_DIR": evConfigDir(t)}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no --from":              {[]string{"policy", "add", "--to", "*", "deny"}, "--from is required"},
		"bad action":             {[]string{"policy", "add", "--from", "cli", "--to", "*", "block"}, `action "block"`},
		"misspelt action":        {[]string{"policy", "add", "--from", "cli", "--to", "*", "allw"}, `action "allw": want allow, hold or deny; did you mean allow?`},
		"the list's form":        {[]string{"policy", "add", "deny", "from=*", "to=noreact"}, `from=* and to=noreact are flags: peerctl policy add --from '*' --to 'noreact' deny`},
		"one in the list's form": {[]string{"policy", "add", "--from", "*", "deny", "to=x"}, `to=x is a flag: peerctl policy add --from '*' --to 'x' deny`},
		"check's target":         {[]string{"policy", "check", "--from", "cli", "noreact"}, `the target is a flag: peerctl policy check --from 'cli' --to 'noreact'`},
		"control character":      {[]string{"policy", "add", "--from", "cli", "--to", "a\x1b[2J", "deny"}, "control character"},
		"bad glob":               {[]string{"policy", "add", "--from", "cli", "--to", "[", "deny"}, "is not a glob"},
		"--at past the end":      {[]string{"policy", "add", "--from", "cli", "--to", "*", "--at", "3", "deny"}, "--at 3: want 1 to 1"},
		"rm a word":              {[]string{"policy", "rm", "first"}, "want its number"},
		"check a glob":           {[]string{"policy", "check", "--from", "mcp:rev-*", "--to", "x"}, "not a glob"},
		"check any":              {[]string{"policy", "check", "--from", "*", "--to", "x"}, "name one sender"},
	} {
		t.Run(name, func(t *testing.T) {
			r := evRun(t, env, nil, tc.args...)
			assert.Equal(t, wire.ExitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	// A rule the policy does not have is not found, not a usage error.
	r := evRun(t, env, nil, "policy", "rm", "1")
	assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
	assert.Contains(t, r.stderr, "peerctl: not_found: rule 1: the policy has no rules")
	assert.NotContains(t, r.stderr, "--help")
	_, err := os.Stat(filepath.Join(xdg, "peerctl", "policy"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written")
}

// A deny rule refuses a send with not_allowed (exit 17) naming the rule,
// before the transport runs: without it, the same send fails at the
// socket that is not there (delivery_failed). A hold rule that cannot be
// kept (PEERCTL_SERVE=off) refuses too, saying so.
func TestSendRefusedByThePolicy(t *testing.T) {
	sock := evSocketDir(t)
	p := testproc.Sleeper(t)
	cfg := evConfigDir(t, evLiveRecord(t, p, "33333333-3333-4333-8333-333333333333", "prod-api", "/srv/prod", sock+"/missing.sock"))
	xdg := t.TempDir()
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "XDG_CONFIG_HOME": xdg, "PEERCTL_SERVE": "off"}
	r := evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "prod-api", "hi")
	require.Equal(t, wire.ExitDeliveryFailed, r.code, r.stderr)

	writePolicy(t, xdg, "allow from=cli to=dev-*", "deny from=cli to=* cwd=/srv")
	r = evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "prod-api", "hi")
	assert.Equal(t, wire.ExitNotAllowed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "peerctl: not_allowed: deny by rule 2 (deny from=cli to=* cwd=/srv): cli to \"prod-api\"")
	assert.Contains(t, r.stderr, "nothing was stored or sent")
	r = evRun(t, env, nil, "send", "--json", "--transport", "socket", "--no-confirm", "prod-api", "hi")
	assert.Equal(t, wire.ExitNotAllowed, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"reason": "not_allowed"`)
	// A durable send is decided here, before its order is dialled to the
	// service (which decides again): not_allowed, not the
	// outbox_unavailable that PEERCTL_SERVE=off gives an allowed one.
	r = evRun(t, env, nil, "send", "--durable", "prod-api", "hi")
	assert.Equal(t, wire.ExitNotAllowed, r.code, r.stderr)

	// A hold with no service to keep it (PEERCTL_SERVE=off) refuses,
	// saying so.
	writePolicy(t, xdg, "hold from=cli to=prod-api")
	r = evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "prod-api", "hi")
	assert.Equal(t, wire.ExitNotAllowed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "hold by rule 1 (hold from=cli to=prod-api)")
	assert.Contains(t, r.stderr, "a held message waits in peerctl serve's outbox for peerctl outbox approve, and this send could not be kept there")

	writePolicy(t, xdg, "deny from=cli to=*", "allow from=* to=*\x1b[2J")
	r = evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "prod-api", "hi")
	assert.Equal(t, wire.ExitNotAllowed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "line 2: holds a control character", "a file peerctl cannot read sends nothing")

	require.NoError(t, os.Chmod(filepath.Join(xdg, "peerctl", "policy"), 0o666))
	writePolicy(t, xdg, "allow from=* to=*")
	r = evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "prod-api", "hi")
	assert.Equal(t, wire.ExitNotAllowed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "writable by its group or others")
}

// The MCP tools send as mcp, from the session the server runs under by
// its process tree (this test process is the live session "mcp-self"),
// not the one a variable names: a socket variable naming mcp-parent
// changes nothing.
func TestMCPSendAsksThePolicy(t *testing.T) {
	w := newTwoLive(t, false)
	xdg := t.TempDir()
	writePolicy(t, xdg, "allow from=mcp:mcp-parent to=*", "allow from=mcp:mcp-self to=mcp-self", "deny from=mcp to=*")
	env := map[string]string{"XDG_CONFIG_HOME": xdg, claudecode.SocketEnv: w.parent.SocketPath, "PEERCTL_SERVE": "off"}
	var out, errb strings.Builder
	c := newFactory(strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	*c.flags.ptr(claudecode.FlagConfigDir), *c.flags.ptr(qwencode.FlagHome) = w.cfg, mcpQwenHome(w.cfg)
	tools, err := c.mcpTools(mcpFlags{timeout: 30 * time.Second, callTimeout: time.Minute, confirmTimeout: 50 * time.Millisecond})
	require.NoError(t, err, errb.String())
	cs := mcpConnect(t, tools)

	text := refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-parent", "text": "hi", "transport": "socket"}), "not_allowed")
	assert.Contains(t, text, "deny by rule 3 (deny from=mcp to=*): mcp:mcp-self to \"mcp-parent\"")
	okJSON(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "hi", "transport": "socket"}))
	assert.Len(t, w.selfSock.Wait(1), 1)
}

// The relay sends as relay: a deny rule refuses its request with a
// not_allowed refusal line, and the relay goes on.
func TestRelaySendAsksThePolicy(t *testing.T) {
	sock := evSocketDir(t)
	p := testproc.Sleeper(t)
	cfg := evConfigDir(t, evLiveRecord(t, p, "33333333-3333-4333-8333-333333333333", "prod-api", "/srv/prod", sock+"/missing.sock"))
	xdg := t.TempDir()
	writePolicy(t, xdg, "deny from=relay to=prod-*")
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "XDG_CONFIG_HOME": xdg, "PEERCTL_SERVE": "off", "PEERCTL_CLAUDE": "/nonexistent/claude"}
	var out, errb strings.Builder
	c := newFactory(strings.NewReader(`{"id":1,"to":"prod-api","text":"hi"}`+"\n"), &out, &errb, func(k string) string { return env[k] })
	code := execute(t.Context(), c, []string{"relay"})
	assert.Equal(t, 0, code, errb.String())
	assert.Contains(t, out.String(), `"type":"refusal","id":1,"line":1,"reason":"not_allowed","detail":"deny by rule 1 (deny from=relay to=prod-*): relay (its session not known) to \"prod-api\"`)
}

// A send a far side's peerctl runs over ssh (--hello) comes in by the
// host entrance, named by the caller's address (SSH_CONNECTION): a rule
// for host:10.0.0.* refuses it, one for cli does not touch it.
func TestFarSendIsTheHostEntrance(t *testing.T) {
	sock := evSocketDir(t)
	p := testproc.Sleeper(t)
	cfg := evConfigDir(t, evLiveRecord(t, p, "33333333-3333-4333-8333-333333333333", "prod-api", "/srv/prod", sock+"/missing.sock"))
	xdg := t.TempDir()
	writePolicy(t, xdg, "allow from=cli to=*", "deny from=host:10.0.0.* to=prod-*")
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "XDG_CONFIG_HOME": xdg, "PEERCTL_SERVE": "off", "HOME": t.TempDir(),
		"SSH_CONNECTION": "10.0.0.7 51234 10.0.0.1 22"}
	in, feed := io.Pipe()
	defer feed.Close()
	var stdout, stderr strings.Builder
	c := newFactory(in, &stdout, &stderr, func(k string) string { return env[k] })
	go func() { _, _ = feed.Write([]byte("hi")) }()
	code := execute(context.Background(), c, []string{"--hello=" + strconv.Itoa(ports.RemoteProtocol), "send", "--stdin-bytes=2",
		"--transport", "socket", "--no-confirm", "prod-api", "-"})
	assert.Equal(t, wire.ExitNotAllowed, code, stderr.String())
	assert.Contains(t, stderr.String(), "deny by rule 2 (deny from=host:10.0.0.* to=prod-*): host:10.0.0.7 to \"prod-api\"")
}
