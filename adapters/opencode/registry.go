package opencode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// DefaultAsk bounds the questions to one server while reading the
// registry (health, sessions, status). Servers are asked in parallel; a
// server in a turn on a loaded machine answers in seconds (measured on
// 2 busy CPUs), so the bound is generous.
const DefaultAsk = 10 * time.Second

// Registry lists the opencode sessions a live opencode server can reach
// (docs/OPENCODE.md, opencode-ai 1.18.33): for every opencode process of
// this user (/proc) whose environment names peerctl's opencode database
// (Database: one opencode user's sessions) that is a server (`opencode serve`) or a TUI started
// with --port, its listening ports (its socket inodes in /proc/net/tcp*)
// are probed with GET /global/health; the first that answers as opencode
// is the process's server, and the root sessions of the process's folder
// (GET /session) are its records, pid and start the process's. A session
// no live server of its folder reaches is no record, whatever opencode's
// database holds. A plain TUI (no --port) is one record, live and not
// addressable, with the fix. A port that answers but not as opencode, or a
// server that asks for a password peerctl lacks, is a record with that
// problem. It never writes opencode's state.
type Registry struct {
	procRoot string
	ask      time.Duration
	auth     Auth
	domain   string
	uid      int
	// prover proves each connection the server process's (zero: /proc);
	// serverPID is the process a connection must be (nil: the one
	// found); tests that make up /proc set both.
	prover      sockowner.Prover
	serverPIDOf func(int) int
	db          string
	// kept, when set, keeps the clients of the servers found for a send
	// that follows (servers); nil: each is closed after its read.
	kept *servers
	// goos is the system read (thisOS; tests set another): off Linux no
	// process is found (unsupported).
	goos string
}

var _ ports.HarnessRegistry = (*Registry)(nil)

// NewRegistry reads this machine's /proc for the processes of database db
// (Database); auth is the servers' password (zero: none); pidDomain ours,
// given to every record.
func NewRegistry(db string, auth Auth, pidDomain string) *Registry {
	return &Registry{procRoot: "/proc", ask: DefaultAsk, auth: auth, domain: pidDomain, uid: getuid(), db: db, goos: thisOS}
}

// Harness is Kind.
func (r *Registry) Harness() domain.Harness { return Kind }

// Read lists the records (see Registry). Servers are asked in parallel,
// each within the Registry's bound. Dir is "": no folder says which
// session is live, so none is watched. No database located (no $HOME, no
// $XDG_DATA_HOME) is an error; a database whose folder does not exist
// (opencode never ran for this user) costs one stat. On a system without
// /proc (macOS, Windows) nothing is read: no record, and a warning saying
// so when opencode has run for this user (its database exists).
func (r *Registry) Read(ctx context.Context) (ports.Snapshot, error) {
	var snap ports.Snapshot
	if r.db == "" {
		return snap, errors.New("locate opencode's database: no $OPENCODE_DB, $XDG_DATA_HOME or $HOME")
	}
	if why := unsupported(r.goos); why != "" {
		if used(r.db) {
			snap.Warnings = append(snap.Warnings, "opencode: "+why)
		}
		return snap, nil
	}
	if _, err := os.Stat(filepath.Dir(r.db)); errors.Is(err, os.ErrNotExist) {
		// No opencode process uses a database whose folder does not
		// exist (opencode makes it first): nothing to look for.
		return snap, nil
	}
	procs := scanProcs(procliveness.TableOf(ctx, r.procRoot), r.uid, r.db)
	recs := make([][]domain.Record, len(procs))
	clients := make([]*Client, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i], clients[i] = r.records(ctx, p)
		}()
	}
	wg.Wait()
	r.keep(procs, clients)
	for _, rs := range recs {
		for _, rec := range rs {
			rec.PIDDomain = r.domain
			snap.Records = append(snap.Records, rec)
		}
	}
	return snap, ctx.Err()
}

// base is the record of process p before its sessions are known.
func base(p proc) domain.Record {
	return domain.Record{Harness: Kind, File: "pid " + strconv.Itoa(p.pid), PID: p.pid, ProcStart: p.start, Cwd: p.cwd, Kind: p.kind}
}

// name is the name of p's record while it has no session: "opencode TUI
// in FOLDER" for a TUI (with a port or without), "opencode serve in
// FOLDER" for a headless server, FOLDER the last element of its cwd.
func (p proc) name() string {
	what := p.kind
	if p.kind == KindTUI || p.kind == KindPlainTUI {
		what = "TUI"
	}
	return "opencode " + what + " in " + filepath.Base(p.cwd)
}

