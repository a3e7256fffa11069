package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Harnesses is the set of harness plug-ins the graph received (the value
// group "harnesses"), ordered by kind: the first is the primary, whose
// registry folder a Listing names (Listing.Dir). Everything the app does
// per harness goes through what these report.
type Harnesses []ports.Harness

// NewHarnesses orders the value group by kind.
func NewHarnesses(hs []ports.Harness) Harnesses {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b ports.Harness) int { return int(a.Kind()) - int(b.Kind()) })
	return out
}

// Of returns the plug-in of harness k.
func (hs Harnesses) Of(k domain.Harness) (ports.Harness, bool) {
	for _, h := range hs {
		if h.Kind() == k {
			return h, true
		}
	}
	return nil, false
}

// Registry reads every harness's registry as one (Registries).
func (hs Harnesses) Registry() Registries {
	rs := make(Registries, len(hs))
	for i, h := range hs {
		rs[i] = h.Registry()
	}
	return rs
}

// Liveness checks each record with its harness's rules.
func (hs Harnesses) Liveness() HarnessLiveness {
	hl := HarnessLiveness{By: map[domain.Harness]ports.Liveness{}}
	for _, h := range hs {
		hl.By[h.Kind()] = h.Liveness()
		if hl.Default == nil {
			hl.Default = h.Liveness()
		}
	}
	return hl
}

// Router routes each send to its harness's transports; chosen names one
// ("" for each harness's default).
func (hs Harnesses) Router(chosen string) *Router {
	r := &Router{Chosen: chosen, By: map[domain.Harness][]ports.Transport{}}
	for _, h := range hs {
		r.By[h.Kind()] = h.Transports()
	}
	return r
}

// Couriers are every harness's long-lived couriers (those that have some).
func (hs Harnesses) Couriers() HarnessCouriers {
	hc := HarnessCouriers{}
	for _, h := range hs {
		if c := h.Couriers(); c != nil {
			hc[h.Kind()] = c
		}
	}
	return hc
}

// Registries reads several harnesses' registries as one: the first is the
// primary, whose folder the Snapshot names; the others' records follow,
// and their folders are listed in Snapshot.Also. One resolve/verify rule
// set then serves every harness (domain.Resolve). A missing folder of
// another harness costs one failed open. One harness's trouble is not
// another's: a registry that cannot be read is listed in Snapshot.Unread
// and the others are read all the same; the read is an error only when no
// registry could be read. The registries of one read share a read scope
// (ports.WithReadScope): a pass over the process table two harnesses need
// is made once.
type Registries []ports.Registry

var _ ports.PIDRegistry = Registries(nil)

// Read reads every registry.
func (rs Registries) Read(ctx context.Context) (ports.Snapshot, error) {
	return rs.read(ctx, nil)
}

// ReadMatching reads every registry, skipping what keep leaves out where a
// registry can (ports.SelectiveRegistry): each such registry asks keep
// once, about its own folder, after listing it.
func (rs Registries) ReadMatching(ctx context.Context, keep func(names []string) []string) (ports.Snapshot, error) {
	return rs.read(ctx, keep)
}

// ReadListed reads every registry, each that reads by process
// (ports.PIDRegistry) with live, the others as ReadMatching.
func (rs Registries) ReadListed(ctx context.Context, live ports.PIDLister, keep func(names []string) []string) (ports.Snapshot, error) {
	return rs.readWith(ctx, keep, live)
}

func (rs Registries) read(ctx context.Context, keep func([]string) []string) (ports.Snapshot, error) {
	return rs.readWith(ctx, keep, nil)
}

