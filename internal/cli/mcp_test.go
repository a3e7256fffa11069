package cli

// peerctl mcp end to end over the MCP SDK's in-memory transport: a real
// SDK client calls every tool against temp registries whose records are
// live (this test process and its parent) and test inbox sockets.

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/mcpserve"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// mcpConnect serves tools in memory and returns a connected client session.
func mcpConnect(t *testing.T, tools *mcpTools) *mcp.ClientSession {
	t.Helper()
	s, err := mcpserve.NewServer(tools.tools(), "test", nil)
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// mcpFor builds the tools as `peerctl --config-dir cfg mcp` does, with a
// short confirmation (the test sockets write no transcript) and an empty
// Qwen Code home (see mcpQwenHome).
func mcpFor(t *testing.T, cfg string, f mcpFlags) *mcp.ClientSession {
	t.Helper()
	return mcpWith(t, cfg, mcpQwenHome(cfg), f)
}

// mcpQwenHome is the Qwen Code home the MCP tests use with cfg: a folder
// that does not exist, so no real ~/.qwen is read.
func mcpQwenHome(cfg string) string { return filepath.Join(cfg, "no-qwen-home") }

// mcpWith is mcpFor with a Qwen Code home of its own.
func mcpWith(t *testing.T, cfg, qwen string, f mcpFlags) *mcp.ClientSession {
	t.Helper()
	if f.timeout == 0 {
		f.timeout = 30 * time.Second
	}
	if f.callTimeout == 0 {
		f.callTimeout = time.Minute
	}
	if f.confirmTimeout == 0 {
		f.confirmTimeout = 50 * time.Millisecond
	}
	var out, errb strings.Builder
	c := newFactory(strings.NewReader(""), &out, &errb, func(string) string { return "" })
	*c.flags.ptr(claudecode.FlagConfigDir), *c.flags.ptr(qwencode.FlagHome) = cfg, qwen
	tools, err := c.mcpTools(f)
	require.NoError(t, err, "stderr: %s", errb.String())
	return mcpConnect(t, tools)
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "%s: protocol error", tool)
	return res
}

// resultText is the one text content of res.
func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1, "content: %#v", res.Content)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

// okJSON checks res succeeded, its text and structured content are the
// same JSON, and returns that JSON.
func okJSON(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	text := resultText(t, res)
	require.False(t, res.IsError, "unexpected error result: %s", text)
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, text, string(structured), "text and structured content agree")
	return []byte(text)
}

// refused checks res is an error result starting with reason and returns its text.
func refused(t *testing.T, res *mcp.CallToolResult, reason string) string {
	t.Helper()
	text := resultText(t, res)
	require.True(t, res.IsError, "want an error result, got: %s", text)
	assert.True(t, strings.HasPrefix(text, reason+": "), "text starts with %q: %s", reason, text)
	assert.Nil(t, res.StructuredContent)
	return text
}

// twoLive is a registry with this process ("mcp-self") and its parent
// ("mcp-parent"), each with a listening inbox socket.
type twoLive struct {
	cfg          string
	self, parent evRecord
	selfSock     *socktest.Listener
}

func newTwoLive(t *testing.T, hold bool) twoLive {
	t.Helper()
	socks := evSocketDir(t)
	self := evLiveRecord(t, os.Getpid(), "0a8c81b2-6c84-4f4e-9d6a-3f1e4b7d2c01", "mcp-self", t.TempDir(), filepath.Join(socks, "self.sock"))
	parent := evLiveRecord(t, os.Getppid(), "7f3e9c15-2b4a-4d8e-a1c6-5e0f2d9b8a02", "mcp-parent", t.TempDir(), filepath.Join(socks, "parent.sock"))
	ln := socktest.Listen(t, self.SocketPath, hold)
	socktest.Listen(t, parent.SocketPath, false)
	return twoLive{cfg: evConfigDir(t, self, parent), self: self, parent: parent, selfSock: ln}
}