// keep hands the clients of the servers found (clients[i] is procs[i]'s,
// nil for none) to r.kept, or closes them when nothing keeps them.
func (r *Registry) keep(procs []proc, clients []*Client) {
	found := map[string]*Client{}
	for i, c := range clients {
		switch {
		case c == nil:
		case r.kept == nil:
			c.Close()
		default:
			found[serverKey(procs[i].pid, procs[i].start, c.addr)] = c
		}
	}
	if r.kept != nil {
		r.kept.replace(found)
	}
}

// records are process p's records, and the client of its server when its
// sessions were read (nil otherwise), for the caller to keep or close.
func (r *Registry) records(ctx context.Context, p proc) ([]domain.Record, *Client) {
	rec := base(p)
	if p.kind == KindPlainTUI {
		rec.Name = p.name()
		return []domain.Record{rec}, nil
	}
	if len(p.addrs) == 0 {
		rec.Name = p.name()
		return []domain.Record{rec}, nil // starting, or listening elsewhere: unaddressable
	}
	ctx, cancel := context.WithTimeout(ctx, r.ask)
	defer cancel()
	c, version, errs := r.probe(ctx, p)
	var locked *PasswordError
	for _, err := range errs {
		if locked == nil {
			errors.As(err, &locked)
		}
	}
	if c != nil {
		rec.SocketPath = c.addr
	}
	if c == nil {
		if locked != nil {
			// Live, and opencode's: it asks for a password peerctl lacks,
			// or refused peerctl's.
			rec.Kind, rec.SocketPath = KindLocked, locked.Addr
			if locked.Given {
				rec.Kind = KindRefused
			}
			rec.Name = p.name() + " (password-protected)"
			return []domain.Record{rec}, nil
		}
		rec.Problem, rec.ProblemVerdict = fmt.Sprintf("opencode process (pid %d) listens but no address answers as opencode's server: %v", p.pid, errors.Join(errs...)), domain.VerdictUnreadable
		return []domain.Record{rec}, nil
	}
	rec.Version = version
	sessions, skipped, err := c.Sessions(ctx, p.cwd)
	if err != nil {
		c.Close()
		rec.Problem, rec.ProblemVerdict = fmt.Sprintf("opencode server %s (pid %d): %v", rec.SocketPath, p.pid, err), domain.VerdictUnreadable
		return []domain.Record{rec}, nil
	}
	busy, _ := c.Busy(ctx)
	var out []domain.Record
	for _, s := range sessions {
		if s.Time.Archived != 0 || filepath.Clean(s.Directory) != filepath.Clean(p.cwd) {
			continue
		}
		sr := rec
		sr.File = sr.File + " " + s.ID
		sr.SessionID, sr.Name = s.ID, oneLine(s.Title)
		sr.StartedAt, sr.UpdatedAt = millis(s.Time.Created), millis(s.Time.Updated)
		sr.Status = domain.StatusIdle
		if busy[s.ID] {
			sr.Status = domain.StatusBusy
		}
		out = append(out, sr)
	}
	for _, why := range skipped {
		bad := rec
		bad.Problem, bad.ProblemVerdict = fmt.Sprintf("opencode server %s: %s", rec.SocketPath, why), domain.VerdictMalformed
		out = append(out, bad)
	}
	if len(out) == 0 {
		rec.Name = p.name()
		out = append(out, rec) // a server with no session yet: live, not addressable
	}
	return out, c
}

// probe asks each of p's listeners GET /global/health at once (a
// process may hold a listener that takes a connection and never answers
// HTTP, as a real opencode serve did after its first turn: it must not
// eat the others' time): the first to answer as opencode is the server
// (its client, to be closed by the caller, and version; opencode binds
// one address, so there is one); else nil and each listener's error, once
// all answered or ctx ended.
func (r *Registry) probe(ctx context.Context, p proc) (*Client, string, []error) {
	type answer struct {
		c       *Client
		version string
		err     error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, len(p.addrs))
	for _, addr := range p.addrs {
		go func() {
			cl := NewClient(addr, r.serverPID(p.pid), r.auth, r.prover)
			v, err := cl.Health(ctx)
			if err != nil {
				cl.Close()
				cl, err = nil, fmt.Errorf("%s: %w", addr, err)
			}
			answers <- answer{cl, v, err}
		}()
	}
	var errs []error
	for range p.addrs {
		a := <-answers
		if a.c != nil {
			// The others end with ctx; their answers go to the buffer.
			return a.c, a.version, nil
		}
		errs = append(errs, a.err)
	}
	return nil, "", errs
}

// serverPID is the process a connection to process pid's listener must
// reach.
func (r *Registry) serverPID(pid int) int {
	if r.serverPIDOf != nil {
		return r.serverPIDOf(pid)
	}
	return pid
}

func millis(ms int64) time.Time {
	if ms <= 0 || ms > domain.MaxPlausibleMillis {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
