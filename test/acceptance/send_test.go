package acceptance

// peerctl send end to end, hermetic: a temp registry whose records point at
// live helper processes, the fake claude (test/fakeclaude) as the courier and
// a recording Unix listener as a session's inbox socket.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/ports/transporttest"

	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// sendWorld is one registry with one addressable live session, "inbox", for
// our own (live) process, whose socket is a recording listener.
type sendWorld struct {
	config, sessions string
	id               string // inbox's session id
	listener         *socktest.Listener
	record           string // the fake claude's record folder
	sock             string // inbox's socket path
}

func newSendWorld(t *testing.T, hold bool) sendWorld {
	t.Helper()
	config, sessions := catRegistry(t)
	sock := filepath.Join(catSocketDir(t), "in.sock")
	rec := catRecord(t, os.Getpid(), "inbox", sock)
	catWriteJSON(t, sessions, catFile(os.Getpid()), rec)
	return sendWorld{config: config, sessions: sessions, id: rec["sessionId"].(string),
		listener: socktest.Listen(t, sock, hold), record: t.TempDir(), sock: sock}
}

// env is the environment of a run whose courier is the fake claude playing
// scenario.
func (w sendWorld) env(t *testing.T, scenario string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"PEERCTL_CLAUDE=" + fakeClaudeBin(t), "FAKECLAUDE_RECORD=" + w.record, "FAKECLAUDE_SCENARIO=" + scenario,
		"CLAUDECODE=1", "CLAUDE_CODE_MESSAGING_TOKEN=caller-secret"}
}

func (w sendWorld) send(t *testing.T, scenario string, stdin []byte, args ...string) result {
	t.Helper()
	return catRun(t, w.sessions, runOpts{Env: w.env(t, scenario), Stdin: stdin},
		append([]string{"--config-dir", w.config, "send"}, args...)...)
}

// courierStarted reports whether the fake claude ran.
func (w sendWorld) courierStarted(t *testing.T) bool {
	_, err := os.Stat(filepath.Join(w.record, "pid"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	return true
}

func (w sendWorld) fakeFile(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(w.record, name))
	require.NoError(t, err)
	return string(b)
}

func TestSendCourierDelivers(t *testing.T) {
	for name, text := range map[string]string{
		"plain":          "the API changed, rebase",
		"fence and JSON": transporttest.TrickyTexts()["fence other nonce"] + "\n" + transporttest.TrickyTexts()["json object"],
		"exactly 64 KiB": transporttest.Exactly(64 * 1024),
	} {
		t.Run(name, func(t *testing.T) {
			w := newSendWorld(t, false)
			r := w.send(t, "sent", []byte(text), "--json", "--confirm-timeout", "300ms", "--from", "ci bot", w.id, "-")
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			var got struct {
				OK           bool   `json:"ok"`
				Outcome      string `json:"outcome"`
				Transport    string `json:"transport"`
				SessionID    string `json:"sessionId"`
				PID          int    `json:"pid"`
				Name         string `json:"name"`
				Endpoint     string `json:"endpoint"`
				MsgID        string `json:"msgId"`
				ClaudeResult string `json:"claudeResult"`
			}
			require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
			assert.Equal(t, true, got.OK)
			assert.Equal(t, "queued", got.Outcome, "no transcript here: Claude Code's word stands")
			assert.Equal(t, "courier", got.Transport)
			assert.Equal(t, w.id, got.SessionID)
			assert.Equal(t, os.Getpid(), got.PID)
			assert.Equal(t, "inbox", got.Name)
			assert.True(t, strings.HasPrefix(got.Endpoint, "cc-peer:v1:"))
			assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, got.MsgID)
			assert.Contains(t, got.ClaudeResult, "in that session's inbox")

			var sent struct{ To, Message string }
			require.NoError(t, json.Unmarshal([]byte(w.fakeFile(t, "sent.jsonl")), &sent))
			assert.Equal(t, "uds:"+w.sock, sent.To)
			assert.True(t, sent.Message == text, "the courier relayed a different text (%d bytes, want %d)", len(sent.Message), len(text))
			assert.NotContains(t, w.fakeFile(t, "argv.json"), text[:10], "the text is on argv")
			assert.Contains(t, w.fakeFile(t, "argv.json"), `"-n","ci bot"`)
			env := w.fakeFile(t, "env")
			assert.NotContains(t, env, "CLAUDE_CONFIG_DIR="+w.config+"\n", "the courier has a config dir of its own")
			assert.NotContains(t, env, "CLAUDECODE=")
			assert.NotContains(t, env, "caller-secret")
			frames := w.listener.Wait(1)
			require.Len(t, frames, 1, "the session's socket got one post")
			assert.Contains(t, string(frames[0]), `from-name=\"ci bot\"`)
		})
	}
}

