package app

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Registries reads several harnesses' registries as one: the first is the
// primary (Claude Code's, whose folder the Snapshot names); the others'
// records follow, and their folders are listed in Snapshot.Also. One
// resolve/verify rule set then serves every harness (domain.Resolve). A
// missing folder of another harness costs one failed open. One harness's
// trouble is not another's: a registry that cannot be read is listed in
// Snapshot.Unread and the others are read all the same; the read is an
// error only when no registry could be read.
type Registries []ports.Registry

var _ ports.SelectiveRegistry = Registries(nil)

// Read reads every registry.
func (rs Registries) Read(ctx context.Context) (ports.Snapshot, error) {
	return rs.read(ctx, nil)
}

// ReadMatching reads every registry, skipping what keep rejects where a
// registry can (ports.SelectiveRegistry).
func (rs Registries) ReadMatching(ctx context.Context, keep func(name string) bool) (ports.Snapshot, error) {
	return rs.read(ctx, keep)
}

func (rs Registries) read(ctx context.Context, keep func(string) bool) (ports.Snapshot, error) {
	var (
		out  ports.Snapshot
		errs []error
	)
	for i, r := range rs {
		var (
			snap ports.Snapshot
			err  error
		)
		if sel, ok := r.(ports.SelectiveRegistry); ok && keep != nil {
			snap, err = sel.ReadMatching(ctx, keep)
		} else {
			snap, err = r.Read(ctx)
		}
		if i == 0 {
			out.Dir, out.Missing = snap.Dir, snap.Missing
		} else if snap.Dir != "" {
			out.Also = append(out.Also, snap.Dir)
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if err != nil {
			u := ports.Unread{Dir: snap.Dir, Err: err}
			if h, ok := r.(ports.HarnessRegistry); ok {
				u.Harness = h.Harness()
			}
			out.Unread = append(out.Unread, u)
			errs = append(errs, err)
			continue
		}
		out.Records = append(out.Records, snap.Records...)
		out.Unread = append(out.Unread, snap.Unread...)
	}
	if len(errs) == len(rs) && len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	return out, nil
}

// Unlocated stands for a harness's registry whose folder could not even
// be located (Qwen Code's home with neither $QWEN_HOME nor $HOME): every
// read is the locating error, reported as that harness's.
type Unlocated struct {
	Of  domain.Harness
	Err error
}

var _ ports.HarnessRegistry = Unlocated{}

// Read returns the locating error.
func (u Unlocated) Read(context.Context) (ports.Snapshot, error) { return ports.Snapshot{}, u.Err }

// Harness is the harness whose registry could not be located.
func (u Unlocated) Harness() domain.Harness { return u.Of }

// HarnessLiveness checks each record with its harness's checker; a harness
// without one uses Default.
type HarnessLiveness struct {
	Default ports.Liveness
	By      map[domain.Harness]ports.Liveness
}

var _ ports.PIDProber = HarnessLiveness{}

// Check dispatches on rec.Harness.
func (h HarnessLiveness) Check(rec domain.Record) domain.Liveness {
	if l, ok := h.By[rec.Harness]; ok {
		return l.Check(rec)
	}
	return h.Default.Check(rec)
}

// Gone asks Default (false when it cannot tell).
func (h HarnessLiveness) Gone(pid int) bool {
	p, ok := h.Default.(ports.PIDProber)
	return ok && p.Gone(pid)
}

// Router is the transport Send uses: it picks, per target, the transport
// named by Chosen among those that serve the target's harness, or the
// harness's first (its default) when Chosen is "". A named transport that
// does not serve the harness refuses with harness_unsupported.
type Router struct {
	Chosen string
	By     map[domain.Harness][]ports.Transport
}

var _ ports.Heeding = (*Router)(nil)

// Name is the chosen transport's name, or "auto".
func (r *Router) Name() string {
	if r.Chosen == "" {
		return "auto"
	}
	return r.Chosen
}

// Pick returns the transport for target.
func (r *Router) Pick(target domain.Session) (ports.Transport, error) {
	ts := r.By[target.Harness()]
	if len(ts) == 0 {
		return nil, domain.Refuse(domain.ReasonHarnessUnsupported, "no transport serves %s sessions", target.Harness())
	}
	if r.Chosen == "" {
		return ts[0], nil
	}
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		if t.Name() == r.Chosen {
			return t, nil
		}
		names = append(names, t.Name())
	}
	return nil, domain.Refuse(domain.ReasonHarnessUnsupported, "transport %q cannot reach session %s, a %s session (its transports: %s)",
		r.Chosen, target.ID(), target.Harness(), strings.Join(names, ", "))
}

// Deliver hands msg to the picked transport.
func (r *Router) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	t, err := r.Pick(target)
	if err != nil {
		return domain.Receipt{}, err
	}
	return t.Deliver(ctx, target, msg)
}

