//go:build unix

package sshhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
)

// Tests that run /bin/sh: the quoting through a real POSIX shell, and
// calls through test/fakessh.

// TestQuoteThroughShell: every word reaches a program byte for byte through
// sh -c, and nothing in it runs.
func TestQuoteThroughShell(t *testing.T) {
	for name, word := range trickyWords() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", "printf %s "+domain.ShellQuote(word))
			cmd.Dir = dir
			out, err := cmd.Output()
			require.NoError(t, err)
			assert.True(t, string(out) == word, "got %q", clipq(out))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "something ran")
		})
	}
}

// FuzzQuote: any word without NUL (argv cannot hold one) is one argument,
// byte for byte, after sh -c.
func FuzzQuote(f *testing.F) {
	for _, w := range trickyWords() {
		if len(w) < 1000 {
			f.Add(w)
		}
	}
	f.Fuzz(func(t *testing.T, word string) {
		if strings.ContainsRune(word, 0) {
			return
		}
		out, err := exec.Command("/bin/sh", "-c", `f() { printf %s "$#:$1"; }; f `+domain.ShellQuote(word)).Output()
		require.NoError(t, err)
		require.Equal(t, "1:"+word, string(out))
	})
}

// farSide writes a stand-in for the far side's peerctl: it says hello,
// prints each argument on a line of its own, then its stdin.
func farSide(t *testing.T, helloLine string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "peerctl")
	script := "#!/bin/sh\nprintf '%s\\n' '" + helloLine + "'\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\ncat\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

var okHello = `{"hello":"peerctl","outputProtocol":` + strconv.Itoa(ports.RemoteProtocol) + `,"version":"v9"}`

func channel(t *testing.T, program string, vars map[string]string) *sshhost.Channel {
	t.Helper()
	if vars == nil {
		vars = map[string]string{}
	}
	vars["PEERCTL_SSH"] = testbin.Build(t, testbin.FakeSSH)
	vars["XDG_RUNTIME_DIR"] = t.TempDir()
	for k, v := range vars {
		if strings.HasPrefix(k, "FAKESSH_") {
			t.Setenv(k, v)
		}
	}
	c, err := sshhost.New(sshhost.Options{Getenv: env(vars), Book: book{"box": {Program: program}}, Version: "v1-local", HelloTimeout: 2 * time.Second, ConnectTimeout: time.Second})
	require.NoError(t, err)
	return c
}

func TestCallArgumentsAndStdinArriveExact(t *testing.T) {
	c := channel(t, farSide(t, okHello), nil)
	text := strings.Repeat("$(id) `id` 'a'; touch x; '\n", 64*1024/27)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"send", "--", "a'; touch x; '", "$(id)"}, Stdin: strings.NewReader(text), EndInput: true})
	require.NoError(t, err)
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, "v9", res.Version)
	want := "<--hello=" + strconv.Itoa(ports.RemoteProtocol) + ">\n<send>\n<-->\n<a'; touch x; '>\n<$(id)>\n" + text
	assert.True(t, string(res.Stdout) == want, "stdout differs: %q", clipq(res.Stdout))
}

func TestCallRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for name, tc := range map[string]struct {
		program string
		mode    string
		detail  string
		lost    bool
	}{
		"ssh refused":       {mode: "refuse", detail: "Permission denied"},
		"host key":          {mode: "hostkey", detail: "Host key verification failed"},
		"no peerctl":        {program: "/nonexistent/peerctl", detail: "peerctl hosts install box"},
		"other protocol":    {program: farSide(t, `{"hello":"peerctl","outputProtocol":7,"version":"v0.7"}`), detail: "box runs peerctl v0.7 (output protocol 7), this is peerctl v1-local (output protocol " + strconv.Itoa(ports.RemoteProtocol) + ")"},
		"not a hello":       {program: farSide(t, `hello world`), detail: "not peerctl's hello"},
		"hello, extra key":  {program: farSide(t, `{"hello":"peerctl","outputProtocol":`+strconv.Itoa(ports.RemoteProtocol)+`,"version":"v","x":1}`), detail: "not peerctl's hello"},
		"silent":            {mode: "silent", detail: "no answer from peerctl on box"},
		"dropped":           {mode: "drop", detail: "lost", lost: true},
		"huge":              {mode: "huge", detail: "box was stopped: it printed more than", lost: true},
		"old peerctl, -h=1": {program: "/bin/false", detail: "did not start as peerctl"},
		// Not "no peerctl there, fix: hosts install": ssh itself was ended.
		"ssh killed": {mode: "killed", detail: "ssh box was ended (signal: killed) before the far side said hello: Authenticated to box."},
	} {
		t.Run(name, func(t *testing.T) {
			program := tc.program
			if program == "" {
				program = farSide(t, okHello)
			}
			c := channel(t, program, map[string]string{"FAKESSH_MODE": tc.mode})
			_, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"list"}, Stdin: strings.NewReader("text"), EndInput: true, MaxOutput: 1 << 20})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
			assert.Contains(t, r.Detail, tc.detail)
			if tc.mode != "drop" {
				assert.NotContains(t, r.Detail, "lost", "only a lost connection is worded so")
			}
			assert.Equal(t, tc.lost, errors.Is(err, ports.ErrConnectionLost))
		})
	}
}