func TestSendSocketDelivers(t *testing.T) {
	w := newSendWorld(t, false)
	text := "héllo\r\n\"quoted\" \\ <b>\n"
	r := w.send(t, "sent", nil, "--transport", "socket", w.id, text)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	frames := w.listener.Frames()
	require.Len(t, frames, 1)
	assert.Equal(t, `{"type":"user","message":{"role":"user","content":"héllo\r\n\"quoted\" \\ <b>\n"}}`+"\n", string(frames[0]))
	assert.NotContains(t, string(frames[0]), `"auth"`)
	assert.False(t, w.courierStarted(t), "the socket transport started a courier")
}

// TestSendRefusesBeforeTheCourier: no courier runs for a target that is not
// live, is ambiguous, or a message that is invalid.
func TestSendRefusesBeforeTheCourier(t *testing.T) {
	t.Run("not_live", func(t *testing.T) {
		w := newSendWorld(t, false)
		pid, kill := testproc.KillableSleeper(t)
		rec := catRecord(t, pid, "gone", "")
		catWriteJSON(t, w.sessions, catFile(pid), rec)
		kill()
		r := w.send(t, "sent", nil, "--json", rec["sessionId"].(string), "hello")
		assert.Equal(t, 3, r.Code, "stderr: %s", r.Stderr)
		assertRefusalJSON(t, r, "not_live", 3)
		assert.False(t, w.courierStarted(t))
	})
	t.Run("identity_mismatch", func(t *testing.T) {
		w := newSendWorld(t, false)
		pid, _ := testproc.KillableSleeper(t)
		// A twin of the same name: the name is ambiguous (each is reached
		// by its full id or endpoint).
		catWriteJSON(t, w.sessions, catFile(pid), catRecord(t, pid, "inbox", "/tmp/cc-socks/twin.sock"))
		r := w.send(t, "sent", nil, "--json", "inbox", "hello")
		assert.Equal(t, 4, r.Code, "stderr: %s", r.Stderr)
		body := assertRefusalJSON(t, r, "identity_mismatch", 4)
		assert.Len(t, body.Candidates, 2)
		assert.Contains(t, string(r.Stderr), `"inbox"`)
		assert.False(t, w.courierStarted(t))
	})
	for name, stdin := range map[string][]byte{
		"empty":        []byte(""),
		"whitespace":   []byte(" \n\t "),
		"NUL":          []byte("a\x00b"),
		"bad UTF-8":    []byte("caf\xe9"),
		"over the cap": []byte(strings.Repeat("a", 64*1024+1)),
	} {
		t.Run("invalid_message/"+name, func(t *testing.T) {
			w := newSendWorld(t, false)
			r := w.send(t, "sent", stdin, "--json", w.id, "-")
			assert.Equal(t, 8, r.Code, "stderr: %s", r.Stderr)
			assertRefusalJSON(t, r, "invalid_message", 8)
			assert.False(t, w.courierStarted(t))
		})
	}
}

type refusalBody struct {
	Reason     string `json:"reason"`
	Detail     string `json:"detail"`
	ExitCode   int    `json:"exitCode"`
	Candidates []struct {
		SessionID string `json:"sessionId"`
		Name      string `json:"name"`
		PID       int    `json:"pid"`
	} `json:"candidates"`
}

func assertRefusalJSON(t *testing.T, r result, reason string, code int) refusalBody {
	t.Helper()
	var got struct {
		OK      *bool       `json:"ok"`
		Refusal refusalBody `json:"refusal"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	require.NotNil(t, got.OK)
	assert.False(t, *got.OK)
	assert.Equal(t, reason, got.Refusal.Reason)
	assert.Equal(t, code, got.Refusal.ExitCode)
	assert.NotEmpty(t, got.Refusal.Detail)
	assert.Contains(t, string(r.Stderr), "peerctl: "+reason+": ")
	return got.Refusal
}

// TestSendDeliveryFailures: exit 5 with the details, in words and in JSON.
func TestSendDeliveryFailures(t *testing.T) {
	tests := []struct {
		name, scenario string
		args           []string
		want           string
	}{
		{"not logged in", "not_logged_in", nil, "Not logged in · Please run /login"},
		{"unknown option", "unknown_option", nil, "error: unknown option '--bogus-flag'"},
		{"success false", "not_sent", nil, `SendMessage answered success:false: "“peerctl” → uds:`},
		{"tool error", "tool_error", nil, "Error: the fake refuses this call"},
		{"no SendMessage", "no_send_tool", nil, "the courier was not offered SendMessage"},
		{"refused", "refused", nil, "refused by the target"},
		{"hangs", "fork_hang", []string{"--timeout", "1s"}, "timed out after 1s"},
		{"socket absent", "", []string{"--transport", "socket"}, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSendWorld(t, false)
			if tt.scenario == "" {
				w.listener.Close()
			}
			env := w.env(t, tt.scenario)
			args := append([]string{"--config-dir", w.config, "send", "--json"}, tt.args...)
			r := catRun(t, w.sessions, runOpts{Env: env}, append(args, w.id, "hello")...)
			assert.Equal(t, 5, r.Code, "stderr: %s", r.Stderr)
			body := assertRefusalJSON(t, r, "delivery_failed", 5)
			assert.Contains(t, body.Detail, tt.want)
			assert.Contains(t, string(r.Stderr), tt.want)
		})
	}
}

