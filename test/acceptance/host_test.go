//go:build unix

package acceptance

// peerctl --host end to end, hermetic: test/fakessh stands in for ssh
// ($PEERCTL_SSH) and runs the remote command line with /bin/sh -c, as an
// sshd runs it for a POSIX login shell; the far side is this very peerctl
// (on the PATH the shell sees), reading the same temp registry through
// $CLAUDE_CONFIG_DIR (local path flags are never sent).

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/test/testbin"
)

// hostWorld is sendWorld (one addressable live session, "inbox", whose
// socket is a recording listener) reached through the fake ssh.
type hostWorld struct {
	sendWorld
	bin    string // a folder holding peerctl, for the far side's PATH
	record string // fakessh's argv records
}

func newHostWorld(t *testing.T) hostWorld {
	t.Helper()
	w := hostWorld{sendWorld: newSendWorld(t, false), bin: t.TempDir(), record: t.TempDir()}
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(w.bin, "peerctl")))
	return w
}

// run runs the local peerctl with the fake ssh; extra are more variables
// (FAKESSH_MODE=..., FAKESSH_DOWN=...).
func (w hostWorld) run(t *testing.T, stdin []byte, extra []string, args ...string) result {
	t.Helper()
	return catRun(t, w.sessions, runOpts{Env: w.env(t, extra...), Stdin: stdin}, args...)
}

// env is the environment of a run with the fake ssh; extra as for run.
func (w hostWorld) env(t *testing.T, extra ...string) []string {
	t.Helper()
	return append([]string{"PATH=" + w.bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + t.TempDir(),
		"CLAUDE_CONFIG_DIR=" + w.config, "PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH), "FAKESSH_RECORD=" + w.record,
		"PEERCTL_HOST_TIMEOUT=10s"}, extra...)
}

// sshRuns is how many times the fake ssh ran.
func (w hostWorld) sshRuns(t *testing.T) int {
	entries, err := os.ReadDir(w.record)
	require.NoError(t, err)
	return len(entries)
}

// frameContent is the text a socket frame carried.
func frameContent(t *testing.T, frame []byte) string {
	var f struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal(frame, &f))
	return f.Message.Content
}

