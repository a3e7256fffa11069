package app_test

// A fake session for the confirmation, wait, watch and enrichment tests: a
// real helper process (so its pid is live and has a start time) whose
// registry record and transcript the test writes on cue, in Claude Code
// 2.1.328's formats.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/fswatch"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/transcript"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// within bounds every wait for something the test cued.
const within = 10 * time.Second

type fakeSession struct {
	t         *testing.T
	configDir string
	cmd       *exec.Cmd
	mu        sync.Mutex
	rec       map[string]any
	// takenUpMs is the stamp (epoch ms) of the last take-up line written.
	takenUpMs int64
}

// startFake starts a helper process and writes its record.
func startFake(t *testing.T, configDir, id, name string) *fakeSession {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	start, err := procliveness.StartTime("/proc", pid)
	require.NoError(t, err)
	now := time.Now().UnixMilli()
	f := &fakeSession{t: t, configDir: configDir, cmd: cmd, rec: map[string]any{
		"pid": pid, "sessionId": id, "cwd": filepath.Join(configDir, "work", name), "startedAt": now,
		"procStart": start, "version": "2.1.328", "peerProtocol": 1, "kind": "interactive", "entrypoint": "cli",
		"messagingSocketPath": filepath.Join(configDir, "socks", strconv.Itoa(pid)+".sock"),
		"name":                name, "nameSource": "derived", "nameSince": now, "status": "idle", "updatedAt": now, "statusUpdatedAt": now,
	}}
	require.NoError(t, os.MkdirAll(fsregistry.SessionsDir(configDir), 0o700))
	f.write()
	return f
}

func (f *fakeSession) PID() int { return f.cmd.Process.Pid }

func (f *fakeSession) ID() string { return f.rec["sessionId"].(string) }

func (f *fakeSession) path() string {
	return filepath.Join(fsregistry.SessionsDir(f.configDir), strconv.Itoa(f.PID())+".json")
}

// Transcript is where the session's transcript lives.
func (f *fakeSession) Transcript() string {
	return domain.TranscriptPath(f.configDir, f.rec["cwd"].(string), f.ID())
}

func (f *fakeSession) write() {
	f.t.Helper()
	b, err := json.Marshal(f.rec)
	require.NoError(f.t, err)
	tmp := f.path() + ".tmp"
	require.NoError(f.t, os.WriteFile(tmp, b, 0o600))
	require.NoError(f.t, os.Rename(tmp, f.path()))
}

// setStatus rewrites the record with status and fresh updatedAt fields;
// "waiting:WHAT" writes "status":"waiting" with "waitingFor":WHAT.
// backdate marks the record as last written d ago (updatedAt and
// statusUpdatedAt), i.e. well before a send that starts now.
func (f *fakeSession) backdate(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := time.Now().Add(-d).UnixMilli()
	f.rec["updatedAt"], f.rec["statusUpdatedAt"] = old, old
	f.write()
}

func (f *fakeSession) setStatus(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UnixMilli()
	if now <= f.takenUpMs {
		// A status follows the take-up line that caused it; at millisecond
		// resolution a fast test could stamp both alike, which no real turn
		// (seconds long) does, and which a wait rightly does not take as the
		// end of the turn.
		now = f.takenUpMs + 1
	}
	f.rec["status"], f.rec["updatedAt"], f.rec["statusUpdatedAt"] = s, now, now
	delete(f.rec, "waitingFor")
	if what, ok := strings.CutPrefix(s, "waiting:"); ok {
		// Stopped on its user, as Claude Code 2.1.332 writes it.
		f.rec["status"], f.rec["waitingFor"] = "waiting", what
	}
	f.write()
}

// unsettle rewrites the record as Claude Code's first one, written before
// the session settled: no status, no updatedAt, no statusUpdatedAt.
func (f *fakeSession) unsettle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rec, "status")
	delete(f.rec, "updatedAt")
	delete(f.rec, "statusUpdatedAt")
	f.write()
}

func (f *fakeSession) rename(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec["name"], f.rec["nameSource"], f.rec["nameSince"] = name, "user", time.Now().UnixMilli()
	f.write()
}

