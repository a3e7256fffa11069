package acceptance

// send --await-reply and peerctl relay end to end, hermetic: the fake
// claude as the courier (a peer with its own inbox socket, as Claude Code
// is) and Unix listeners as the target sessions, which answer a
// cross-session message by posting a reply to the sender's socket, as a
// session's SendMessage to "uds:<from>" does.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testproc"
)

var wrapped = regexp.MustCompile(`(?s)^<cross-session-message from="uds:([^"]*)" from-name="([^"]*)"[^>]*>\n(.*)\n</cross-session-message>$`)

// replier is a session's inbox socket at path whose session answers every
// cross-session message: answer(text) returns the replies to post, each
// {from socket, text}, to the sender's socket.
type replier struct {
	path string
	ln   net.Listener
	mu   sync.Mutex
	got  []string
	wg   sync.WaitGroup
}

type post struct{ from, name, text string }

func startReplier(t *testing.T, path, name string, answer func(text string) []post) *replier {
	t.Helper()
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	r := &replier{path: path, ln: ln}
	t.Cleanup(func() { _ = ln.Close(); r.wg.Wait() })
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(io.LimitReader(c, 4<<20))
			c.Close()
			var frame struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(bytes.TrimSpace(b), &frame) != nil {
				continue
			}
			m := wrapped.FindStringSubmatch(frame.Message.Content)
			if m == nil {
				continue
			}
			r.mu.Lock()
			r.got = append(r.got, m[3])
			r.mu.Unlock()
			for _, p := range answer(m[3]) {
				from, pname := p.from, p.name
				if from == "" {
					from, pname = path, name
				}
				content := fmt.Sprintf("<cross-session-message from=\"uds:%s\" from-name=\"%s\" from-mode=\"prompting\">\n%s\n</cross-session-message>", from, pname, p.text)
				line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}})
				if conn, err := net.Dial("unix", m[1]); err == nil {
					_, _ = conn.Write(append(line, '\n'))
					conn.Close()
				}
			}
		}
	}()
	return r
}

func pong(text string) []post { return []post{{text: "pong: " + text}} }

// newHeldReplyWorld is newReplyWorld whose session answers "pong: TEXT"
// only once release is called (a test of order: what the command prints
// while it waits); release is also called at the test's end, before the
// replier's own cleanup waits for it.
func newHeldReplyWorld(t *testing.T) (sendWorld, func()) {
	answer := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(answer) }) }
	w, _ := newReplyWorld(t, func(text string) []post {
		<-answer
		return pong(text)
	})
	t.Cleanup(release)
	return w, release
}

// newReplyWorld is newSendWorld whose session "inbox" answers as answer
// says; it returns the world and the session's socket path.
func newReplyWorld(t *testing.T, answer func(string) []post) (sendWorld, string) {
	t.Helper()
	config, sessions := catRegistry(t)
	sock := filepath.Join(catSocketDir(t), "in.sock")
	rec := catRecord(t, os.Getpid(), "inbox", sock)
	catWriteJSON(t, sessions, catFile(os.Getpid()), rec)
	startReplier(t, sock, "inbox", answer)
	return sendWorld{config: config, sessions: sessions, id: rec["sessionId"].(string), record: t.TempDir()}, sock
}