// TestHostSendArrivesByteExact: a text holding quotes, $(...), backticks,
// newlines, 64 KiB in all, reaches the session on the far side byte for
// byte, on stdin; nothing in it, or in an address, runs.
func TestHostSendArrivesByteExact(t *testing.T) {
	w := newHostWorld(t)
	marker := filepath.Join(t.TempDir(), "ran")
	evil := "a'; touch " + marker + "; ' $(touch " + marker + ") `touch " + marker + "`\n\"$HOME\" \\ ;|&\n"
	text := (evil + strings.Repeat("x", 64*1024))[:64*1024]
	r := w.run(t, []byte(text), nil, "send", "--host", "box", "--transport", "socket", "--json", "--no-confirm", w.id, "-")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var receipt struct {
		OK       bool   `json:"ok"`
		Host     string `json:"host"`
		Endpoint string `json:"endpoint"`
		Outcome  string `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &receipt), "%s", r.Stdout)
	assert.True(t, receipt.OK)
	assert.Equal(t, "box", receipt.Host)
	assert.True(t, strings.HasPrefix(receipt.Endpoint, "ssh:v1:box:cc-peer:v1:"), receipt.Endpoint)
	frames := w.listener.Wait(1)
	require.Len(t, frames, 1)
	assert.True(t, frameContent(t, frames[0]) == text, "the text arrived changed")

	for _, address := range []string{"a'; touch " + marker + "; '", "$(touch " + marker + ")", "`touch " + marker + "`", "x\ntouch " + marker} {
		r := w.run(t, nil, nil, "send", "--host", "box", "--transport", "socket", address, evil)
		assert.Equal(t, 3, r.Code, "%q: not_live on the far side; stderr %s", address, r.Stderr)
		assert.Contains(t, string(r.Stderr), "not_live")
	}
	_, err := os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "something in a text or address ran")

	// The remote command line is one argument after "--" and the destination.
	b, err := os.ReadFile(filepath.Join(w.record, firstEntry(t, w.record)))
	require.NoError(t, err)
	var argv []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a string
		require.NoError(t, json.Unmarshal([]byte(l), &a))
		argv = append(argv, a)
	}
	require.GreaterOrEqual(t, len(argv), 3)
	assert.Equal(t, []string{"--", "box"}, argv[len(argv)-3:len(argv)-1])
	assert.Contains(t, argv, "BatchMode=yes")
	assert.NotContains(t, argv[len(argv)-1], "touch", "the text travels on stdin, not in the command")
	assert.NotContains(t, argv[len(argv)-1], w.config, "local paths are not sent")
}

func firstEntry(t *testing.T, dir string) string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	return entries[0].Name()
}

// TestHostListMerges: this machine, a host, and a host that cannot be
// reached: every session that answered is listed with its host, one
// warning names the other, exit 10; the remote endpoint, pasted into send,
// reaches that session.
func TestHostListMerges(t *testing.T) {
	w := newHostWorld(t)
	r := w.run(t, nil, []string{"FAKESSH_DOWN=down"}, "list", "--json", "--host", ".", "--host", "box", "--host", "down")
	assert.Equal(t, 10, r.Code, "stderr: %s", r.Stderr)
	var got []struct {
		Host      string `json:"host"`
		SessionID string `json:"sessionId"`
		Endpoint  string `json:"endpoint"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "%s", r.Stdout)
	require.Len(t, got, 2)
	assert.Equal(t, "", got[0].Host)
	assert.Equal(t, "box", got[1].Host)
	assert.Equal(t, w.id, got[1].SessionID)
	assert.Equal(t, "ssh:v1:box:"+got[0].Endpoint, got[1].Endpoint)
	assert.Equal(t, 1, strings.Count(string(r.Stderr), "warning: host down: not listed"), "%s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "host_unreachable")

	// Every --json command prints a host's refusal as JSON too, doctor's included.
	for _, cmd := range [][]string{{"doctor"}, {"show", "x"}, {"list"}} {
		r := w.run(t, nil, []string{"FAKESSH_DOWN=down"}, append(cmd, "--json", "--host", "down")...)
		assert.Equal(t, 10, r.Code, "%s: stderr: %s", cmd, r.Stderr)
		var refused struct {
			OK      bool `json:"ok"`
			Refusal struct{ Reason string }
		}
		require.NoError(t, json.Unmarshal(r.Stdout, &refused), "%s: stdout: %s", cmd, r.Stdout)
		assert.Equal(t, "host_unreachable", refused.Refusal.Reason, "%s", cmd)
	}

	r = w.run(t, nil, nil, "list", "--host", ".", "--host", "box")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.True(t, strings.HasPrefix(string(r.Stdout), "HOST "), "%s", r.Stdout)
	assert.Contains(t, string(r.Stdout), "box ")

	r = w.run(t, nil, nil, "send", "--transport", "socket", "--no-confirm", got[1].Endpoint, "by the endpoint")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	frames := w.listener.Wait(1)
	require.Len(t, frames, 1)
	assert.Equal(t, "by the endpoint", frameContent(t, frames[0]))

	r = w.run(t, nil, nil, "show", "--json", got[1].Endpoint)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), `"host": "box"`)
}

// TestHostUnreachable: ssh's own failures (exit 255: refused, host key)
// are host_unreachable and deliver nothing; a connection that drops after
// the text was handed over is outcome_unknown.
func TestHostUnreachable(t *testing.T) {
	w := newHostWorld(t)
	for _, mode := range []string{"refuse", "hostkey"} {
		r := w.run(t, nil, []string{"FAKESSH_MODE=" + mode}, "send", "--host", "box", "--transport", "socket", w.id, "hello")
		assert.Equal(t, 10, r.Code, "%s: stderr %s", mode, r.Stderr)
		assert.Contains(t, string(r.Stderr), "peerctl: host_unreachable: ")
	}
	r := w.run(t, nil, []string{"FAKESSH_MODE=drop"}, "send", "--host", "box", "--transport", "socket", w.id, "hello")
	assert.Equal(t, 12, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "outcome_unknown")
	assert.Empty(t, w.listener.Frames(), "nothing was delivered")

	r = w.run(t, nil, []string{"FAKESSH_MODE=drop"}, "watch", "--host", "box", "--json")
	assert.Equal(t, 10, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), `"event":"lost"`)
}

