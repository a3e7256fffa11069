//go:build linux

package livessh

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/test/livecc"
)

// SessionOptions say how StartClaude runs a session on the machine.
type SessionOptions struct {
	// Label names the session's working directory and tmux server;
	// empty: "cc".
	Label string
	// Name is passed as --name; empty: Claude Code derives one.
	Name string
	// ModelURL and ModelKey are the session's ANTHROPIC_BASE_URL and
	// ANTHROPIC_API_KEY (a test/scriptedmodel Server on loopback, which the
	// namespace shares); empty: livecc.FakeAPIKey and no model.
	ModelURL, ModelKey string
	// Settings, when not nil, are merged into the config dir's settings.json
	// (e.g. livecc.ReplySettings).
	Settings map[string]any
	// WaitSettled waits until the record has "status" (see
	// livecc.Options.WaitSettled).
	WaitSettled bool
}

// Session is a real interactive Claude Code session that runs as the
// machine's user inside its pid namespace, started through ssh in a tmux
// server of its own. PID is the pid the far side sees (its record's).
type Session struct {
	Machine   *Machine
	Bin       string // the claude program, readable by the user
	ConfigDir string // CLAUDE_CONFIG_DIR, under the user's home
	Cwd       string
	PID       int
	SessionID string
	Name      string
	Socket    string
	tmux      string // tmux -L name
}

// StartClaude runs bin (a Claude Code program, e.g. from livecc.Require,
// made readable with Readable) as the machine's user, headless in tmux,
// with a config dir, TMPDIR and working directory of its own under the
// user's home (seeded as livecc.SeedConfig does), and waits until its
// record has a session id and a socket (and a status with WaitSettled).
// It fails the test, with the screen, when that takes longer than
// livecc.DefaultStartTimeout. The session ends with the machine.
func (m *Machine) StartClaude(bin string, o SessionOptions) *Session {
	t := m.t
	t.Helper()
	if o.Label == "" {
		o.Label = "cc"
	}
	base := filepath.Join(m.Home, o.Label) // short: the socket path must fit ~104 bytes
	s := &Session{Machine: m, Bin: m.Readable(bin), ConfigDir: filepath.Join(base, "config"), Cwd: filepath.Join(base, "proj"),
		tmux: "peerctl-" + o.Label}
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{s.ConfigDir, s.Cwd, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("livessh: %v", err)
		}
	}
	key := livecc.FakeAPIKey
	if o.ModelKey != "" {
		key = o.ModelKey
	}
	if o.Settings != nil {
		if err := livecc.MergeSettings(s.ConfigDir, o.Settings); err != nil {
			t.Fatalf("livessh: %v", err)
		}
	}
	if err := livecc.SeedConfig(s.ConfigDir, s.Cwd, key); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	m.chown(base)
	env := append([]string{"HOME=" + m.Home, "CLAUDE_CONFIG_DIR=" + s.ConfigDir, "TMPDIR=" + tmp, "ANTHROPIC_API_KEY=" + key}, livecc.OfflineEnv...)
	if o.ModelURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+o.ModelURL)
	}
	args := []string{"tmux", "-L", s.tmux, "-f", "/dev/null", "new-session", "-d", "-s", "cc", "-x", "200", "-y", "50", "-c", s.Cwd}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(args, "--", s.Bin)
	if o.Name != "" {
		args = append(args, "--name", o.Name)
	}
	if out, err := m.SSH(context.Background(), nil, args...); err != nil {
		t.Fatalf("livessh: start claude on %s: %v %s", m.Alias, err, out)
	}
	deadline := time.Now().Add(livecc.DefaultStartTimeout)
	for {
		rec := s.record()
		sid, _ := rec["sessionId"].(string)
		sock, _ := rec["messagingSocketPath"].(string)
		name, _ := rec["name"].(string)
		pid, _ := rec["pid"].(float64)
		_, settled := rec["status"]
		if sid != "" && sock != "" && (o.Name == "" || name == o.Name) && (!o.WaitSettled || settled) {
			s.SessionID, s.Socket, s.Name, s.PID = sid, sock, name, int(pid)
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("livessh: the session on %s wrote no complete record in %v (record: %v); screen:\n%s",
				m.Alias, livecc.DefaultStartTimeout, rec, s.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// record is the one record in the session's registry (nil when there is
// none yet, or it is not complete JSON).
func (s *Session) record() map[string]any {
	files, _ := filepath.Glob(filepath.Join(s.ConfigDir, "sessions", "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec map[string]any
		if json.Unmarshal(raw, &rec) == nil {
			return rec
		}
	}
	return nil
}

// RecordPath is the session's registry record, <ConfigDir>/sessions/<PID>.json.
func (s *Session) RecordPath() string {
	return filepath.Join(s.ConfigDir, "sessions", strconv.Itoa(s.PID)+".json")
}

// TranscriptPath is where the session writes its transcript (domain.TranscriptPath).
func (s *Session) TranscriptPath() string {
	return domain.TranscriptPath(s.ConfigDir, s.Cwd, s.SessionID)
}

// Transcript returns the session's transcript as it is now ("" when none).
func (s *Session) Transcript() string {
	raw, _ := os.ReadFile(s.TranscriptPath())
	return string(raw)
}

// Screen is what the session's terminal shows (tmux capture-pane through
// ssh), for failure messages.
func (s *Session) Screen() string {
	out, err := s.Machine.SSH(context.Background(), nil, "tmux", "-L", s.tmux, "capture-pane", "-p", "-t", "cc")
	if err != nil {
		return fmt.Sprintf("(no screen: %v %s)", err, strings.TrimSpace(string(out)))
	}
	return string(out)
}