// TestSendTimeoutBrief: a courier that runs out of time before the
// hand-over says so in one short line; its internals (exit code, the
// endpoint's requests, stderr) stay in --json's detail and come on stderr
// with --debug.
func TestSendTimeoutBrief(t *testing.T) {
	w := newSendWorld(t, false)
	env := w.env(t, "fork_hang")
	args := []string{"--config-dir", w.config, "send", "--timeout", "1s"}
	r := catRun(t, w.sessions, runOpts{Env: env}, append(append(args, "--json"), w.id, "hello")...)
	require.Equal(t, 5, r.Code, "stderr: %s", r.Stderr)
	body := assertRefusalJSON(t, r, "delivery_failed", 5)
	assert.Contains(t, body.Detail, "the endpoint saw", "--json keeps the internals")
	assert.Equal(t, "peerctl: delivery_failed: courier timed out after 1s before the message was handed over: nothing was sent\n", string(r.Stderr))

	r = catRun(t, w.sessions, runOpts{Env: env}, append(append(args, "--debug"), w.id, "hello")...)
	require.Equal(t, 5, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl: delivery_failed: courier timed out after 1s: courier ran out of time after")
	assert.Contains(t, string(r.Stderr), "the endpoint saw")
}

// TestSendDryRun: the plan is printed, nothing is sent.
func TestSendDryRun(t *testing.T) {
	const text = "dry \"run\"\nline two"
	t.Run("courier", func(t *testing.T) {
		w := newSendWorld(t, false)
		r := w.send(t, "sent", nil, "--dry-run", w.id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		out := string(r.Stdout)
		assert.Contains(t, out, "nothing was sent")
		assert.Contains(t, out, "run:   "+fakeClaudeBin(t)+" -p --input-format stream-json --output-format stream-json --verbose --tools ListAgents,SendMessage --allowedTools ListAgents,SendMessage --safe-mode --setting-sources user --strict-mcp-config --no-session-persistence -n peerctl\n")
		assert.Regexp(t, `\nin:    /\S*/peerctl-courier-<pid>-\*/work\n`, out, "the courier's folder is a fresh private one")
		assert.Contains(t, out, `call:  SendMessage {"to":"uds:`)
		assert.Contains(t, out, `"message":"dry \"run\"\nline two","summary":"peerctl"}`+"\n")
		assert.False(t, w.courierStarted(t), "dry run started the courier")
		assert.Zero(t, w.listener.Conns())
	})
	t.Run("courier program missing", func(t *testing.T) {
		// A dry run sends nothing, so it needs no courier program: it says
		// what would run and warns that the program is not there.
		w := newSendWorld(t, false)
		missing := filepath.Join(t.TempDir(), "no-claude")
		r := w.send(t, "sent", nil, "--dry-run", "--claude", missing, w.id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Contains(t, string(r.Stdout), "nothing was sent")
		assert.Contains(t, string(r.Stdout), "run:   "+missing+" -p ")
		assert.Contains(t, string(r.Stderr), "warning: ")
		assert.Contains(t, string(r.Stderr), `the courier program "`+missing+`" was not found`)
		r = w.send(t, "sent", nil, "--dry-run", "--json", "--claude", missing, w.id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		var got struct {
			Outcome string `json:"outcome"`
			Plan    struct {
				Argv    []string `json:"argv"`
				Warning string   `json:"warning"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
		assert.Equal(t, "planned", got.Outcome)
		require.NotEmpty(t, got.Plan.Argv)
		assert.Equal(t, missing, got.Plan.Argv[0])
		assert.Contains(t, got.Plan.Warning, "was not found")
		assert.False(t, w.courierStarted(t))
	})
	t.Run("courier json", func(t *testing.T) {
		w := newSendWorld(t, false)
		r := w.send(t, "sent", nil, "--dry-run", "--json", w.id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		var got struct {
			Outcome string `json:"outcome"`
			Plan    struct {
				Transport string   `json:"transport"`
				Argv      []string `json:"argv"`
				Call      string   `json:"call"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
		assert.Equal(t, "planned", got.Outcome)
		assert.Equal(t, "courier", got.Plan.Transport)
		require.NotEmpty(t, got.Plan.Argv)
		assert.Equal(t, fakeClaudeBin(t), got.Plan.Argv[0])
		for _, a := range got.Plan.Argv {
			assert.NotContains(t, a, "dry")
		}
		var call struct{ To, Message, Summary string }
		require.NoError(t, json.Unmarshal([]byte(got.Plan.Call), &call))
		assert.Equal(t, text, call.Message)
		assert.Equal(t, "peerctl", call.Summary)
		assert.True(t, strings.HasPrefix(call.To, "uds:/"), call.To)
		assert.False(t, w.courierStarted(t))
		assert.Zero(t, w.listener.Conns())
	})
	t.Run("socket", func(t *testing.T) {
		w := newSendWorld(t, false)
		r := w.send(t, "sent", nil, "--dry-run", "--transport", "socket", w.id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		out := string(r.Stdout)
		assert.Contains(t, out, "frame:  "+`{"type":"user","message":{"role":"user","content":"dry \"run\"\nline two"}}`+"\n")
		assert.Contains(t, out, "socket: ")
		assert.Zero(t, w.listener.Conns(), "dry run connected to the socket")
		assert.False(t, w.courierStarted(t))
	})
	t.Run("socket json", func(t *testing.T) {
		w := newSendWorld(t, false)
		r := w.send(t, "sent", nil, "--dry-run", "--json", "--transport", "socket", w.id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		var got struct {
			Outcome string `json:"outcome"`
			Plan    struct {
				Transport string `json:"transport"`
				Socket    string `json:"socket"`
				Frame     string `json:"frame"`
			} `json:"plan"`
		}
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
		assert.Equal(t, "planned", got.Outcome)
		assert.Equal(t, "socket", got.Plan.Transport)
		assert.Equal(t, string(socketframe.Frame(text)), got.Plan.Frame)
		assert.Zero(t, w.listener.Conns())
		assert.False(t, w.courierStarted(t))
	})
}

// TestSendRelativePaths: a relative --config-dir, CLAUDE_CONFIG_DIR or
// PEERCTL_CLAUDE means relative to the caller's working directory; the
// courier, which runs in a folder of its own, still starts, and the registry
// read is the caller's.
func TestSendRelativePaths(t *testing.T) {
	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			w := newSendWorld(t, false)
			// Built before the chdir: go build needs the module's folder.
			peerctlBin(t)
			fakeClaudeBin(t)
			wd := filepath.Dir(w.config)
			t.Chdir(wd)
			relConfig := filepath.Base(w.config)
			relClaude, err := filepath.Rel(wd, fakeClaudeBin(t))
			require.NoError(t, err)
			env := w.env(t, "sent")
			for i, kv := range env {
				if strings.HasPrefix(kv, "PEERCTL_CLAUDE=") {
					env[i] = "PEERCTL_CLAUDE=" + relClaude
				}
			}
			args := []string{"send", "--json", "--no-confirm", w.id, "relative"}
			if how == "flag" {
				args = append([]string{"--config-dir", relConfig}, args...)
			} else {
				env = append(env, "CLAUDE_CONFIG_DIR="+relConfig)
			}
			r := catRun(t, w.sessions, runOpts{Env: env}, args...)
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			assert.Len(t, w.listener.Wait(1), 1)
		})
	}
}

// TestSendCourierHeld: the target's held notice, heard while the transcript
// is read, makes the outcome "held" (exit 0) with Claude Code's words.
func TestSendCourierHeld(t *testing.T) {
	w := newSendWorld(t, false)
	r := w.send(t, "held", nil, "--json", w.id, "hold this")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		Outcome      string `json:"outcome"`
		MsgID        string `json:"msgId"`
		ClaudeResult string `json:"claudeResult"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.Equal(t, "held", got.Outcome)
	assert.Contains(t, got.ClaudeResult, "was held by that session")
	assert.Contains(t, got.ClaudeResult, got.MsgID)
}