// TestHostNoPeerctl: a far side without peerctl, or with one that does
// not speak this output protocol, is host_unreachable with the fix.
func TestHostNoPeerctl(t *testing.T) {
	w := newHostWorld(t)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH), "CLAUDE_CONFIG_DIR=" + w.config}
	r := catRun(t, w.sessions, runOpts{Env: env}, "list", "--host", "box")
	assert.Equal(t, 10, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl hosts install box")

	r = w.run(t, nil, []string{"FAKESSH_MODE=nohello"}, "list", "--host", "box")
	assert.Equal(t, 10, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl hosts install box")
}

// TestHostBadDest: a DEST that ssh could read as an option, or that holds
// white space or control characters, is a usage error before ssh runs.
func TestHostBadDest(t *testing.T) {
	w := newHostWorld(t)
	for _, dest := range []string{"-oProxyCommand=touch x", "-p", "a b", "box\n", "box\x1b[2J"} {
		r := w.run(t, nil, nil, "list", "--host", dest)
		assert.Equal(t, 2, r.Code, "%q: stderr %s", dest, r.Stderr)
		r = w.run(t, nil, nil, "send", "--host", dest, w.id, "hello")
		assert.Equal(t, 2, r.Code, "%q: stderr %s", dest, r.Stderr)
	}
	assert.Equal(t, 0, w.sshRuns(t), "ssh ran")
	assert.Empty(t, w.listener.Frames())
}

// TestHostHostileOutput: a far side that floods, never ends, or prints
// what is not peerctl's output cannot hang, flood or crash peerctl: each
// is host_unreachable within the host timeout.
func TestHostHostileOutput(t *testing.T) {
	w := newHostWorld(t)
	for _, mode := range []string{"huge", "endless", "silent", "malformed"} {
		start := time.Now()
		r := w.run(t, nil, []string{"FAKESSH_MODE=" + mode, "PEERCTL_HOST_TIMEOUT=3s"}, "list", "--host", "box")
		assert.Equal(t, 10, r.Code, "%s: stderr %s", mode, r.Stderr)
		assert.Less(t, len(r.Stderr), 4096, "%s: stderr is bounded", mode)
		catNoControl(t, r.Stderr)
		t.Logf("%s: %s in %s", mode, strings.TrimSpace(string(r.Stderr)), time.Since(start).Round(time.Millisecond))
	}
}

// TestHostEscapes: a far side's session whose name holds escape sequences
// is printed escaped, as a local one is.
func TestHostEscapes(t *testing.T) {
	w := newHostWorld(t)
	rec := catRecord(t, os.Getppid(), "evil\x1b[2J\x07\u202ename", "")
	catWriteJSON(t, w.sessions, catFile(os.Getppid()), rec)
	r := w.run(t, nil, nil, "list", "--host", "box", "--host", ".")
	require.Equal(t, 0, r.Code, "stderr %s", r.Stderr)
	catNoControl(t, r.Stdout)
	assert.Contains(t, string(r.Stdout), `evil\x1b[2J\a\u202ename`)
	r = w.run(t, nil, nil, "list", "--host", "box", "--json")
	require.Equal(t, 0, r.Code, "stderr %s", r.Stderr)
	assert.NotContains(t, string(r.Stdout), "\x1b")
	assert.NotContains(t, string(r.Stdout), "\u202e")
}

// hostOf is w reached through the fake ssh.
func hostOf(t *testing.T, w sendWorld) hostWorld {
	h := hostWorld{sendWorld: w, bin: t.TempDir(), record: t.TempDir()}
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(h.bin, "peerctl")))
	return h
}