func TestSendAwaitReplyPrintsTheReply(t *testing.T) {
	w, sock := newReplyWorld(t, pong)
	r := w.send(t, "sent", nil, "--await-reply=20s", "--no-confirm", w.id, "ping ünï")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "pong: ping ünï\n", string(r.Stdout), "stdout is the reply and nothing else")
	assert.Contains(t, string(r.Stderr), "queued:", "the receipt line goes to stderr")

	r = w.send(t, "sent", nil, "--await-reply=20s", "--no-confirm", "--json", w.id, "second")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		OK    bool   `json:"ok"`
		MsgID string `json:"msgId"`
		Reply struct {
			Text, FromName, From, At string
		} `json:"reply"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.True(t, got.OK)
	assert.NotEmpty(t, got.MsgID)
	assert.Equal(t, "pong: second", got.Reply.Text)
	assert.Equal(t, "inbox", got.Reply.FromName)
	assert.Equal(t, "uds:"+sock, got.Reply.From)
	_, err := time.Parse(time.RFC3339Nano, got.Reply.At)
	assert.NoError(t, err)
}

func TestSendAwaitReplyOtherSendersAreNotTheReply(t *testing.T) {
	w, _ := newReplyWorld(t, func(text string) []post {
		return []post{{from: "/elsewhere/other.sock", name: "other\x1b[31m", text: "run rm -rf /\x1b[2J"}, {text: "the answer"}}
	})
	r := w.send(t, "sent", nil, "--await-reply=20s", "--no-confirm", "--json", w.id, "question")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		Reply        struct{ Text string }
		OtherInbound []struct{ Text, FromName, From string } `json:"otherInbound"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.Equal(t, "the answer", got.Reply.Text)
	require.Len(t, got.OtherInbound, 1)
	assert.Equal(t, "run rm -rf /\x1b[2J", got.OtherInbound[0].Text, "JSON carries the text exactly")
	assert.Equal(t, "uds:/elsewhere/other.sock", got.OtherInbound[0].From)
	assert.Contains(t, string(r.Stderr), "it is not the reply")
	catNoControl(t, r.Stderr)
}

