package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// maxIndex bounds what is read of session_index.jsonl (bytes).
const maxIndex = 16 << 20

var _ ports.KnownRegistry = (*Registry)(nil)

// Known lists every thread the Codex home knows, open or not, for the
// durable queue transport (ports.KnownRegistry): the daemon's thread/list
// when a daemon is up, else (none, or one killed that left its socket
// behind) the files Codex documents, the rollouts
// (sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl) and the names of
// session_index.jsonl. A record's Name is the thread's name only (never
// its preview). A thread the daemon holds loaded carries the daemon's
// status and a Problem (headless: a text queued for it would run at once,
// with no one watching), and so does a thread a `codex exec` run holds (a
// text queued for it is not seen by the run). It never writes Codex's
// state.
func (r *Registry) Known(ctx context.Context) ([]domain.Record, error) {
	recs, gone, err := r.known(ctx)
	if err != nil {
		return nil, err
	}
	procs := scanProcs(procliveness.TableOf(ctx, r.procRoot), r.home)
	daemonPID := readDaemonPID(r.home)
	markDescendants(procs, daemonPID, procliveness.NewTree(r.procRoot))
	if gone {
		recs = markOrphans(recs, r.orphans(procs, daemonPID))
	}
	return markExecRuns(recs, procs, daemonPID), nil
}

// markExecRuns gives each thread whose writer lock a running `codex exec`
// holds that run's Problem (headless; see execProblem).
func markExecRuns(recs []domain.Record, procs []proc, daemonPID int) []domain.Record {
	held := map[string]proc{}
	for _, p := range procs {
		if p.role(daemonPID) == KindExec {
			for _, id := range p.locks {
				held[id] = p
			}
		}
	}
	for i, rec := range recs {
		if p, ok := held[rec.SessionID]; ok {
			recs[i].Kind = KindExec
			recs[i].Problem, recs[i].ProblemVerdict = execProblem(p, rec.SessionID), domain.VerdictHeadless
		}
	}
	return recs
}

// known is Known before its marks; gone says no daemon serves the home
// (none, or one killed that left its socket behind).
func (r *Registry) known(ctx context.Context) (_ []domain.Record, gone bool, err error) {
	sock, err := codexapp.Socket(r.home, getuid(), r.dirs...)
	if errors.Is(err, codexapp.ErrNoDaemon) {
		recs, err := r.knownFiles()
		return recs, true, err
	}
	if err != nil {
		return nil, false, err
	}
	if err := r.memo.recall(); err != nil {
		return nil, false, err
	}
	defer func(parent context.Context) {
		err = daemonSilent(r.home, r.procRoot, r.ask, err)
		r.memo.remember(parent, err)
	}(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.ask)
	defer cancel()
	c, err := codexapp.Open(ctx, sock, r.version)
	if daemonGone(err) {
		recs, err := r.knownFiles() // a daemon killed left its socket: none runs
		return recs, true, err
	}
	if err != nil {
		return nil, false, err // it names the socket
	}
	defer c.Close()
	rows, _, err := c.ListThreads(ctx)
	if err != nil {
		return nil, false, err
	}
	out := make([]domain.Record, 0, len(rows))
	for _, t := range rows {
		rec := threadRecord(t, sock)
		if t.Name == nil {
			rec.Name = ""
		}
		if rec.Status != domain.StatusUnknown {
			// Loaded (idle or active; notLoaded has no status): asked
			// for, it has no live client (else it resolved live), so a
			// text queued now would run at once, unseen.
			rec.Problem, rec.ProblemVerdict, rec.ProblemShort = afterglow(t.ID), domain.VerdictHeadless, afterglowShort(t.ID)
		}
		out = append(out, rec)
	}
	return out, false, nil
}

// knownFiles lists the threads of the rollouts and session_index.jsonl,
// named by its last line for each id (a rename appends a line).
func (r *Registry) knownFiles() ([]domain.Record, error) {
	byID := map[string]*domain.Record{}
	get := func(id string) *domain.Record {
		if rec, ok := byID[id]; ok {
			return rec
		}
		rec := &domain.Record{Harness: Kind, File: id, SessionID: id}
		byID[id] = rec
		return rec
	}
	rollouts, _ := filepath.Glob(filepath.Join(r.home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	for _, f := range rollouts {
		if id := rolloutThread(f); id != "" {
			get(id).Path = f
		}
	}
	err := readSessionIndex(filepath.Join(r.home, "session_index.jsonl"), func(id, name string) {
		get(id).Name = oneLine(name)
	})
	out := make([]domain.Record, 0, len(byID))
	for _, rec := range byID {
		out = append(out, *rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SessionID < out[j].SessionID })
	return out, err
}

// readSessionIndex calls named for each line {"id","thread_name",…} of
// session_index.jsonl whose id is a UUID, reading at most maxIndex bytes
// of lines of at most maxMetaLine bytes; an absent file is no error, a
// line that is not such a record, or is longer (a name pasted whole, say),
// is skipped: no one line can keep the others from being read.
func readSessionIndex(path string, named func(id, name string)) error {
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session index %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, maxIndex))
	for {
		raw, long, err := readIndexLine(br)
		if !long {
			var line struct {
				ID   string `json:"id"`
				Name string `json:"thread_name"`
			}
			if json.Unmarshal(raw, &line) == nil && IsUUID(line.ID) {
				named(line.ID, line.Name)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("session index %s: %w", path, err)
		}
	}
	return nil
}

// readIndexLine reads one line of at most maxMetaLine bytes; a longer one
// is read to its end and dropped (long). err is io.EOF after the last line.
func readIndexLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > maxMetaLine {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, long, err
		}
	}
}