func TestMCPListsTheThreeToolsWithSchemasFromGoTypes(t *testing.T) {
	cs := mcpFor(t, evConfigDir(t), mcpFlags{})
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	require.Len(t, tools, 3)
	schema := func(name string) map[string]any {
		raw, err := json.Marshal(tools[name].InputSchema)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		return m
	}
	send := schema(mcptools.ToolSend)
	assert.ElementsMatch(t, []any{"to", "text"}, send["required"])
	props := send["properties"].(map[string]any)
	assert.ElementsMatch(t, []string{"to", "text", "transport", "host", "await_reply_seconds", "durable_seconds", "key"}, keys(props))
	assert.Equal(t, []any{"courier", "socket", "inbox", "app-server", "queue", "prompt"}, props["transport"].(map[string]any)["enum"])
	assert.Equal(t, false, send["additionalProperties"])
	list := schema(mcptools.ToolList)["properties"].(map[string]any)
	assert.ElementsMatch(t, []string{"all", "harness", "host", "hosts"}, keys(list))
	assert.Equal(t, []any{"claude-code", "qwen-code", "codex", "opencode"}, list["harness"].(map[string]any)["enum"])
	assert.Equal(t, []any{"session"}, schema(mcptools.ToolShow)["required"])
	for name, tool := range tools {
		assert.NotNil(t, tool.OutputSchema, "%s has an output schema", name)
		assert.NotEmpty(t, tool.Description, name)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// list_sessions and show_session return what list --json and show --json
// print for the same registry.
func TestMCPListAndShowAreTheCLIsJSON(t *testing.T) {
	w := newTwoLive(t, false)
	stale := evRecord{PID: 1 << 30, SessionID: "5d1f0e2a-0000-4000-8000-000000000003", Cwd: "/nowhere", StartedAt: 1796027521308,
		ProcStart: "1", Version: "2.1.328", Kind: "interactive", Name: "gone", NameSource: "derived", Status: "idle"}
	b, err := json.Marshal(stale)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(w.cfg, "sessions", "1073741824.json"), b, 0o600))
	cs := mcpFor(t, w.cfg, mcpFlags{})
	env := map[string]string{"CLAUDE_CONFIG_DIR": w.cfg, "HOME": t.TempDir(), "QWEN_HOME": mcpQwenHome(w.cfg)}

	for _, all := range []bool{false, true} {
		args := []string{"list", "--json"}
		if all {
			args = append(args, "--all")
		}
		cli := evRun(t, env, nil, args...)
		require.Equal(t, 0, cli.code, cli.stderr)
		var got struct {
			Sessions json.RawMessage `json:"sessions"`
			Note     string          `json:"note"`
		}
		require.NoError(t, json.Unmarshal(okJSON(t, call(t, cs, mcptools.ToolList, map[string]any{"all": all})), &got))
		assert.JSONEq(t, cli.stdout, string(got.Sessions), "all=%v", all)
		assert.Empty(t, got.Note)
		n := 2
		if all {
			n = 3
		}
		assert.Equal(t, n, strings.Count(string(got.Sessions), `"sessionId"`), "all=%v", all)
	}

	cli := evRun(t, env, nil, "show", "--json", "mcp-parent")
	require.Equal(t, 0, cli.code, cli.stderr)
	assert.JSONEq(t, cli.stdout, string(okJSON(t, call(t, cs, mcptools.ToolShow, map[string]any{"session": "mcp-parent"}))))
	cli = evRun(t, env, nil, "show", "--json", "1073741824.json")
	require.Equal(t, 0, cli.code, cli.stderr)
	assert.JSONEq(t, cli.stdout, string(okJSON(t, call(t, cs, mcptools.ToolShow, map[string]any{"session": "1073741824.json"}))), "a stale record by its file")

	refused(t, call(t, cs, mcptools.ToolShow, map[string]any{"session": "nobody"}), "not_live")
}

// A registry that cannot be read is an error result for list_sessions,
// not a crash.
func TestMCPListUnreadableRegistry(t *testing.T) {
	cfg := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cfg, "sessions"), []byte("a file, not a folder"), 0o600))
	cs := mcpFor(t, cfg, mcpFlags{})
	res := call(t, cs, mcptools.ToolList, map[string]any{})
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(t, res), "claude-code: registry not read")
	assert.Contains(t, resultText(t, res), "not a directory")
	assert.Nil(t, res.StructuredContent)
}

func TestMCPListNotesAMissingRegistryFolder(t *testing.T) {
	cs := mcpFor(t, filepath.Join(t.TempDir(), "no-such-config"), mcpFlags{})
	var got listOut
	require.NoError(t, json.Unmarshal(okJSON(t, call(t, cs, mcptools.ToolList, map[string]any{})), &got))
	assert.NotNil(t, got.Sessions)
	assert.Empty(t, got.Sessions)
	assert.Contains(t, got.Note, "does not exist")
}