func (rs Registries) readWith(ctx context.Context, keep func([]string) []string, live ports.PIDLister) (ports.Snapshot, error) {
	// One scope per read: what the registries share (one pass over the
	// process table) is built once for this read, afresh for the next.
	ctx = ports.WithReadScope(ctx)
	var (
		out  ports.Snapshot
		errs []error
	)
	for i, r := range rs {
		var (
			snap ports.Snapshot
			err  error
		)
		if pr, ok := r.(ports.PIDRegistry); ok && keep != nil && live != nil {
			snap, err = pr.ReadListed(ctx, live, keep)
		} else if sel, ok := r.(ports.SelectiveRegistry); ok && keep != nil {
			snap, err = sel.ReadMatching(ctx, keep)
		} else {
			snap, err = r.Read(ctx)
		}
		if i == 0 {
			out.Dir, out.Missing = snap.Dir, snap.Missing
		} else if snap.Dir != "" {
			out.Also = append(out.Also, snap.Dir)
		}
		h, _ := r.(ports.HarnessRegistry)
		if snap.Missing && h != nil {
			out.Absent = append(out.Absent, ports.Unread{Harness: h.Harness(), Dir: snap.Dir})
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if err != nil {
			u := ports.Unread{Dir: snap.Dir, Err: err}
			if h != nil {
				u.Harness = h.Harness()
			}
			out.Unread = append(out.Unread, u)
			errs = append(errs, err)
			continue
		}
		out.Records = append(out.Records, snap.Records...)
		out.Unread = append(out.Unread, snap.Unread...)
		out.Warnings = append(out.Warnings, snap.Warnings...)
		out.Skipped += snap.Skipped
	}
	if len(errs) == len(rs) && len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	return out, nil
}

// HarnessLiveness checks each record with its harness's checker; a harness
// without one uses Default.
type HarnessLiveness struct {
	Default ports.Liveness
	By      map[domain.Harness]ports.Liveness
}

var _ ports.PIDLister = HarnessLiveness{}

// Check dispatches on rec.Harness.
func (h HarnessLiveness) Check(rec domain.Record) domain.Liveness {
	if l, ok := h.By[rec.Harness]; ok {
		return l.Check(rec)
	}
	return h.Default.Check(rec)
}

// Gone asks Default (all false when it cannot tell).
func (h HarnessLiveness) Gone(pids []int) []bool {
	if p, ok := h.Default.(ports.PIDProber); ok {
		return p.Gone(pids)
	}
	return make([]bool, len(pids))
}

// Processes asks Default (0 when it cannot tell).
func (h HarnessLiveness) Processes() int {
	if p, ok := h.Default.(ports.PIDLister); ok {
		return p.Processes()
	}
	return 0
}

// Listed asks Default (not ok when it cannot list).
func (h HarnessLiveness) Listed() ([]int, bool) {
	if p, ok := h.Default.(ports.PIDLister); ok {
		return p.Listed()
	}
	return nil, false
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

// Durable names the durable transport (ports.DurableTransport) that
// serves harness k: the chosen one (chosen true), else, when another is
// chosen or none, the harness's first durable one; "" when it has none.
func (r *Router) Durable(k domain.Harness) (name string, chosen bool) {
	for _, t := range r.By[k] {
		if _, ok := t.(ports.DurableTransport); !ok {
			continue
		}
		if t.Name() == r.Chosen {
			return t.Name(), true
		}
		if name == "" {
			name = t.Name()
		}
	}
	return name, false
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

// WithHarnesses gives the Service the harness plug-ins: each record's
// transcript, confirmation rule and process start come from its harness's.
// A Service without them treats every record as the primary harness's
// would be treated with no plug-in: transcripts under the configDir given
// to New (domain.TranscriptPath), confirmed from them.
func WithHarnesses(hs Harnesses) Option { return func(s *Service) { s.harnesses = hs } }

// transcriptOf is the transcript path of a session of any harness.
func (s *Service) transcriptOf(r domain.Record) string {
	if h, ok := s.harnesses.Of(r.Harness); ok {
		return h.Transcript(r)
	}
	return domain.TranscriptPath(s.configDir, r.Cwd, r.SessionID)
}

// confirmRule is how deliveries to target's harness are confirmed.
func (s *Service) confirmRule(target domain.Session) ports.ConfirmRule {
	if h, ok := s.harnesses.Of(target.Harness()); ok {
		return h.Confirm()
	}
	return ports.ConfirmRule{}
}

// unsettled is the refusal of a hand-over to target while it is still
// starting and so holds what is posted to it (domain.Record.Starting),
// for a harness whose records publish a status (not
// ports.ConfirmRule.ByReceipt); nil when it may be handed a message. now
// is the clock. It is the one rule for a durable message, here
// (Outbox.Attempt) and on another machine (SendRequest.Settled): a
// not_addressable refusal, which may pass, before anything is sent.
func (s *Service) unsettled(target domain.Session, now time.Time) *domain.Refusal {
	if !s.starting(target, now) {
		return nil
	}
	return domain.Refuse(domain.ReasonNotAddressable, "%s, so it is handed over once it has", StartingNote(target))
}

// starting reports whether target is still starting at now and holds what
// is posted to it (domain.Record.Starting), for a harness whose records
// publish a status (not ports.ConfirmRule.ByReceipt): the one rule of
// unsettled and of a plain send's warning (unconfirmedHint).
func (s *Service) starting(target domain.Session, now time.Time) bool {
	return !s.confirmRule(target).ByReceipt && target.Record().Starting(now)
}

// receiptConfirm is afterDelivery for a harness whose receipt is the
// confirmation (ports.ConfirmRule.ByReceipt): its transcript is not read,
// and its record publishes no status to wait on (a wait, when its
// harness can see a turn end, is sendAwaiting's).
func (s *Service) receiptConfirm(req SendRequest, res SendResult, rule ports.ConfirmRule) (SendResult, error) {
	res.Outcome, res.ByReceipt = domain.ParseOutcome(res.Receipt.Outcome), true
	res.Transcript = s.transcriptOf(res.Target.Record())
	switch res.Outcome {
	case domain.OutcomeDelivered:
		res.Confirmed = true
	case domain.OutcomeHeld:
		res.ConfirmNote = rule.Held
	default:
		res.ConfirmNote = rule.NoReceipt
	}
	if req.NoConfirm {
		res.ConfirmNote, res.ConfirmSkipped = "receipt not awaited", true
	}
	res.Elapsed = s.now().Sub(res.Started)
	if !res.Confirmed && req.RequireConfirm {
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "%s by %s but not confirmed: %s", res.Outcome, res.Receipt.Transport, res.ConfirmNote)
	}
	if req.Handed != nil {
		req.Handed(res)
	}
	return res, nil
}

// canWait refuses, with harness_unsupported, a wait (SendRequest.Wait)
// whose end peerctl cannot see: a target whose harness's receipt is its
// confirmation (rule.ByReceipt) and whose turn's end is not its couriers'
// reply (rule.ReplyEndsTurn: its rule.NoWait says why), or is but the
// transport chosen is not that courier (Codex's queue). A harness whose
// records publish a status is waited on by it (waitIdle).
func (s *Service) canWait(target domain.Session, rule ports.ConfirmRule) error {
	if !rule.ByReceipt {
		return nil
	}
	why := rule.NoWait
	if rule.ReplyEndsTurn && s.couriers != nil {
		r, ok := s.transport.(*Router)
		if !ok {
			return nil
		}
		t, err := r.Pick(target)
		if err != nil {
			return err
		}
		if _, ok := t.(ports.Couriers); ok {
			return nil
		}
		why = fmt.Sprintf("the %s transport hears nothing after the hand-over, so the end of the turn cannot be seen", t.Name())
		if d := r.By[target.Harness()][0]; d != t {
			if _, ok := d.(ports.Couriers); ok {
				why += fmt.Sprintf(" (%s's default transport, %s, hears it)", target.Harness(), d.Name())
			}
		}
	}
	if why == "" {
		why = fmt.Sprintf("peerctl cannot see when a turn of a %s session ends", target.Harness())
	}
	return domain.Refuse(domain.ReasonHarnessUnsupported, "--wait: %s; nothing was sent: send it without --wait (its receipt says whether the session has it)", why)
}

// canWaitStored is canWait for a durable message that asks to wait,
// before it is stored (Outbox.Submit), where the harness of its target can
// be told then: the address is an endpoint (its harness), or the records
// read now (entries, live or not) that it names by full session id or
// name are all of one harness, or the transport chosen serves one harness
// alone. Nil when the harness cannot be told (no record answers to the
// address: a name that may come later could be any harness's session):
// the message is stored, and the attempt that finds its target refuses the
// wait there as a plain send does.
func (s *Service) canWaitStored(entries []domain.Entry, address string) error {
	ep, epErr := domain.ParseEndpoint(address)
	var named []domain.Record
	kinds := map[domain.Harness]bool{}
	for _, e := range entries {
		r := e.Record
		if epErr == nil && r.Harness == ep.Harness() && domain.MayResolve(r, address) ||
			epErr != nil && (r.SessionID != "" && r.SessionID == address || r.Name != "" && r.Name == address) {
			named = append(named, r)
			kinds[r.Harness] = true
		}
	}
	if epErr == nil && len(named) == 0 {
		named, kinds[ep.Harness()] = []domain.Record{{Harness: ep.Harness(), PID: ep.PID(), SessionID: ep.Name()}}, true
	}
	if r, ok := s.transport.(*Router); ok && r.Chosen != "" && len(named) == 0 {
		for k, ts := range r.By {
			if slices.ContainsFunc(ts, func(t ports.Transport) bool { return t.Name() == r.Chosen }) {
				named, kinds[k] = append(named, domain.Record{Harness: k}), true
			}
		}
	}
	if len(kinds) != 1 {
		return nil
	}
	target := domain.NewDormantSession(named[0])
	return s.canWait(target, s.confirmRule(target))
}

// exitStart is the start a record's process is followed by (the exit
// watcher compares it with field 22 of /proc/<pid>/stat), as its harness
// says.
func (s *Service) exitStart(r domain.Record) string {
	if h, ok := s.harnesses.Of(r.Harness); ok {
		return h.ExitStart(r)
	}
	start, _, _ := r.CheckedStart()
	return start
}

// home is the primary harness's home (zero without plug-ins).
func (s *Service) home() ports.Home {
	if len(s.harnesses) == 0 {
		return ports.Home{Dir: s.configDir}
	}
	return s.harnesses[0].Home()
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