// An ssh that shares no connection closes stdout before it exits with the
// far side's status; the call waits for that exit rather than killing it
// and calling the connection lost (issue 27: 7 of 20 parallel lists exit 10).
func TestCallAndStreamWaitForSSHToExit(t *testing.T) {
	c := channel(t, farSide(t, okHello), map[string]string{"FAKESSH_MODE": "lingers"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"list"}, Stdin: strings.NewReader("text"), EndInput: true})
	require.NoError(t, err)
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, "<--hello="+strconv.Itoa(ports.RemoteProtocol)+">\n<list>\ntext", string(res.Stdout))

	s, err := c.Stream(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"watch"}, Stdin: strings.NewReader(""), EndInput: true})
	require.NoError(t, err)
	var lines []string
	for l := range s.Lines() {
		lines = append(lines, string(l))
	}
	res, err = s.Wait()
	require.NoError(t, err, "an ssh that exits after its stdout ends is no lost connection")
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, []string{"<--hello=" + strconv.Itoa(ports.RemoteProtocol) + ">", "<watch>"}, lines)
}

func TestCallEndsWithItsContext(t *testing.T) {
	c := channel(t, farSide(t, okHello), map[string]string{"FAKESSH_MODE": "endless"})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"list"}})
	assert.ErrorIs(t, err, ports.ErrConnectionLost)
}

func TestStream(t *testing.T) {
	c := channel(t, farSide(t, okHello), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Stream(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"watch"}, Stdin: strings.NewReader("in 1\nin 2"), EndInput: true})
	require.NoError(t, err)
	var got []string
	for l := range s.Lines() {
		got = append(got, string(l))
	}
	res, err := s.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, []string{"<--hello=" + strconv.Itoa(ports.RemoteProtocol) + ">", "<watch>", "in 1", "in 2"}, got)
}

// The far side's stdin stays open after the call's Stdin has been handed
// over, until the call ends: its end is how the far side's peerctl knows
// that its caller is gone (a far side that waits for it never sees it
// while the call runs), unless EndInput asks for it.
func TestStdinStaysOpenUntilTheCallEnds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "peerctl")
	script := "#!/bin/sh\nprintf '%s\\n' '" + okHello + "'\nhead -c 4\ncat >/dev/null\necho '<eof>'\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	c := channel(t, p, nil)
	for _, end := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"list"}, Stdin: strings.NewReader("text"), EndInput: end})
		cancel()
		if end {
			require.NoError(t, err)
			assert.Equal(t, "text<eof>\n", string(res.Stdout))
			continue
		}
		assert.ErrorIs(t, err, ports.ErrConnectionLost, "the call ended by its deadline")
		assert.Equal(t, "text", string(res.Stdout), "no end of stdin while the call ran")
	}
}

// recorded reads the argv files fakessh wrote into dir whose names start
// with prefix ("argv-": calls, "master-": master connections started).
func recorded(t *testing.T, dir, prefix string) [][]string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out [][]string
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), prefix) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		var argv []string
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			w, err := strconv.Unquote(l)
			require.NoError(t, err)
			argv = append(argv, w)
		}
		out = append(out, argv)
	}
	return out
}