// A socket send posts the exact text and returns send --json's receipt.
func TestMCPSendBySocket(t *testing.T) {
	w := newTwoLive(t, false)
	cs := mcpFor(t, w.cfg, mcpFlags{})
	const text = "from an MCP client: \"quotes\", tab\t, ünï\nend"
	var got wire.Receipt
	require.NoError(t, json.Unmarshal(okJSON(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": text, "transport": "socket"})), &got))
	assert.True(t, got.OK)
	assert.Equal(t, "posted", got.Outcome, "no transcript: not confirmed")
	assert.Equal(t, "socket", got.Transport)
	assert.Equal(t, w.self.SessionID, got.SessionID)
	assert.Equal(t, os.Getpid(), got.PID)
	assert.False(t, got.Confirmed)
	assert.NotEmpty(t, got.ConfirmNote)
	frames := w.selfSock.Wait(1)
	require.Len(t, frames, 1)
	var frame struct {
		Type    string `json:"type"`
		Message struct{ Role, Content string }
	}
	require.NoError(t, json.Unmarshal(frames[0], &frame))
	assert.Equal(t, text, frame.Message.Content)
}

// Every refusal is an error result whose text starts with its reason
// word; none sends anything, and the server keeps serving.
func TestMCPSendRefusals(t *testing.T) {
	w := newTwoLive(t, false)
	// A third record sharing mcp-self's name makes the name ambiguous;
	// a fourth is live but publishes no socket.
	twin := w.parent
	twin.Name = "shared"
	self := w.self
	self.Name = "shared"
	cfgShared := evConfigDir(t, self, twin)
	noSock := evLiveRecord(t, os.Getpid(), "1b2c3d4e-0000-4000-8000-000000000004", "mute", t.TempDir(), "")
	cfgMute := evConfigDir(t, noSock)
	newer := w.self
	newer.PeerProtocol = socketframe.MaxPeerProtocol + 1
	cfgNewer := evConfigDir(t, newer)

	cs := mcpFor(t, w.cfg, mcpFlags{})
	refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "nobody", "text": "hi", "transport": "socket"}), "not_live")
	refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "", "transport": "socket"}), "invalid_message")
	refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "a\x00b", "transport": "socket"}), "invalid_message")
	refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": strings.Repeat("x", domain.MaxMessageBytes+1), "transport": "socket"}), "invalid_message")

	text := refused(t, call(t, mcpFor(t, cfgShared, mcpFlags{}), mcptools.ToolSend, map[string]any{"to": "shared", "text": "hi", "transport": "socket"}), "identity_mismatch")
	assert.Equal(t, 2, strings.Count(text, "candidate: "), text)
	refused(t, call(t, mcpFor(t, cfgMute, mcpFlags{}), mcptools.ToolSend, map[string]any{"to": "mute", "text": "hi", "transport": "socket"}), "not_addressable")
	refused(t, call(t, mcpFor(t, cfgNewer, mcpFlags{}), mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "hi", "transport": "socket"}), "harness_unsupported")
	text = refused(t, call(t, mcpFor(t, cfgShared, mcpFlags{}), mcptools.ToolShow, map[string]any{"session": "shared"}), "identity_mismatch")
	assert.Equal(t, 2, strings.Count(text, "candidate: "), text)

	assert.Empty(t, w.selfSock.Frames(), "no refusal sent anything")
	okJSON(t, call(t, cs, mcptools.ToolList, map[string]any{}))
}