// DeliverHeeding hands msg to the picked transport; when that transport
// can still turn its receipt (a ports.Heeding, the courier) its Heed comes
// back, else the Heed is nil.
func (r *Router) DeliverHeeding(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, ports.Heed, error) {
	t, err := r.Pick(target)
	if err != nil {
		return domain.Receipt{}, nil, err
	}
	if h, ok := t.(ports.Heeding); ok {
		return h.DeliverHeeding(ctx, target, msg)
	}
	rec, err := t.Deliver(ctx, target, msg)
	return rec, nil, err
}

// Plan asks the picked transport.
func (r *Router) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	t, err := r.Pick(target)
	if err != nil {
		return domain.Plan{}, err
	}
	return t.Plan(target, msg)
}

// QwenTranscriptPath is a Qwen Code session's chat transcript (0.24.4):
// <qwen home>/projects/<cwd with every "/" made "-">/chats/<sessionId>.jsonl,
// "" when home, cwd or the session id is unknown.
func QwenTranscriptPath(home, cwd, sessionID string) string {
	if home == "" || cwd == "" || sessionID == "" || strings.ContainsAny(sessionID, "/\\") {
		return ""
	}
	return filepath.Join(home, "projects", strings.ReplaceAll(cwd, "/", "-"), "chats", sessionID+".jsonl")
}

// transcriptOf is the transcript path of a session of either harness.
func (s *Service) transcriptOf(r domain.Record) string {
	if r.Harness == domain.HarnessQwenCode {
		return QwenTranscriptPath(s.qwenHome, r.Cwd, r.SessionID)
	}
	return domain.TranscriptPath(s.configDir, r.Cwd, r.SessionID)
}

// WithQwenHome tells the Service Qwen Code's home folder (for transcript
// paths).
func WithQwenHome(home string) Option { return func(s *Service) { s.qwenHome = home } }

// qwenConfirm is afterDelivery for a Qwen Code target: the session's own
// receipt is the confirmation (its transcript is not read), and its record
// publishes no status to wait on.
func (s *Service) qwenConfirm(req SendRequest, res SendResult) (SendResult, error) {
	res.Outcome = domain.ParseOutcome(res.Receipt.Outcome)
	res.Transcript = s.transcriptOf(res.Target.Record())
	switch res.Outcome {
	case domain.OutcomeDelivered:
		res.Confirmed = true
	case domain.OutcomeHeld:
		res.ConfirmNote = "Qwen Code holds it for its user to accept or deny (/peers)"
	default:
		res.ConfirmNote = "no receipt from Qwen Code"
	}
	if req.NoConfirm {
		res.ConfirmNote, res.ConfirmSkipped = "receipt not awaited", true
	}
	if req.Wait > 0 {
		res.WaitEnd, res.WaitStatus = domain.WaitNone, res.Target.Status()
		res.WaitNote = "not waited: Qwen Code records publish no status"
	}
	res.Elapsed = s.now().Sub(res.Started)
	if !res.Confirmed && req.RequireConfirm {
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "%s by %s but not confirmed: %s", res.Outcome, res.Receipt.Transport, res.ConfirmNote)
	}
	return res, nil
}

// startTicks is the start a record's process is followed by (the exit
// watcher compares it with field 22 of /proc/<pid>/stat): Qwen Code writes
// "<boot_id>:<ticks>".
func startTicks(r domain.Record) string {
	start, _, _ := r.CheckedStart()
	if r.Harness == domain.HarnessQwenCode {
		if _, ticks, ok := strings.Cut(start, ":"); ok {
			return ticks
		}
	}
	return start
}

// FilterHarness keeps the entries of the given harnesses (all when none).
func FilterHarness(entries []domain.Entry, hs ...domain.Harness) []domain.Entry {
	if len(hs) == 0 {
		return entries
	}
	var out []domain.Entry
	for _, e := range entries {
		for _, h := range hs {
			if e.Record.Harness == h {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// watchFolders watches every registry folder and merges their change
// signals into one channel, closed once every watch has ended; nil when no
// folder could be watched.
func (s *Service) watchFolders(ctx context.Context, dirs []string) <-chan struct{} {
	var chans []<-chan struct{}
	for _, d := range dirs {
		if ch, err := s.folders.Watch(ctx, d); err == nil {
			chans = append(chans, ch)
		}
	}
	switch len(chans) {
	case 0:
		return nil
	case 1:
		return chans[0]
	}
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	for _, ch := range chans {
		go func() {
			defer func() { done <- struct{}{} }()
			for range ch {
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}()
	}
	go func() {
		for range chans {
			<-done
		}
		close(out)
	}()
	return out
}