// TestHostAwaitReplyAndRelay: the courier runs on the far side; the reply
// travels back (text on stdout, JSON with host), and a relay there carries
// sends and their receipts in order, every line with its host.
func TestHostAwaitReplyAndRelay(t *testing.T) {
	rw, _ := newReplyWorld(t, pong)
	w := hostOf(t, rw)
	courier := []string{"PEERCTL_CLAUDE=" + fakeClaudeBin(t), "FAKECLAUDE_SCENARIO=sent", "FAKECLAUDE_RECORD=" + w.sendWorld.record}
	r := w.run(t, nil, courier, "send", "--host", "box", "--await-reply=20s", "--no-confirm", w.id, "ping $(id) ünï")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "pong: ping $(id) ünï\n", string(r.Stdout))
	assert.Contains(t, string(r.Stderr), "queued:")
	assert.Contains(t, string(r.Stderr), "on box by courier", "the receipt, rendered here, names the host")

	r = w.run(t, nil, courier, "send", "--host", "box", "--await-reply=20s", "--no-confirm", "--json", w.id, "second")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		Host  string                `json:"host"`
		Reply struct{ Text string } `json:"reply"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "%s", r.Stdout)
	assert.Equal(t, "box", got.Host)
	assert.Equal(t, "pong: second", got.Reply.Text)

	var in strings.Builder
	for i := range 3 {
		req, _ := json.Marshal(map[string]any{"id": i, "to": w.id, "text": "n" + string(rune('0'+i))})
		in.Write(append(req, '\n'))
	}
	r = w.run(t, []byte(in.String()), courier, "relay", "--host", "box", "--name", "ci'bot")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var receipts []float64
	for _, l := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n") {
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &line), l)
		assert.Equal(t, "box", line["host"], l)
		if line["type"] == "receipt" {
			receipts = append(receipts, line["id"].(float64))
		}
	}
	assert.Equal(t, []float64{0, 1, 2}, receipts, "%s", r.Stdout)
}

// TestHostMCPTools: the MCP tools' host argument runs them on the far
// side; a bad host is an error result, and the server keeps serving.
func TestHostMCPTools(t *testing.T) {
	w := newHostWorld(t)
	env := []string{"PATH=" + w.bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + t.TempDir(),
		"CLAUDE_CONFIG_DIR=" + w.config, "PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH), "FAKESSH_DOWN=down"}
	p := startMCP(t, env, "mcp", "--confirm-timeout", "100ms")

	text, isErr := p.call(t, "list_sessions", map[string]any{"host": "box"})
	require.False(t, isErr, text)
	var list struct {
		Sessions []struct{ Host, SessionID, Endpoint string }
	}
	require.NoError(t, json.Unmarshal([]byte(text), &list))
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, "box", list.Sessions[0].Host)
	assert.True(t, strings.HasPrefix(list.Sessions[0].Endpoint, "ssh:v1:box:"))

	text, isErr = p.call(t, "show_session", map[string]any{"session": list.Sessions[0].Endpoint})
	require.False(t, isErr, text)
	assert.Contains(t, text, `"host":"box"`)

	text, isErr = p.call(t, "send_message", map[string]any{"to": w.id, "host": "box", "transport": "socket", "text": "via MCP $(id)"})
	require.False(t, isErr, text)
	assert.Contains(t, text, `"host":"box"`)
	frames := w.listener.Wait(1)
	require.Len(t, frames, 1)
	assert.Equal(t, "via MCP $(id)", frameContent(t, frames[0]))

	text, isErr = p.call(t, "list_sessions", map[string]any{"host": "down"})
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(text, "host_unreachable: "), text)

	// Several machines at once: those that answered are listed, each
	// session with its host; the one that did not is a note naming it.
	text, isErr = p.call(t, "list_sessions", map[string]any{"hosts": []string{".", "box", "down"}})
	require.False(t, isErr, text)
	var merged struct {
		Sessions []struct{ Host, SessionID string }
		Note     string
	}
	require.NoError(t, json.Unmarshal([]byte(text), &merged))
	var hosts []string
	for _, s := range merged.Sessions {
		assert.Equal(t, w.id, s.SessionID)
		hosts = append(hosts, s.Host)
	}
	assert.ElementsMatch(t, []string{"", "box"}, hosts)
	assert.Contains(t, merged.Note, "host down: not listed, its sessions are left out: host_unreachable")
	text, isErr = p.call(t, "list_sessions", map[string]any{"hosts": []string{"box", "-oProxyCommand=x"}})
	assert.True(t, isErr, text)
	text, isErr = p.call(t, "list_sessions", map[string]any{"host": "-oProxyCommand=x"})
	assert.True(t, isErr, text)
}

// TestHostWatchEvents: watch over this machine and a host prints each
// one's events with its host; the remote endpoint is the ssh:v1: form.
func TestHostWatchEvents(t *testing.T) {
	w := newHostWorld(t)
	cmd := exec.Command(peerctlBin(t), "watch", "--json", "--host", ".", "--host", "box")
	cmd.Env = []string{"PATH=" + w.bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + t.TempDir(),
		"CLAUDE_CONFIG_DIR=" + w.config, "PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH)}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	hosts := map[string]string{}
	for len(hosts) < 2 && sc.Scan() {
		var ev struct{ Event, Host, SessionID, Endpoint string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
		assert.Equal(t, "appeared", ev.Event)
		assert.Equal(t, w.id, ev.SessionID)
		hosts[ev.Host] = ev.Endpoint
	}
	require.Len(t, hosts, 2, "an event from each host")
	assert.Equal(t, "ssh:v1:box:"+hosts[""], hosts["box"])
}

// TestHostHintsQuoted: a command a refusal suggests is safe to paste: a
// DEST or an address that a shell would read as code is single-quoted,
// a plain word stays as it is.
func TestHostHintsQuoted(t *testing.T) {
	w := newHostWorld(t)
	r := w.run(t, nil, []string{"FAKESSH_MODE=drop"}, "send", "--host", "box", "a'; touch /tmp/pwn; '", "hi")
	assert.Equal(t, 12, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), `look (peerctl show --host box 'a'\''; touch /tmp/pwn; '\''') before`)

	r = w.run(t, nil, []string{"FAKESSH_MODE=nohello"}, "list", "--host", "$(touch${IFS}/tmp/pwnX)")
	assert.Equal(t, 10, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), `fix: peerctl hosts install '$(touch${IFS}/tmp/pwnX)'`)
}