// Bad arguments give an error result (or, for an unknown tool, a protocol
// error); the server keeps serving.
func TestMCPBadArgumentsNeverStopTheServer(t *testing.T) {
	w := newTwoLive(t, false)
	cs := mcpFor(t, w.cfg, mcpFlags{})
	for name, args := range map[string]map[string]any{
		"no to":               {"text": "hi"},
		"no text":             {"to": "mcp-self"},
		"to not a string":     {"to": 5, "text": "hi"},
		"unknown transport":   {"to": "mcp-self", "text": "hi", "transport": "pigeon"},
		"unknown argument":    {"to": "mcp-self", "text": "hi", "priority": "now"},
		"await is negative":   {"to": "mcp-self", "text": "hi", "await_reply_seconds": -1},
		"await is too long":   {"to": "mcp-self", "text": "hi", "await_reply_seconds": 3601},
		"await is a string":   {"to": "mcp-self", "text": "hi", "await_reply_seconds": "5"},
		"text is an object":   {"to": "mcp-self", "text": map[string]any{"a": 1}},
		"transport is empty":  {"to": "mcp-self", "text": "hi", "transport": ""},
		"key in another case": {"to": "nosuch", "TO": "mcp-self", "text": "hi", "transport": "socket"},
	} {
		res := call(t, cs, mcptools.ToolSend, args)
		if name == "transport is empty" {
			// "" means the default, the courier: no claude on PATH here or a
			// failed run; either way a refusal, not a crash.
			assert.True(t, res.IsError, name)
			continue
		}
		assert.True(t, res.IsError, "%s: %s", name, resultText(t, res))
		assert.Contains(t, resultText(t, res), "argument", name)
	}
	res := call(t, cs, mcptools.ToolList, map[string]any{"all": "yes"})
	assert.True(t, res.IsError)
	res = call(t, cs, mcptools.ToolShow, map[string]any{})
	assert.True(t, res.IsError)

	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_session", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown tool")

	assert.Empty(t, w.selfSock.Frames())
	var got wire.Receipt
	require.NoError(t, json.Unmarshal(okJSON(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "still here", "transport": "socket"})), &got))
	assert.Equal(t, "posted", got.Outcome)
}

// Arguments that JSON decoding would change (bytes that are not UTF-8, a
// lone surrogate escape) are refused as invalid_message, not sent with
// U+FFFD in their place; the server keeps serving.
func TestMCPSendRefusesArgumentsThatDecodeInexactly(t *testing.T) {
	w := newTwoLive(t, false)
	cs := mcpFor(t, w.cfg, mcpFlags{})
	for _, args := range []string{
		`{"to":"mcp-self","text":"lone \ud800 surrogate","transport":"socket"}`,
		"{\"to\":\"mcp-self\",\"text\":\"bad \xff\xfe bytes\",\"transport\":\"socket\"}",
	} {
		text := refused(t, call(t, cs, mcptools.ToolSend, json.RawMessage(args)), "invalid_message")
		assert.Contains(t, text, "U+FFFD", args)
	}
	assert.Empty(t, w.selfSock.Frames(), "nothing sent")
	okJSON(t, call(t, cs, mcptools.ToolSend, json.RawMessage(`{"to":"mcp-self","text":"pair \ud83d\ude00 ok","transport":"socket"}`)))
	frames := w.selfSock.Wait(1)
	require.Len(t, frames, 1)
	assert.Contains(t, string(frames[0]), "pair \U0001F600 ok")
}

// A call that outlives --call-timeout ends as delivery_failed; the next
// call is served.
func TestMCPCallDeadline(t *testing.T) {
	w := newTwoLive(t, true) // the socket never closes: only a deadline ends the post
	cs := mcpFor(t, w.cfg, mcpFlags{timeout: time.Hour, callTimeout: 200 * time.Millisecond})
	// The frame was written before the deadline: the session may have it.
	text := refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "hi", "transport": "socket"}), "outcome_unknown")
	assert.Contains(t, text, "timeout", "the call's deadline, not the hour-long transport bound, ended it")
	okJSON(t, call(t, cs, mcptools.ToolList, map[string]any{}))
}

// panicRegistry stands for a bug: its Read panics.
type panicRegistry struct{}

func (panicRegistry) Read(context.Context) (ports.Snapshot, error) { panic("registry bug") }

type deadLiveness struct{}

func (deadLiveness) Check(domain.Record) domain.Liveness { return domain.Liveness{} }

// A panic in a call is an error result, and the server keeps serving.
func TestMCPPanicIsAnErrorResult(t *testing.T) {
	broken := app.New(panicRegistry{}, deadLiveness{}, nil, "")
	w := newTwoLive(t, false)
	var out, errb strings.Builder
	c := newFactory(strings.NewReader(""), &out, &errb, func(string) string { return "" })
	*c.flags.ptr(claudecode.FlagConfigDir), *c.flags.ptr(qwencode.FlagHome) = w.cfg, mcpQwenHome(w.cfg)
	good, err := c.mcpTools(mcpFlags{timeout: time.Minute, callTimeout: time.Minute, confirmTimeout: time.Millisecond})
	require.NoError(t, err)
	cs := mcpConnect(t, &mcpTools{callTimeout: time.Minute, service: func(transport string) (*app.Service, error) {
		if transport == "" { // list's
			return broken, nil
		}
		return good.service(transport)
	}})
	res := call(t, cs, mcptools.ToolList, map[string]any{})
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(t, res), "registry bug")
	okJSON(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "after the panic", "transport": "socket"}))
}