// crash kills the process and leaves the record (as SIGKILL does).
func (f *fakeSession) crash() {
	require.NoError(f.t, f.cmd.Process.Kill())
	_ = f.cmd.Wait()
}

// zombie kills the process without reaping it: it has exited, its pid
// still answers kill(pid, 0), its record stays (the parent reaps it at
// cleanup).
func (f *fakeSession) zombie() {
	require.NoError(f.t, f.cmd.Process.Kill())
	require.Eventually(f.t, func() bool {
		return isZombie(f.t, f.PID())
	}, within, 10*time.Millisecond, "pid %d did not become a zombie", f.PID())
}

// exit removes the record, then ends the process (as a clean exit does).
func (f *fakeSession) exit() {
	require.NoError(f.t, os.Remove(f.path()))
	f.crash()
}

// enqueue appends the line Claude Code writes when a message is queued,
// stamped at, then the lines of an idle session taking it up at once.
func (f *fakeSession) enqueue(text string, at time.Time) {
	f.t.Helper()
	f.queue(text, at)
	f.takeUp(text, at)
}

// queue appends only the enqueue line: a busy session queues the message
// and takes it up later (takeUp).
func (f *fakeSession) queue(text string, at time.Time) {
	f.t.Helper()
	f.appendLines(map[string]any{"type": "queue-operation", "operation": "enqueue",
		"timestamp": stamp(at), "sessionId": f.ID(), "content": text})
}

// takeUp appends the dequeue line and the peer "user" line (Claude Code
// 2.1.328) that begin the turn on text, stamped at.
func (f *fakeSession) takeUp(text string, at time.Time) {
	f.t.Helper()
	f.mu.Lock()
	f.takenUpMs = max(f.takenUpMs, at.UnixMilli())
	f.mu.Unlock()
	f.appendLines(map[string]any{"type": "queue-operation", "operation": "dequeue", "timestamp": stamp(at), "sessionId": f.ID()},
		map[string]any{"type": "user", "timestamp": stamp(at), "isMeta": true, "turnOrigin": "peer",
			"message": map[string]string{"role": "user", "content": "Another Claude session sent a message:\n" + text + "\n\nThis came from another Claude session."},
			"origin":  map[string]any{"kind": "peer", "from": "unknown"}})
}

func stamp(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05.000Z") }

func (f *fakeSession) appendLines(lines ...map[string]any) {
	f.t.Helper()
	p := f.Transcript()
	require.NoError(f.t, os.MkdirAll(filepath.Dir(p), 0o755))
	var b []byte
	for _, l := range lines {
		line, err := json.Marshal(l)
		require.NoError(f.t, err)
		b = append(append(b, line...), '\n')
	}
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(f.t, err)
	_, err = fh.Write(b)
	require.NoError(f.t, err)
	require.NoError(f.t, fh.Close())
}

// variant is one way of wiring the optional ports.
type variant struct {
	name string
	opts func() []app.Option
}

// variants: the real watchers (fsnotify, pidfd), and none at all (the
// Service polls the registry; the transcript reader polls the file).
func variants() []variant {
	return []variant{
		{"notify", func() []app.Option {
			folder := fswatch.NewFolder()
			folder.Poll = time.Hour // only notifications may notice
			exits := fswatch.NewExits()
			exits.Poll = time.Hour
			return []app.Option{app.WithFolderWatcher(folder), app.WithExitWatcher(exits),
				app.WithTranscripts(transcript.New(folder, transcript.WithPoll(time.Hour)))}
		}},
		{"polling", func() []app.Option {
			return []app.Option{app.WithTranscripts(transcript.New(nil, transcript.WithPoll(20*time.Millisecond)))}
		}},
	}
}

// newService builds a Service over the real registry and liveness adapters
// for configDir, with transport t and the variant's optional ports.
func newService(configDir string, t ports.Transport, v variant) *app.Service {
	return app.New(fsregistry.New(fsregistry.SessionsDir(configDir)), procliveness.New(), t, configDir, v.opts()...)
}

func newExits() *fswatch.Exits { return fswatch.NewExits() }
