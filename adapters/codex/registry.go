package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// DefaultAsk bounds one conversation with the daemon while reading the
// registry (connect, initialize, two reads).
const DefaultAsk = 3 * time.Second

// maxMetaLine bounds the first line of a rollout read for its
// session_meta (bytes).
const maxMetaLine = 64 << 10

// Registry lists the Codex threads that a live process has open (the
// liveness rule of docs/CODEX.md, measured on Codex 0.171.0):
//
//   - a thread whose writer lock a codex process other than the daemon
//     holds open is that process's (a TUI started with --no-daemon): kind
//     no-daemon, pid the TUI's, no socket (Codex's queue reaches it); a
//     `codex exec` run holding one is kind exec, headless, with its reason;
//   - a thread the app-server daemon holds loaded (thread/loaded/list) is
//     a client's when at least as many Codex clients (daemon-mode TUIs of
//     this home: see proc.role) run in its folder as the daemon
//     holds threads there: kind daemon-client, pid the client's when it is
//     the only one there, else the daemon's; none there: headless (the
//     daemon keeps a thread loaded about a minute after its TUI quit);
//     fewer: ambiguous.
//
// When no daemon runs (none, or one killed: nothing listens on its
// socket) while daemon-mode TUIs, its clients, still run, each thread
// such a TUI may still show is a record with that TUI's pid, stale,
// saying so (see orphans). Any other thread no process holds is not a
// record. A daemon that is not running, or does not answer, leaves the
// --no-daemon threads listed (see Read). It
// never writes Codex's state.
type Registry struct {
	home     string
	procRoot string
	ask      time.Duration
	version  string
	domain   string // our pid domain ("" unknown)
	// dirs are the folders the control socket may link into (nil:
	// codexapp.DaemonDir(uid)).
	dirs []string
	// memo remembers a daemon that did not answer (shared with the
	// transports: see daemonMemo).
	memo *daemonMemo
}

var _ ports.HarnessRegistry = (*Registry)(nil)

// NewRegistry reads the Codex home; version is peerctl's, told to the
// daemon in initialize; pidDomain is ours (procliveness.Checker.Domain),
// given to every record ("": none).
func NewRegistry(home, version, pidDomain string) *Registry {
	return &Registry{home: home, procRoot: "/proc", ask: DefaultAsk, version: version, domain: pidDomain, memo: &daemonMemo{}}
}

// Harness is Kind.
func (r *Registry) Harness() domain.Harness { return Kind }

// Read lists the threads (see Registry). A control socket that is not
// ours stops the read, an error naming it. The daemon is one holder among
// others, so its trouble does not hide the --no-daemon TUIs' threads: a
// daemon that is not running (no control socket, or one nothing listens
// on: a daemon killed leaves it behind) is a warning (Snapshot.Warnings),
// and one that does not answer within the bound leaves its threads unread
// (Snapshot.Unread, naming Codex) while the --no-daemon threads are
// listed all the same.
func (r *Registry) Read(ctx context.Context) (ports.Snapshot, error) {
	snap := ports.Snapshot{Dir: r.home}
	if _, err := os.Stat(r.home); errors.Is(err, os.ErrNotExist) {
		snap.Missing = true
		return snap, nil
	} else if err != nil {
		return snap, fmt.Errorf("read Codex home %s: %w", r.home, err)
	}
	// The control socket first: one that is not ours stops the read
	// before anything is asked; none means no daemon (only --no-daemon
	// TUIs can hold threads then).
	sock, err := codexapp.Socket(r.home, getuid(), r.dirs...)
	if errors.Is(err, codexapp.ErrNoDaemon) {
		sock, err = "", nil
	}
	if err != nil {
		return snap, err
	}
	procs := scanProcs(procliveness.TableOf(ctx, r.procRoot), r.home)
	daemonPID := readDaemonPID(r.home)
	markDescendants(procs, daemonPID, procliveness.NewTree(r.procRoot))
	var names map[string]string // session_index.jsonl, read once when needed
	for _, p := range procs {
		role := p.role(daemonPID)
		if role != KindNoDaemon && role != KindExec {
			continue
		}
		if names == nil {
			names = map[string]string{}
			_ = readSessionIndex(filepath.Join(r.home, "session_index.jsonl"), func(id, name string) { names[id] = name })
		}
		for _, id := range p.locks {
			rec := r.noDaemonRecord(p, id, names[id])
			if role == KindExec {
				rec.Kind = KindExec
				if rec.Problem == "" {
					rec.Problem, rec.ProblemVerdict = execProblem(p, id), domain.VerdictHeadless
				}
			}
			snap.Records = append(snap.Records, rec)
		}
	}
	if sock == "" {
		snap.Records = append(snap.Records, r.orphanRecords(procs, daemonPID, "")...)
		return r.stamp(snap), nil
	}
	threads, err := r.daemonThreads(ctx, sock)
	switch {
	case daemonGone(err):
		snap.Warnings = append(snap.Warnings, goneWarning(sock, err, procs, daemonPID))
		snap.Records = append(snap.Records, r.orphanRecords(procs, daemonPID, sock)...)
	case err != nil:
		snap.Unread = append(snap.Unread, ports.Unread{Harness: Kind, Dir: r.home,
			Err: fmt.Errorf("%w (the threads of --no-daemon TUIs are listed, the daemon's are not)", err)})
	default:
		snap.Records = append(snap.Records, daemonRecords(threads, procs, daemonPID, sock)...)
	}
	return r.stamp(snap), nil
}