// TestHostSendNoReceipt: a far side that exits 0 without a JSON receipt
// (text that is not JSON, a forged text receipt, nothing) had the text:
// send --host is outcome_unknown, never a success, in text mode too; a
// dry run is host_unreachable.
func TestHostSendNoReceipt(t *testing.T) {
	w := newHostWorld(t)
	for _, mode := range []string{"malformed", "forged", "quiet"} {
		r := w.run(t, nil, []string{"FAKESSH_MODE=" + mode}, "send", "--host", "box", w.id, "hello")
		assert.Equal(t, 12, r.Code, "%s: stderr %s", mode, r.Stderr)
		assert.Contains(t, string(r.Stderr), "peerctl: outcome_unknown: ", mode)
		assert.NotContains(t, string(r.Stdout), "delivered", mode)

		r = w.run(t, nil, []string{"FAKESSH_MODE=" + mode}, "send", "--host", "box", "--dry-run", w.id, "hello")
		assert.Equal(t, 10, r.Code, "%s: stderr %s", mode, r.Stderr)
	}
}

// TestHostWatchStartTimeout: watch --host waits for the far side's
// peerctl to answer at most $PEERCTL_HOST_TIMEOUT, as list does.
func TestHostWatchStartTimeout(t *testing.T) {
	w := newHostWorld(t)
	r := w.run(t, nil, []string{"FAKESSH_MODE=silent", "PEERCTL_HOST_TIMEOUT=1s"}, "watch", "--host", "box", "--json")
	assert.Equal(t, 10, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "no answer from peerctl on box within 1s")

	r = w.run(t, nil, []string{"PEERCTL_HOST_TIMEOUT=soon"}, "watch", "--host", "box", "--json")
	assert.Equal(t, 2, r.Code, "stderr %s", r.Stderr)
}

// TestHostFarSideExitCode: a far side that fails with a message on stderr
// only ends list --host with its exit code, its message printed once.
func TestHostFarSideExitCode(t *testing.T) {
	w := newHostWorld(t)
	r := w.run(t, nil, []string{scriptedFar(t, "echo 'peerctl: far away trouble' >&2\nexit 3\n")}, "list", "--host", "box")
	assert.Equal(t, 3, r.Code, "stderr %s", r.Stderr)
	assert.Equal(t, 1, strings.Count(string(r.Stderr), "far away trouble"), "stderr %s", r.Stderr)
}

// scriptedFar puts a far "peerctl" that says hello, then runs body, first
// on the PATH of w's far side; it returns the PATH variable to pass.
func scriptedFar(t *testing.T, body string) string {
	t.Helper()
	far := t.TempDir()
	script := "#!/bin/sh\necho '{\"hello\":\"peerctl\",\"outputProtocol\":" + strconv.Itoa(ports.RemoteProtocol) + ",\"version\":\"fake\"}'\n" + body
	require.NoError(t, os.WriteFile(filepath.Join(far, "peerctl"), []byte(script), 0o755))
	return "PATH=" + far + ":" + os.Getenv("PATH")
}