func optionValue(argv []string, name string) string {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// The master connection is started apart from the calls, once per
// configuration and Channel (ControlMaster=yes, ControlPersist, -N -f);
// calls only use it (ControlMaster=no, its ControlPath), so ending a
// call's process group never ends it or its ProxyCommand, and parallel
// calls never race to become it (issue 27). A master that cannot start
// leaves each call to connect on its own, sharing nothing.
func TestMasterStartsApartFromTheCalls(t *testing.T) {
	if !sshhost.SharesConnections {
		t.Skip("no connection sharing here")
	}
	rec := t.TempDir()
	c := channel(t, farSide(t, okHello), map[string]string{"FAKESSH_RECORD": rec})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		_, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"list"}, Stdin: strings.NewReader(""), EndInput: true})
		require.NoError(t, err)
	}
	masters, calls := recorded(t, rec, "master-"), recorded(t, rec, "argv-")
	require.Len(t, masters, 1, "one master for two calls")
	require.Len(t, calls, 2)
	m := strings.Join(masters[0], " ")
	assert.Contains(t, m, "-o ControlMaster=yes")
	assert.Contains(t, m, "-o ControlPersist=60")
	assert.Contains(t, m, "-N -f -- box")
	for _, call := range calls {
		assert.Equal(t, "no", optionValue(call, "ControlMaster"))
		assert.Equal(t, optionValue(masters[0], "ControlPath"), optionValue(call, "ControlPath"), "the call uses the master's socket")
	}

	rec = t.TempDir()
	c = channel(t, farSide(t, okHello), map[string]string{"FAKESSH_RECORD": rec, "FAKESSH_MODE": "hostkey"})
	_, err := c.Call(ctx, ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"list"}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Contains(t, r.Detail, "Host key verification failed", "the call's own ssh says why")
	calls = recorded(t, rec, "argv-")
	require.Len(t, calls, 1)
	assert.Equal(t, "none", optionValue(calls[0], "ControlPath"), "no master: nothing shared")
}

// A send interrupted (Ctrl-C) after the far side had its text, while it
// awaits the reply, reads as the far side says, as a send interrupted here
// reads: told that its caller is gone, the far peerctl ends its wait and
// prints its receipt (delivered, no_reply, exit 9), and that receipt is the
// send's, not outcome_unknown. (Issue 41.)
func TestNodeSendInterruptedTakesTheFarReceipt(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "had-the-text")
	receipt, err := json.Marshal(wire.Receipt{OK: false, Outcome: "delivered", Transport: "courier", Harness: "claude-code", SessionID: "s1", PID: 7, Name: "proj-89",
		Refusal: &wire.RefusalBody{Reason: "no_reply", Detail: "the message was handed over (delivered, msg_id m1) but the wait was interrupted before a reply came", ExitCode: 9}})
	require.NoError(t, err)
	// It says hello, reads the 2-byte text, says it has it, waits for its
	// caller to be gone (its stdin's end), then prints its receipt.
	p := filepath.Join(t.TempDir(), "peerctl")
	script := "#!/bin/sh\nprintf '%s\\n' '" + okHello + "'\nhead -c 2 >/dev/null\n: > '" + marker + "'\ncat >/dev/null\nprintf '%s\\n' '" + string(receipt) + "'\nexit 9\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	n := sshhost.NewNode(channel(t, p, nil), dest(t, "box"), time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sent wire.Sent
		err  error
	}
	done := make(chan result, 1)
	go func() {
		sent, err := n.Send(ctx, wire.SendQuery{Address: "proj-89", Text: "hi", Timeout: time.Minute, AwaitReply: 10 * time.Minute})
		done <- result{sent, err}
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, 60*time.Second, 10*time.Millisecond, "the far side never had the text")
	cancel() // Ctrl-C
	got := <-done
	require.NoError(t, got.err)
	assert.Equal(t, 9, got.sent.Code)
	assert.Equal(t, "delivered", got.sent.Receipt.Outcome)
	require.NotNil(t, got.sent.Receipt.Refusal)
	assert.Equal(t, "no_reply", got.sent.Receipt.Refusal.Reason)
	assert.Equal(t, "box", got.sent.Receipt.Host)
}

// A watch whose connection is lost says why in the connection's words
// (ssh's own last lines, or that it said none), never in a note the far
// peerctl printed earlier on the same stderr; a far watch that ends by
// itself says its own last words. (Issue 41.)
func TestNodeWatchLostSaysTheConnectionsWords(t *testing.T) {
	for name, tc := range map[string]struct {
		tail, want string
	}{
		"ssh says why":       {"echo 'Timeout, server box not responding.' >&2\nexit 255\n", "ssh exit 255: Timeout, server box not responding."},
		"ssh says nothing":   {"exit 255\n", "ssh exit 255: it said nothing of its own"},
		"the far side ended": {"echo 'peerctl: host_unreachable: its registry went away' >&2\nexit 10\n", "its last words: peerctl: host_unreachable: its registry went away"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "peerctl")
			script := "#!/bin/sh\nprintf '%s\\n' '" + okHello + "'\necho 'peerctl: note: codex: a stray far note' >&2\n" + tc.tail
			require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
			n := sshhost.NewNode(channel(t, p, nil), dest(t, "box"), time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := n.Watch(ctx, func(wire.Event) bool { return true }, func(string) {})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
			assert.Contains(t, r.Detail, tc.want)
			assert.NotContains(t, r.Detail, "stray far note")
		})
	}
}