// orphanRecords are the records of the threads the clients of a daemon
// that is gone may still show (orphans): not live, naming the TUI.
func (r *Registry) orphanRecords(procs []proc, daemonPID int, sock string) []domain.Record {
	var out []domain.Record
	for _, o := range r.orphans(procs, daemonPID) {
		out = append(out, o.record(sock))
	}
	return out
}

// execProblem says why a thread a headless run p (KindExec: `codex
// exec`, `codex review`) holds is not a session.
func execProblem(p proc, id string) string {
	return fmt.Sprintf("a headless `codex %s` run (pid %d) holds this thread: it prints its own answer and exits, so nothing sent would be seen; run `codex resume %s` to open it once it ended", p.run(), p.pid, id)
}

// daemonGone reports whether err says no daemon listens on the control
// socket (connection refused: a daemon killed leaves its socket behind);
// a daemon that runs but does not answer is not gone.
func daemonGone(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// goneWarning says that the daemon at sock is not running, and which
// Codex clients (daemon-mode TUIs) are left without it: their threads
// reach no one until they are restarted.
func goneWarning(sock string, err error, procs []proc, daemonPID int) string {
	var orphans []proc
	for _, p := range procs {
		if p.role(daemonPID) == KindClient {
			orphans = append(orphans, p)
		}
	}
	w := fmt.Sprintf("codex: the app-server daemon is not running (%v): threads of --no-daemon TUIs are listed, no daemon thread is", err)
	if len(orphans) > 0 {
		w += fmt.Sprintf("; %d Codex TUI(s) that were its clients still run (pids %s) and reach no daemon until restarted", len(orphans), pids(orphans))
	}
	return w
}

// stamp gives every record our pid domain: the processes were found in
// this machine's /proc, so they are in our pid namespace by construction.
func (r *Registry) stamp(snap ports.Snapshot) ports.Snapshot {
	if r.domain == "" {
		return snap
	}
	for i := range snap.Records {
		snap.Records[i].PIDDomain = r.domain
	}
	return snap
}

// daemonThreads asks the daemon at sock for the threads it holds loaded,
// with their rows.
func (r *Registry) daemonThreads(ctx context.Context, sock string) (threads []codexapp.Thread, err error) {
	if err := r.memo.recall(); err != nil {
		return nil, err
	}
	defer func(parent context.Context) {
		err = daemonSilent(r.home, r.procRoot, r.ask, err)
		r.memo.remember(parent, err)
	}(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.ask)
	defer cancel()
	c, err := codexapp.Open(ctx, sock, r.version)
	if err != nil {
		return nil, err // it names the socket
	}
	defer c.Close()
	loaded, err := c.LoadedThreads(ctx)
	if err != nil || len(loaded) == 0 {
		return nil, err
	}
	rows, _, err := c.ListThreads(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]codexapp.Thread{}
	for _, t := range rows {
		byID[t.ID] = t
	}
	out := make([]codexapp.Thread, 0, len(loaded))
	for _, id := range loaded {
		t, ok := byID[id]
		if !ok {
			t = r.unlisted(id)
		}
		out = append(out, t)
	}
	return out, nil
}

// unlisted is the row of a thread the daemon holds loaded that thread/list
// does not show yet (its row is written a moment after its rollout, a
// window a busy machine widens): its folder and version come from its
// rollout's session_meta, when it has one, so the client rule can place
// it; else it has no folder (headless, see daemonRecords).
func (r *Registry) unlisted(id string) codexapp.Thread {
	t := codexapp.Thread{ID: id, Status: codexapp.ThreadStatus{Type: "idle"}}
	if !IsUUID(id) {
		return t
	}
	files, _ := filepath.Glob(filepath.Join(r.home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(files) != 1 {
		return t
	}
	meta, err := readSessionMeta(files[0])
	if err != nil || meta.ID != id {
		return t
	}
	t.Cwd, t.CLIVersion, t.Path = meta.Cwd, meta.CLIVersion, &files[0]
	return t
}

// daemonRecords applies the client rule (see Registry) to the daemon's
// loaded threads.
func daemonRecords(threads []codexapp.Thread, procs []proc, daemonPID int, sock string) []domain.Record {
	clients := map[string][]proc{}
	var daemon proc
	for _, p := range procs {
		switch p.role(daemonPID) {
		case KindClient:
			clients[filepath.Clean(p.cwd)] = append(clients[filepath.Clean(p.cwd)], p)
		case roleDaemon:
			if p.pid == daemonPID {
				daemon = p
			}
		}
	}
	loadedIn := map[string]int{}
	for _, t := range threads {
		loadedIn[filepath.Clean(t.Cwd)]++
	}
	out := make([]domain.Record, 0, len(threads))
	for _, t := range threads {
		rec := threadRecord(t, sock)
		cwd := filepath.Clean(t.Cwd)
		here, n := clients[cwd], loadedIn[cwd]
		rec.Kind = KindClient
		rec.PID, rec.ProcStart = daemon.pid, daemon.start
		switch {
		case !IsUUID(t.ID):
			rec.Problem, rec.ProblemVerdict = fmt.Sprintf("thread id %q is not a UUID", t.ID), domain.VerdictMalformed
		case daemon.pid == 0:
			rec.Problem, rec.ProblemVerdict = fmt.Sprintf("the daemon of daemon.pid (pid %d) is not a running Codex process of this home", daemonPID), domain.VerdictStale
		case t.Cwd == "":
			rec.Problem, rec.ProblemVerdict = fmt.Sprintf("loaded by Codex's app-server daemon (pid %d) with no row in thread/list (an ephemeral thread, or one not written yet): no folder to find its client by", daemon.pid), domain.VerdictHeadless
		case len(here) == 0:
			rec.Problem, rec.ProblemVerdict = fmt.Sprintf("loaded by Codex's app-server daemon (pid %d) but no Codex client runs in %s: its TUI quit (the daemon keeps a thread loaded about a minute after) or nothing ever showed it; a turn sent now would run with no one watching", daemon.pid, t.Cwd), domain.VerdictHeadless
		case len(here) < n:
			rec.Problem, rec.ProblemVerdict = fmt.Sprintf("the daemon (pid %d) holds %d threads loaded in %s and %d Codex client(s) run there (pids %s): which of them have this one open cannot be told (a thread stays loaded about a minute after its TUI quit)", daemon.pid, n, t.Cwd, len(here), pids(here)), domain.VerdictAmbiguous
		case len(here) == 1:
			rec.PID, rec.ProcStart = here[0].pid, here[0].start
		default:
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("%d Codex clients run in %s (pids %s): which one shows this thread is not known, so its pid is the daemon's", len(here), t.Cwd, pids(here)))
		}
		out = append(out, rec)
	}
	return out
}

func threadRecord(t codexapp.Thread, sock string) domain.Record {
	rec := domain.Record{Harness: Kind, File: t.ID, SessionID: t.ID, Cwd: t.Cwd, SocketPath: sock,
		Version: t.CLIVersion, Name: t.Preview}
	if t.Name != nil && *t.Name != "" {
		rec.Name = *t.Name
	}
	if t.Path != nil {
		rec.Path = *t.Path
	}
	if t.CreatedAt > 0 {
		rec.StartedAt = time.Unix(t.CreatedAt, 0)
	}
	if t.UpdatedAt > 0 {
		rec.UpdatedAt = time.Unix(t.UpdatedAt, 0)
	}
	switch t.Status.Type {
	case "idle":
		rec.Status = domain.StatusIdle
	case "active":
		rec.Status = domain.StatusBusy
	}
	rec.Name = oneLine(rec.Name)
	return rec
}

// noDaemonRecord is the record of a thread a --no-daemon TUI holds: its
// rollout's session_meta gives the cwd and version; a rollout that cannot
// be read makes the record skipped with its reason. Its name is the
// thread's (session_index.jsonl's, given), else its first message, as the
// daemon's thread/list shows a thread (name, else preview). It names no socket:
// no daemon serves the thread, whether one runs or not (Codex's queue
// reaches it: QueueAddress).
func (r *Registry) noDaemonRecord(p proc, id, name string) domain.Record {
	rec := domain.Record{Harness: Kind, File: id, SessionID: id,
		Kind: KindNoDaemon, PID: p.pid, ProcStart: p.start, Cwd: p.cwd, Name: oneLine(name)}
	path := p.rollouts[id]
	if path == "" {
		return rec // the lock is taken before the first turn writes the rollout
	}
	if rec.Name == "" {
		// As thread/list names a thread without a name: its first message.
		rec.Name = oneLine(firstUserMessage(path))
	}
	rec.Path = path
	meta, err := readSessionMeta(path)
	if err != nil {
		rec.Problem, rec.ProblemVerdict = err.Error(), domain.VerdictMalformed
		return rec
	}
	if meta.ID != "" && meta.ID != id {
		rec.Problem, rec.ProblemVerdict = fmt.Sprintf("rollout %s names thread %s, not %s", path, meta.ID, id), domain.VerdictMalformed
		return rec
	}
	rec.Cwd, rec.Version = meta.Cwd, meta.CLIVersion
	if t, err := time.Parse(time.RFC3339Nano, meta.Timestamp); err == nil {
		rec.StartedAt = t
	}
	return rec
}

// sessionMeta is the payload of a rollout's first line
// {"type":"session_meta","payload":{…}} (Codex 0.171.0).
type sessionMeta struct {
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Cwd        string `json:"cwd"`
	CLIVersion string `json:"cli_version"`
}

// readSessionMeta reads the first line of a rollout, at most maxMetaLine
// bytes, without blocking on a fifo; a line cut short (no newline) or
// that is not session_meta is an error saying so.
func readSessionMeta(path string) (sessionMeta, error) {
	f, err := openRegular(path)
	if err != nil {
		return sessionMeta{}, fmt.Errorf("rollout %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, maxMetaLine)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return sessionMeta{}, fmt.Errorf("rollout %s: %w", path, err)
	}
	line, _, ok := bytes.Cut(buf[:n], []byte("\n"))
	if !ok {
		return sessionMeta{}, fmt.Errorf("rollout %s: its first line is truncated (no newline in its first %d bytes)", path, n)
	}
	var first struct {
		Type    string      `json:"type"`
		Payload sessionMeta `json:"payload"`
	}
	if err := json.Unmarshal(line, &first); err != nil || first.Type != "session_meta" {
		return sessionMeta{}, fmt.Errorf("rollout %s: its first line is not a session_meta record", path)
	}
	return first.Payload, nil
}

// maxPreviewScan bounds what is read of a rollout for its first message
// (bytes).
const maxPreviewScan = 1 << 20

// firstUserMessage is the text of the first message a person sent in the
// rollout at path (an event_msg item_completed whose item is a
// UserMessage, Codex 0.171.0), "" when none is within its first
// maxPreviewScan bytes; lines over maxMetaLine bytes are skipped.
func firstUserMessage(path string) string {
	f, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, maxPreviewScan))
	for {
		raw, long, err := readIndexLine(br)
		if !long && bytes.Contains(raw, []byte(`"UserMessage"`)) {
			var line struct {
				Type    string `json:"type"`
				Payload struct {
					Type string `json:"type"`
					Item struct {
						Type    string `json:"type"`
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"item"`
				} `json:"payload"`
			}
			if json.Unmarshal(raw, &line) == nil && line.Type == "event_msg" && line.Payload.Type == "item_completed" && line.Payload.Item.Type == "UserMessage" {
				var b strings.Builder
				for _, c := range line.Payload.Item.Content {
					b.WriteString(c.Text)
				}
				return b.String()
			}
		}
		if err != nil {
			return ""
		}
	}
}

// readDaemonPID reads the daemon's pid from daemon.pid (0 when absent or
// unreadable; at most 64 KiB are read).
func readDaemonPID(home string) int {
	f, err := openRegular(codexapp.DaemonPIDFile(home))
	if err != nil {
		return 0
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	var d struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &d) != nil {
		return 0
	}
	return d.PID
}

func pids(ps []proc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p.pid)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// oneLine keeps a title to one line of at most 200 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