// TestHostBadSSH: a $PEERCTL_SSH that does not split into words, or is
// all blanks, is a usage error before anything runs, for every host.
func TestHostBadSSH(t *testing.T) {
	w := newHostWorld(t)
	for _, line := range []string{`ssh 'x`, "   "} {
		for _, args := range [][]string{{"list", "--host", ".", "--host", "box"}, {"list", "--host", "box"}, {"watch", "--host", "box"}, {"show", "--host", "box", w.id}} {
			r := w.run(t, nil, []string{"PEERCTL_SSH=" + line}, args...)
			assert.Equal(t, 2, r.Code, "%q %v: stderr %s", line, args, r.Stderr)
			assert.Contains(t, string(r.Stderr), "PEERCTL_SSH", "%q %v", line, args)
		}
	}
}

// TestHostForeignEndpoint: a far side's entry whose endpoint is an ssh:
// one (naming a third machine) or no endpoint at all is left out with a
// warning saying why, never printed as a session there.
func TestHostForeignEndpoint(t *testing.T) {
	w := newHostWorld(t)
	for bad, why := range map[string]string{"ssh:v1:evil:": "another machine's", "zz:": "its endpoint is none"} {
		far := t.TempDir()
		script := "#!/bin/sh\n" + domain.ShellQuote(filepath.Join(w.bin, "peerctl")) + ` "$@" | sed 's/"endpoint": *"/&` + bad + `/'` + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(far, "peerctl"), []byte(script), 0o755))
		r := w.run(t, nil, []string{"PATH=" + far + ":" + os.Getenv("PATH")}, "list", "--host", "box", "--json")
		assert.Equal(t, 0, r.Code, "stderr %s", r.Stderr)
		assert.NotContains(t, string(r.Stdout), bad)
		assert.NotContains(t, string(r.Stdout), w.id, "the entry is left out")
		assert.Contains(t, string(r.Stderr), "left out", bad)
		assert.Contains(t, string(r.Stderr), why, bad)
	}
}

// TestHostSharingOffWarnsOnce: where connections cannot be shared (a
// control folder open to others), every call still works, each on a
// connection of its own, and why is said in one warning line a run, not
// once a host or not at all (issue 27).
func TestHostSharingOffWarnsOnce(t *testing.T) {
	w := newHostWorld(t)
	run := t.TempDir()
	ctl := filepath.Join(run, "peerctl-ssh-"+strconv.Itoa(os.Geteuid()))
	require.NoError(t, os.Mkdir(ctl, 0o777))
	require.NoError(t, os.Chmod(ctl, 0o777))
	r := w.run(t, nil, []string{"XDG_RUNTIME_DIR=" + run}, "list", "--json", "--host", "box", "--host", "box2", "--host", "box3")
	require.Equal(t, 0, r.Code, "stderr %s", r.Stderr)
	assert.Equal(t, 1, strings.Count(string(r.Stderr), "connection sharing off"), "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl: warning: ssh: connection sharing off: "+ctl+" is open to others")
	assert.Equal(t, 3, strings.Count(string(r.Stdout), `"sessionId"`), "each host listed; stdout %s", r.Stdout)
}

// TestHostDoctorPrintsAsHere: doctor is one use case for here and there: a
// far side's report (here the same machine behind the fake ssh) prints as
// this machine's does, table, summary, problems and JSON alike.
func TestHostDoctorPrintsAsHere(t *testing.T) {
	w := newHostWorld(t)
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}} {
		here := w.run(t, nil, nil, args...)
		there := w.run(t, nil, nil, append(args, "--host", "box")...)
		assert.Equal(t, here.Code, there.Code, "%q: stderr here: %s\nthere: %s", args, here.Stderr, there.Stderr)
		// Each run has a home of its own (qwen.dir, codex.home).
		home := regexp.MustCompile(`(/TestHostDoctorPrintsAsHere\d+/)\d+/`)
		assert.Equal(t, home.ReplaceAllString(string(here.Stdout), "${1}N/"), home.ReplaceAllString(string(there.Stdout), "${1}N/"), "%q", args)
		assert.Equal(t, problemLinesOf(here.Stderr), problemLinesOf(there.Stderr), "%q: each problem once", args)
		assert.NotEmpty(t, here.Stdout)
	}
}

func problemLinesOf(stderr []byte) []string {
	var out []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if strings.HasPrefix(l, "peerctl: problem: ") {
			out = append(out, l)
		}
	}
	return out
}