// A send that waits, asked for its events (wire.WithSendEvents), tells
// each as the far side prints it, before the far side ends: here the far
// side prints its receipt only once the test, told the hand-over, lets
// it. A far side that prints no events (an older peerctl, which does not
// know wire.SendEventsEnv) still gives its receipt.
func TestNodeSendTellsTheFarEventsAsTheyCome(t *testing.T) {
	receipt, err := json.MarshalIndent(wire.Receipt{OK: false, Outcome: "delivered", Transport: "courier", Harness: "claude-code", SessionID: "s1", PID: 7, Name: "proj-89",
		Endpoint: "cc-peer:v1:7:proj-89:/tmp/s.sock",
		Refusal:  &wire.RefusalBody{Reason: "no_reply", Detail: "the message was handed over (delivered, msg_id m1) but the session ended (its process 7 exited) after 1s", ExitCode: 9}}, "", "  ")
	require.NoError(t, err)
	handed, err := json.Marshal(wire.SendEvent{SendEvent: wire.SendHanded, Receipt: &wire.Receipt{OK: true, Outcome: "delivered", Name: "proj-89",
		Endpoint: "cc-peer:v1:7:proj-89:/tmp/s.sock"}, Reply: true, LeftMs: 60000})
	require.NoError(t, err)
	for _, knows := range []bool{true, false} {
		t.Run(map[bool]string{true: "events", false: "older far side"}[knows], func(t *testing.T) {
			dir := t.TempDir()
			gate := filepath.Join(dir, "told")
			events := ""
			if knows {
				events = "if [ \"$" + wire.SendEventsEnv + "\" = 1 ]; then printf '%s\\n' '" + string(handed) + "' '{\"sendEvent\":\"someday\",\"more\":1}' '{\"sendEvent\":\"targetWaiting\",\"waitingFor\":\"dialog open\"}'; " +
					"i=0; while [ ! -e '" + gate + "' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; fi\n"
			}
			p := filepath.Join(dir, "peerctl")
			script := "#!/bin/sh\nprintf '%s\\n' '" + okHello + "'\nhead -c 2 >/dev/null\n" + events + "cat <<'EOF'\n" + string(receipt) + "\nEOF\nexit 9\n"
			require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
			n := sshhost.NewNode(channel(t, p, nil), dest(t, "box"), time.Minute)
			var got []wire.SendEvent
			ctx := wire.WithSendEvents(context.Background(), func(ev wire.SendEvent) {
				got = append(got, ev)
				if len(got) == 3 {
					require.NoError(t, os.WriteFile(gate, nil, 0o600))
				}
			})
			sent, err := n.Send(ctx, wire.SendQuery{Address: "proj-89", Text: "hi", Timeout: time.Minute, AwaitReply: 10 * time.Minute})
			require.NoError(t, err)
			assert.Equal(t, 9, sent.Code)
			assert.Equal(t, "box", sent.Receipt.Host)
			require.NotNil(t, sent.Receipt.Refusal)
			assert.Equal(t, "no_reply", sent.Receipt.Refusal.Reason)
			if !knows {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 3, "told before the receipt, which the far side printed only after")
			assert.Equal(t, wire.SendHanded, got[0].SendEvent)
			require.NotNil(t, got[0].Receipt)
			assert.Equal(t, "box", got[0].Receipt.Host, "the far receipt names its host")
			assert.Equal(t, "ssh:v1:box:cc-peer:v1:7:proj-89:/tmp/s.sock", got[0].Receipt.Endpoint)
			assert.Equal(t, time.Minute, got[0].Left())
			assert.Equal(t, "someday", got[1].SendEvent, "a kind this build does not know, with fields it does not know, is handed on for the caller to skip")
			assert.Equal(t, "dialog open", got[2].WaitingFor)
		})
	}
}