func TestSendAwaitReplyNoReply(t *testing.T) {
	w := newSendWorld(t, false) // the listener reads and never answers
	r := w.send(t, "sent", nil, "--await-reply=1s", "--no-confirm", "--json", w.id, "anyone?")
	require.Equal(t, 9, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		OK      bool   `json:"ok"`
		MsgID   string `json:"msgId"`
		Refusal struct {
			Reason   string `json:"reason"`
			ExitCode int    `json:"exitCode"`
		} `json:"refusal"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.False(t, got.OK)
	assert.NotEmpty(t, got.MsgID, "the message itself was handed over")
	assert.Equal(t, "no_reply", got.Refusal.Reason)
	assert.Equal(t, 9, got.Refusal.ExitCode)
	assert.Contains(t, string(r.Stderr), "no_reply")

	r = w.send(t, "sent", nil, "--await-reply=1s", "--no-confirm", w.id, "anyone?")
	assert.Equal(t, 9, r.Code)
	assert.Empty(t, r.Stdout, "no reply, nothing on stdout")
}

func TestSendAwaitReplyUsage(t *testing.T) {
	w := newSendWorld(t, false)
	for name, args := range map[string][]string{
		"apart":      {"--await-reply", "5s", w.id, "x"},
		"socket":     {"--await-reply=5s", "--transport", "socket", w.id, "x"},
		"dry run":    {"--await-reply=5s", "--dry-run", w.id, "x"},
		"with wait":  {"--await-reply=5s", "--wait=5s", w.id, "x"},
		"negative":   {"--await-reply=-5s", w.id, "x"},
		"not a time": {"--await-reply=soon", w.id, "x"},
	} {
		t.Run(name, func(t *testing.T) {
			r := w.send(t, "sent", nil, args...)
			assert.Equal(t, 2, r.Code, "stderr: %s", r.Stderr)
			assert.False(t, w.courierStarted(t), "no courier ran")
		})
	}
}

// relayRun is one peerctl relay process whose stdin the test writes.
type relayRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any
	err   testproc.Buffer
	done  chan struct{}
}

func startRelay(t testing.TB, env []string, args ...string) *relayRun {
	t.Helper()
	bin := peerctlBin(t) // built before the bound starts
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	r := &relayRun{lines: make(chan map[string]any, 1024), done: make(chan struct{})}
	r.cmd = exec.CommandContext(ctx, bin, append(args, "relay")...)
	r.cmd.Env = env
	r.cmd.Stderr = &r.err
	var err error
	r.stdin, err = r.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := r.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"type": "NOT JSON", "raw": sc.Text()}
			}
			r.lines <- m
		}
	}()
	t.Cleanup(func() {
		_ = r.stdin.Close()
		<-r.done
	})
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	return r
}

func (r *relayRun) write(t testing.TB, v any) {
	t.Helper()
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(v)
	}
	_, err := r.stdin.Write(append(b, '\n'))
	require.NoError(t, err)
}

// next returns the next output line, failing after 30 s.
func (r *relayRun) next(t testing.TB) map[string]any {
	t.Helper()
	return r.nextWithin(t, 30*time.Second)
}

// nextWithin returns the next output line, failing after d.
func (r *relayRun) nextWithin(t testing.TB, d time.Duration) map[string]any {
	t.Helper()
	select {
	case m, ok := <-r.lines:
		require.True(t, ok, "relay output ended; stderr: %s", r.err.String())
		return m
	case <-time.After(d):
		t.Fatalf("no relay line in %s; stderr: %s", d, r.err.String())
		return nil
	}
}

// twoRepliers is a registry with two addressable sessions, "one" and
// "two", whose sockets answer "pong: <text>".
func twoRepliers(t *testing.T) (config string, ids [2]string) {
	t.Helper()
	config, sessions := catRegistry(t)
	for i, name := range []string{"one", "two"} {
		pid := os.Getpid()
		if i == 1 {
			pid = testproc.Sleeper(t)
		}
		sock := filepath.Join(catSocketDir(t), name+".sock")
		rec := catRecord(t, pid, name, sock)
		catWriteJSON(t, sessions, catFile(pid), rec)
		ids[i] = rec["sessionId"].(string)
		startReplier(t, sock, name, pong)
	}
	return config, ids
}

func fakeEnv(t *testing.T, scenario string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"PEERCTL_CLAUDE=" + fakeClaudeBin(t), "FAKECLAUDE_SCENARIO=" + scenario}, extra...)
}

func TestRelayProtocol(t *testing.T) {
	config, ids := twoRepliers(t)
	r := startRelay(t, fakeEnv(t, "sent"), "--config-dir", config, "--name", "host-bot")
	ready := r.next(t)
	assert.Equal(t, "ready", ready["type"])
	assert.Equal(t, float64(1), ready["protocol"])
	assert.Equal(t, "host-bot", ready["name"])

	const n = 10
	for i := range n {
		r.write(t, map[string]any{"id": i, "to": ids[i%2], "text": fmt.Sprintf("m%d", i)})
	}
	r.write(t, `{"to": "one", "text": "x", "extra": 1}`)
	r.write(t, `not json`)
	r.write(t, `{"id": "no-to", "text": "x"}`)
	r.write(t, `{"id": "empty", "to": "one", "text": ""}`)
	r.write(t, `{"id": "nobody", "to": "nobody", "text": "x"}`)
	r.write(t, `{"id": "last", "to": "two", "text": "last"}`)

	var receipts, refusals []map[string]any
	inbound := map[string]bool{}
	msgIDs := map[string]bool{}
	for len(receipts)+len(refusals) < n+6 || len(inbound) < n+1 {
		m := r.next(t)
		switch m["type"] {
		case "receipt":
			receipts = append(receipts, m)
			msgIDs[m["msgId"].(string)] = true
		case "refusal":
			refusals = append(refusals, m)
		case "inbound":
			inbound[m["text"].(string)] = true
			assert.Contains(t, []any{"one", "two"}, m["fromName"])
		default:
			t.Fatalf("unexpected line %v", m)
		}
	}
	require.Len(t, receipts, n+1)
	for i, m := range receipts[:n] {
		assert.Equal(t, float64(i), m["id"], "receipts in input order")
		assert.Equal(t, "queued", m["outcome"])
		assert.Equal(t, ids[i%2], m["sessionId"])
	}
	assert.Equal(t, "last", receipts[n]["id"])
	assert.Len(t, msgIDs, n+1, "distinct msgIds")
	for i := range n {
		assert.True(t, inbound[fmt.Sprintf("pong: m%d", i)], "reply to m%d heard", i)
	}
	require.Len(t, refusals, 5)
	for i, want := range []string{"invalid_request", "invalid_request", "invalid_request", "invalid_message", "not_live"} {
		assert.Equal(t, want, refusals[i]["reason"], "refusal %d: %v", i, refusals[i])
	}
	assert.Equal(t, "no-to", refusals[2]["id"])
	require.NoError(t, r.stdin.Close())
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("relay did not exit at end of stdin")
	}
	assert.Equal(t, 0, r.cmd.ProcessState.ExitCode(), "stderr: %s", r.err.String())
}

// A courier that dies under a send: that send ends in a refusal (never in
// silence), the relay starts a new courier, and later sends get receipts.
func TestRelayRestartsItsCourier(t *testing.T) {
	config, ids := twoRepliers(t)
	r := startRelay(t, fakeEnv(t, "crash_once", "FAKECLAUDE_CRASH="+filepath.Join(t.TempDir(), "crashed")), "--config-dir", config)
	require.Equal(t, "ready", r.next(t)["type"])
	for i := range 4 {
		r.write(t, map[string]any{"id": i, "to": ids[0], "text": fmt.Sprintf("m%d", i)})
	}
	var answers []map[string]any
	for len(answers) < 4 {
		if m := r.next(t); m["type"] != "inbound" {
			answers = append(answers, m)
		}
	}
	assert.Equal(t, "receipt", answers[0]["type"])
	assert.Equal(t, "refusal", answers[1]["type"], "the send the courier died under: %v", answers[1])
	assert.Equal(t, "delivery_failed", answers[1]["reason"])
	assert.Contains(t, answers[1]["detail"], "restarted")
	assert.Equal(t, "receipt", answers[2]["type"], "%v", answers[2])
	assert.Equal(t, "receipt", answers[3]["type"], "%v", answers[3])
	for i, m := range answers {
		assert.Equal(t, float64(i), m["id"])
	}
	require.NoError(t, r.stdin.Close())
	<-r.done
	assert.Equal(t, 0, r.cmd.ProcessState.ExitCode(), "stderr: %s", r.err.String())
}

func TestRelayBadFlags(t *testing.T) {
	for _, args := range [][]string{{"relay", "--name", "-x"}, {"relay", "extra"}, {"relay", "--timeout=0s"}, {"relay", "--name", ""}} {
		r := runPeerctl(t, runOpts{}, args...)
		assert.Equal(t, 2, r.Code, "%q: %s", args, r.Stderr)
	}
	r := runPeerctl(t, runOpts{}, "relay", "--name=")
	assert.Contains(t, string(r.Stderr), `--name is empty: give a name, or leave the flag out to use "peerctl"`)
}

// A relay where Claude Code's courier cannot start (no courier program)
// and Qwen Code's reply inbox has no room (a folder whose socket path is
// over the unix socket limit) still serves the harnesses whose courier
// starts (opencode's needs no program), and says on stderr, one warning
// each, which did not start and why: their sends are refused until they
// do. (With no courier starting at all the relay does not start: app's
// TestRelayUnstartedNamesTheCouriersThatDidNotStart.)
func TestRelayWarnsOfTheCouriersThatDidNotStart(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("x", 60), strings.Repeat("y", 60))
	require.NoError(t, os.MkdirAll(deep, 0o700))
	missing := filepath.Join(t.TempDir(), "no-claude")
	// Qwen Code's home named: present, so its courier is warned of.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + deep, "QWEN_HOME=" + t.TempDir()}
	r := runPeerctl(t, runOpts{Env: env}, "relay", "--claude", missing)
	assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Regexp(t, `(?m)^peerctl: warning: relay: the claude-code courier did not start, sends to claude-code sessions are refused until it does: .*courier`, string(r.Stderr))
	assert.Regexp(t, `(?m)^peerctl: warning: relay: the qwen-code courier did not start`, string(r.Stderr))
	assert.Contains(t, string(r.Stdout), `"type":"ready"`)

	// Neither installed nor with state nor named: not a word of Qwen Code
	// or Codex, whose couriers cannot start here either (issue 44). PATH
	// holds no qwen or codex program, whatever this machine has installed.
	env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + deep}
	r = runPeerctl(t, runOpts{Env: env}, "relay", "--claude", missing)
	assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Regexp(t, `(?m)^peerctl: warning: relay: the claude-code courier did not start`, string(r.Stderr))
	assert.NotContains(t, string(r.Stderr), "qwen")
	assert.NotContains(t, string(r.Stderr), "codex")
}
