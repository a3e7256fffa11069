//go:build unix

package acceptance

// peerctl mcp as a real process: an MCP SDK client starts the built binary
// and talks to it over its stdin and stdout, with the fake claude as the
// courier and a recording Unix listener as the session's inbox socket.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// mcpProc is a running `peerctl mcp` and a client session connected to it.
type mcpProc struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *testproc.Buffer
}

// startMCP starts `peerctl <args>` (args include "mcp") with env and
// connects an MCP client to it. The process is closed when the test ends.
func startMCP(t *testing.T, env []string, args ...string) *mcpProc {
	t.Helper()
	cmd := exec.Command(peerctlWithMCP(t), args...)
	cmd.Env = env
	var stderr testproc.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "acceptance", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "connect; stderr: %s", stderr.String())
	p := &mcpProc{cs: cs, cmd: cmd, stderr: &stderr}
	t.Cleanup(func() { _ = cs.Close() })
	return p
}

func (p *mcpProc) call(t *testing.T, tool string, args map[string]any) (text string, isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "%s; stderr: %s", tool, p.stderr.String())
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	if !res.IsError {
		structured, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.JSONEq(t, tc.Text, string(structured), "text and structured content agree")
	}
	return tc.Text, res.IsError
}

// The binary serves every tool over stdio, honours --config-dir, delivers
// by the courier (the default) and by the socket, and ends with exit 0
// when its stdin closes.
func TestMCPOverStdio(t *testing.T) {
	w := newSendWorld(t, false)
	p := startMCP(t, w.env(t, "sent"), "--config-dir", w.config, "mcp", "--confirm-timeout", "100ms")

	text, isErr := p.call(t, "list_sessions", map[string]any{})
	require.False(t, isErr, text)
	var list struct {
		Sessions []struct{ SessionID, Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(text), &list))
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, w.id, list.Sessions[0].SessionID)

	text, isErr = p.call(t, "show_session", map[string]any{"session": "inbox"})
	require.False(t, isErr, text)
	assert.Contains(t, text, `"verdict":"live"`)

	const msg = "by MCP: \"quoted\" ünï\nsecond line"
	text, isErr = p.call(t, "send_message", map[string]any{"to": "inbox", "text": msg})
	require.False(t, isErr, text)
	var receipt struct {
		OK                 bool
		Outcome, Transport string
		SessionID          string `json:"sessionId"`
		MsgID              string `json:"msgId"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &receipt))
	assert.True(t, receipt.OK)
	assert.Equal(t, "courier", receipt.Transport)
	assert.Equal(t, "queued", receipt.Outcome, "no transcript here: Claude Code's word stands")
	assert.NotEmpty(t, receipt.MsgID, "Claude Code's msg_id")
	assert.Equal(t, w.id, receipt.SessionID)
	var sent struct{ To, Message string }
	require.NoError(t, json.Unmarshal([]byte(w.fakeFile(t, "sent.jsonl")), &sent))
	assert.Equal(t, msg, sent.Message, "the courier's SendMessage carried the text")
	require.Len(t, w.listener.Wait(1), 1, "the courier posted once")

	text, isErr = p.call(t, "send_message", map[string]any{"to": w.id, "text": msg, "transport": "socket"})
	require.False(t, isErr, text)
	require.NoError(t, json.Unmarshal([]byte(text), &receipt))
	assert.Equal(t, "posted", receipt.Outcome)
	assert.Equal(t, "socket", receipt.Transport)
	frames := w.listener.Wait(2)
	require.Len(t, frames, 2)
	assert.Contains(t, string(frames[1]), mustJSON(t, msg))

	text, isErr = p.call(t, "send_message", map[string]any{"to": "nobody", "text": "hi"})
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(text, "not_live: "), text)
	text, isErr = p.call(t, "send_message", map[string]any{"to": "inbox"})
	assert.True(t, isErr)
	assert.Contains(t, text, "text")

	require.NoError(t, p.cs.Close(), "closing stdin ends the server cleanly (exit 0); stderr: %s", p.stderr.String())
	assert.Equal(t, 0, p.cmd.ProcessState.ExitCode())
	assert.Empty(t, p.stderr.String(), "nothing said on stderr")
}

// A client that goes away mid-send ends the call with SIGTERM, as MCP's
// stdio shutdown has it (close the server's stdin, wait, then SIGTERM): the
// courier's whole process group is ended and peerctl exits 0. Closing stdin
// alone leaves the call running (every call read is answered, as relay
// does), bounded by --call-timeout. The client here is raw JSON-RPC lines:
// the SDK's client waits for its own calls before it closes.
func TestMCPClientGoneMidSendEndsTheCourier(t *testing.T) {
	for _, how := range []string{"stdin closed, then SIGTERM", "SIGTERM"} {
		t.Run(how, func(t *testing.T) { testMCPClientGone(t, how == "SIGTERM") })
	}
}

func testMCPClientGone(t *testing.T, term bool) {
	w := newSendWorld(t, false)
	cmd := exec.Command(peerctlWithMCP(t), "--config-dir", w.config, "mcp", "--timeout", "5m", "--call-timeout", "5m")
	cmd.Env = w.env(t, "fork_hang")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var stdout, stderr testproc.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"inbox","text":"hang"}}}`,
	} {
		_, err := io.WriteString(stdin, line+"\n")
		require.NoError(t, err)
	}
	children := filepath.Join(w.record, "children")
	require.Eventually(t, func() bool { _, err := os.Stat(children); return err == nil },
		20*time.Second, 10*time.Millisecond, "the fake claude never started its child; stderr: %s", stderr.String())
	var pid, pgid int
	_, err = fmt.Sscan(w.fakeFile(t, "pid"), &pid, &pgid)
	require.NoError(t, err)
	group := []int{pid}
	for _, f := range strings.Fields(w.fakeFile(t, "children")) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		group = append(group, n)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	if !term {
		require.NoError(t, stdin.Close())
		select {
		case err = <-exited:
			exited <- err // for the cleanup
			t.Fatalf("peerctl ended (%v) with the send still running; stderr: %s", err, stderr.String())
		case <-time.After(time.Second): // the send read before stdin closed is still served
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	const bound = 20 * time.Second // the courier's TERM-to-KILL grace is 2 s: a bound, not a speed claim
	select {
	case err = <-exited:
		exited <- err // for the cleanup
	case <-time.After(bound):
		t.Fatalf("peerctl did not end within %s; stderr: %s", bound, stderr.String())
	}
	require.NoError(t, err, "exit 0; stderr: %s", stderr.String())
	for _, pid := range group {
		assert.Eventually(t, func() bool { return !procAlive(pid) }, 5*time.Second, 10*time.Millisecond,
			"process %d of the courier's group is still running", pid)
	}
}

func TestMCPUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "extra"},
		{"mcp", "--call-timeout", "0s"},
		{"mcp", "--timeout", "-1s"},
		{"mcp", "--confirm-timeout", "0s"},
		{"mcp", "--no-such-flag"},
	} {
		r := runPeerctl(t, runOpts{}, args...)
		assert.Equal(t, 2, r.Code, "%q: stderr %s", args, r.Stderr)
		assert.Empty(t, r.Stdout, "%q: stdout is the protocol's, a usage error writes nothing there", args)
	}
}