// With both harnesses' registries: list_sessions' harness keeps one, as
// list --harness does; a transport of the other harness is refused with
// harness_unsupported; Qwen Code's ipcToken never appears in a result.
func TestMCPBothHarnesses(t *testing.T) {
	cfg := evConfigDir(t, evLiveRecord(t, os.Getppid(), "cccccccc-3333-4333-8333-333333333333", "build-1a", "/w/build", "/tmp/cc-socks/1.sock"))
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", "/run/q/1.sock")
	cs := mcpWith(t, cfg, home, mcpFlags{})
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": home, "HOME": t.TempDir()}
	var texts []string
	for _, h := range []string{"", "claude-code", "qwen-code"} {
		args := []string{"list", "--json"}
		in := map[string]any{}
		if h != "" {
			args = append(args, "--harness", h)
			in["harness"] = h
		}
		cli := evRun(t, env, nil, args...)
		require.Equal(t, 0, cli.code, cli.stderr)
		var got listOut
		text := okJSON(t, call(t, cs, mcptools.ToolList, in))
		texts = append(texts, string(text))
		require.NoError(t, json.Unmarshal(text, &got))
		sessions, err := json.Marshal(got.Sessions)
		require.NoError(t, err)
		assert.JSONEq(t, cli.stdout, string(sessions), "harness %q", h)
		want := map[string]int{"": 2, "claude-code": 1, "qwen-code": 1}[h]
		assert.Len(t, got.Sessions, want, "harness %q", h)
	}
	res := call(t, cs, mcptools.ToolList, map[string]any{"harness": "qwen"})
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(t, res), "harness")

	texts = append(texts, string(okJSON(t, call(t, cs, mcptools.ToolShow, map[string]any{"session": "app-3b"}))))
	texts = append(texts, refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "app-3b", "text": "hi", "transport": "courier"}), "harness_unsupported"))
	for _, text := range texts {
		assert.NotContains(t, text, "feedface", "the ipcToken is never shown")
	}
}

// A stdin line that is not JSON gets a -32700 parse error (id null) and a
// note on stderr: the server keeps serving, and answers the calls before and after it (the
// SDK's stream decoder would otherwise end the session on it, dropping the
// answers to calls still running).
func TestMCPServeAnswersLinesThatAreNotJSON(t *testing.T) {
	w := newTwoLive(t, false)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`garbage`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`,
		"\xff\xfe{",
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out, errb testproc.Buffer
	pr, pw := io.Pipe()
	c := newFactory(pr, &out, &errb, func(string) string { return "" })
	*c.flags.ptr(claudecode.FlagConfigDir), *c.flags.ptr(qwencode.FlagHome) = w.cfg, mcpQwenHome(w.cfg)
	tools, err := c.mcpTools(mcpFlags{timeout: 30 * time.Second, callTimeout: time.Minute, confirmTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	served := make(chan error, 1)
	var server MCPServer = mcpserve.Serve
	go func() { served <- serveTools(t.Context(), &mcpOptions{io: c.io, serveMCP: server}, tools) }()
	_, err = io.WriteString(pw, in)
	require.NoError(t, err, "the server stopped reading: %s", errb.String())
	// stdin stays open until the calls are answered (they run concurrently):
	// at its end the SDK cancels the calls still running.
	require.Eventually(t, func() bool {
		o := out.String()
		for _, id := range []string{`"id":0,`, `"id":1,`, `"id":2,`, `"id":3,`} {
			if !strings.Contains(o, id) {
				return false
			}
		}
		return true
	}, time.Minute, 10*time.Millisecond,
		"stdout: %s\nstderr: %s", out.String(), errb.String())
	require.NoError(t, pw.Close())
	require.NoError(t, <-served, "stderr: %s", errb.String())
	ids := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    *float64 `json:"id"`
			Error any      `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.ID != nil && m.Error == nil {
			ids[*m.ID] = true
		}
	}
	assert.Equal(t, map[float64]bool{0: true, 1: true, 2: true, 3: true}, ids, "stdout: %s\nstderr: %s", out.String(), errb.String())
	assert.Equal(t, 2, strings.Count(out.String(), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`), out.String())
	assert.Equal(t, 2, strings.Count(errb.String(), "is not JSON; answered with error -32700"), errb.String())
}