// `peerctl mcp` runs peerctl-mcp from beside peerctl (through a symlink to
// peerctl too), else from PATH (also when the one beside is not
// executable); with neither it says how to get one and exits 1, and a
// peerctl-mcp that serves no MCP either (a copy of peerctl) is an error, not
// a loop. stdout stays the protocol's: nothing there.
func TestMCPRunsPeerctlMCP(t *testing.T) {
	peerctl, mcpBin := peerctlBin(t), testbin.Build(t, testbin.PeerctlMCP)
	copyTo := func(dir, name, from string) string {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		to := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(to, b, 0o755))
		return to
	}
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	env := func(path string) []string { return []string{"PATH=" + path, "HOME=" + t.TempDir()} }
	// serves runs bin args, writes initialize, and checks the answer is
	// peerctl's server; then closes stdin and checks exit 0.
	serves := func(t *testing.T, bin string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr testproc.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		_, err = stdin.Write(initialize)
		require.NoError(t, err)
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		require.NoError(t, err, "stderr: %s", stderr.String())
		var resp struct {
			Result struct {
				ServerInfo struct{ Name string } `json:"serverInfo"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(line, &resp), "stdout: %s", line)
		assert.Equal(t, "peerctl", resp.Result.ServerInfo.Name)
		require.NoError(t, stdin.Close())
		require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	}
	empty := t.TempDir()

	alone := copyTo(t.TempDir(), "peerctl", peerctl)
	r := runPeerctl(t, runOpts{Bin: alone, Env: env(empty), Stdin: initialize}, "mcp")
	assert.Equal(t, 1, r.Code, "stderr: %s", r.Stderr)
	assert.Empty(t, r.Stdout)
	assert.Contains(t, string(r.Stderr), "there is none beside this peerctl")
	assert.Contains(t, string(r.Stderr), "make build")
	assert.NotContains(t, string(r.Stderr), "go run", "one way to install, said once")
	assert.Less(t, len(r.Stderr), 360, "a refusal a person reads: %s", r.Stderr)

	onPath := t.TempDir()
	copyTo(onPath, "peerctl-mcp", mcpBin)
	serves(t, alone, env(empty+":"+onPath), "mcp")
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(alone), "peerctl-mcp"), []byte("not a program"), 0o600))
	serves(t, alone, env(empty+":"+onPath), "mcp")

	link := filepath.Join(t.TempDir(), "peerctl")
	require.NoError(t, os.Symlink(peerctl, link))
	serves(t, link, env(empty), "--config-dir", t.TempDir(), "mcp")

	fake := t.TempDir()
	copyTo(fake, "peerctl-mcp", peerctl)
	r = runPeerctl(t, runOpts{Bin: copyTo(fake, "peerctl", peerctl), Env: env(empty), Stdin: initialize}, "mcp")
	assert.Equal(t, 1, r.Code, "stderr: %s", r.Stderr)
	assert.Empty(t, r.Stdout)
	assert.Contains(t, string(r.Stderr), "has no MCP server linked in")
}

// Requests piped in with stdin closed right after them are all answered
// before peerctl exits: it used to answer none (the calls were cancelled
// at the end of stdin).
func TestMCPAnswersRequestsPipedBeforeEOF(t *testing.T) {
	cmd := exec.Command(peerctlWithMCP(t), "--config-dir", t.TempDir(), "--qwen-home", t.TempDir(), "--codex-home", t.TempDir(), "mcp")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`,
	}, "\n") + "\n")
	var stderr testproc.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct{ ID json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		ids[string(m.ID)] = true
	}
	assert.Equal(t, map[string]bool{"0": true, "1": true, "2": true}, ids, "stdout: %s\nstderr: %s", out, stderr.String())
}
