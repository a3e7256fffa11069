// Package app holds peerctl's use cases (List, Show, Send) over the ports.
// Constructors work without fx; fx.go wires the adapters for the CLI and
// for hosts that embed peerctl.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Service runs the use cases. Build it with New.
type Service struct {
	reg       ports.Registry
	live      ports.Liveness
	transport ports.Transport
	configDir string
	harnesses Harnesses
	now       func() time.Time
	// after is the watch's timer (time.After; tests swap it).
	after func(time.Duration) <-chan time.Time

	// Optional ports (see Option): without them Send does not confirm
	// and watches poll.
	transcripts ports.Transcripts
	folders     ports.FolderWatcher
	exits       ports.ExitWatcher
	// couriers starts long-lived couriers (send --await-reply, Relay).
	couriers ports.Couriers
	// log hears the send trail (WithLog); silent by default.
	log *slog.Logger
	// policy and from: the trust policy every send asks (WithPolicy).
	policy ports.Policy
	from   Sending
}

// WithLog makes the Service log each send's resolved target at debug
// level (the adapters log the rest of the trail).
func WithLog(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// New builds a Service over composed ports (those of every harness: see
// Harnesses and WithHarnesses). configDir is where transcripts are looked
// for when no harness plug-in says (domain.TranscriptPath); it may be
// empty. Options add the optional ports.
func New(reg ports.Registry, live ports.Liveness, transport ports.Transport, configDir string, opts ...Option) *Service {
	s := &Service{reg: reg, live: live, transport: transport, configDir: configDir, now: time.Now, after: time.After}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Listing is the classified content of one registry read.
type Listing struct {
	// Dir is the primary harness's registry folder; Missing is true when
	// it does not exist. Home is that harness's home (its folder, and the
	// flag and variable naming it: empty without plug-ins) and DirHarness
	// the harness.
	Dir        string
	Missing    bool
	Home       ports.Home
	DirHarness domain.Harness
	// Also names the other harnesses' registry folders read.
	Also []string
	// Absent lists every harness's registry folder that does not exist.
	Absent []ports.Unread
	// Unread lists the harnesses whose registry could not be read; their
	// sessions are absent from Entries (see UnreadIn).
	Unread []ports.Unread
	// Warnings are the registries' warnings about a read that left
	// nothing out (ports.Snapshot.Warnings).
	Warnings []string
	// Entries holds one entry per record, in listOrder.
	Entries []domain.Entry
	// NotLive counts the records List without all left out (read and not
	// live, or files of gone pids skipped unread): what --all would add;
	// at least 1, not their number, where a read by process left a
	// folder's files unlisted (ports.Snapshot.Skipped).
	NotLive int
}

// Live returns the live entries only.
func (l Listing) Live() []domain.Entry {
	var out []domain.Entry
	for _, e := range l.Entries {
		if e.Live() {
			out = append(out, e)
		}
	}
	return out
}

// UnreadIn returns the unread registries of the given harnesses (every
// harness when none is given).
func (l Listing) UnreadIn(only ...domain.Harness) []ports.Unread {
	var out []ports.Unread
	for _, u := range l.Unread {
		if len(only) == 0 || slices.Contains(only, u.Harness) {
			out = append(out, u)
		}
	}
	return out
}

// Read reads the registry once and classifies every record. On error the
// Listing still names the folder (Dir) when the registry said it.
func (s *Service) Read(ctx context.Context) (Listing, error) {
	snap, err := s.reg.Read(ctx)
	if err != nil {
		return Listing{Dir: snap.Dir, Home: s.home(), Unread: snap.Unread}, err
	}
	return s.classify(snap), nil
}

// readLive is Read for callers that use the live entries only. When the
// registry can skip files (ports.SelectiveRegistry) and the liveness check
// can probe a bare pid (ports.PIDProber), a file named <pid>.json whose pid
// is gone is skipped unread: whatever it holds, its verdict cannot be live
// (stale, or misnamed, malformed, headless...). When the registry reads by
// process (ports.PIDRegistry) and the liveness check lists them
// (ports.PIDLister), a large folder is not even listed: only the files
// named after running processes are read. partial reports that
// records were possibly skipped; otherwise this is Read.
func (s *Service) readLive(ctx context.Context) (l Listing, partial bool, err error) {
	sel, ok1 := s.reg.(ports.SelectiveRegistry)
	probe, ok2 := s.live.(ports.PIDProber)
	if !ok1 || !ok2 {
		l, err = s.Read(ctx)
		return l, false, err
	}
	skipped := 0 // the registries are read one after another
	keep := func(names []string) []string {
		kept := notGone(names, probe)
		skipped += len(names) - len(kept)
		return kept
	}
	var snap ports.Snapshot
	lister, ok3 := probe.(ports.PIDLister)
	if pr, ok4 := sel.(ports.PIDRegistry); ok3 && ok4 {
		snap, err = pr.ReadListed(ctx, lister, keep)
	} else {
		snap, err = sel.ReadMatching(ctx, keep)
	}
	if err != nil {
		return Listing{}, true, err
	}
	l = s.classify(snap)
	l.NotLive = skipped + snap.Skipped
	return l, true, nil
}

// notGone keeps the names of one registry folder that are not <pid>.json
// of a gone pid, asking probe about the whole folder at once (ports.PIDProber:
// one listing of the processes, made after the folder's). It reuses names'
// array.
func notGone(names []string, probe ports.PIDProber) []string {
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, ok := filePID(n); ok {
			pids = append(pids, pid)
		}
	}
	gone := probe.Gone(pids)
	kept, i := names[:0], 0
	for _, n := range names {
		if _, ok := filePID(n); ok {
			i++
			if gone[i-1] {
				continue
			}
		}
		kept = append(kept, n)
	}
	return kept
}

// filePID returns the pid a registry file name claims: name must be
// exactly <pid>.json with pid in canonical decimal (no sign, no leading
// zero) between 1 and 2^31-1.
func filePID(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || digits == "" || len(digits) > 10 || digits[0] == '0' {
		return 0, false
	}
	pid := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	if pid > 1<<31-1 {
		return 0, false
	}
	return pid, true
}

// classify checks and classifies every record of one snapshot.
func (s *Service) classify(snap ports.Snapshot) Listing {
	l := Listing{Dir: snap.Dir, Missing: snap.Missing, Also: snap.Also, Absent: snap.Absent, Home: s.home(), Unread: snap.Unread, Warnings: snap.Warnings, Entries: make([]domain.Entry, 0, len(snap.Records))}
	if len(s.harnesses) > 0 {
		l.DirHarness = s.harnesses[0].Kind()
	}
	for _, rec := range snap.Records {
		var lv domain.Liveness
		if rec.Problem == "" || rec.ProblemVerdict == domain.VerdictMisnamed {
			lv = s.live.Check(rec)
		}
		e := domain.Classify(rec, lv)
		if !e.Live() && wentWithItsProcess(rec) {
			continue
		}
		l.Entries = append(l.Entries, e)
	}
	inspectSockets(l.Entries, os.Geteuid())
	slices.SortStableFunc(l.Entries, func(a, b domain.Entry) int { return listOrder(a.Record, b.Record) })
	return l
}

// listOrder is the order of a listing (docs/COMMANDS.md#peerctl-list):
// by start time, oldest first (a record with none after those with one),
// then by name, pid and file name. Pids wrap; start times do not.
func listOrder(a, b domain.Record) int {
	if az, bz := a.StartedAt.IsZero(), b.StartedAt.IsZero(); az != bz {
		if az {
			return 1
		}
		return -1
	}
	return cmp.Or(a.StartedAt.Compare(b.StartedAt), strings.Compare(a.Name, b.Name), cmp.Compare(a.PID, b.PID), strings.Compare(a.File, b.File))
}

// wentWithItsProcess reports whether rec's record file (rec.Path, when the
// registry is a folder of files: File is its base name) is gone now. The
// registry reads a file before its pid is checked: a session that removes
// its record and then exits (a clean exit) between the two is read as a
// record left by a dead process. Checked after the pid is found dead, a
// file that is gone means the record went with its process: no record,
// not a stale one. A Path that is not the record's own file (a Codex
// thread's rollout) says nothing of the sort.
func wentWithItsProcess(rec domain.Record) bool {
	if rec.Path == "" || filepath.Base(rec.Path) != rec.File {
		return false
	}
	_, err := os.Lstat(rec.Path)
	return errors.Is(err, fs.ErrNotExist)
}

// List returns the live sessions, or with all every record with its
// verdict. A live session whose socket cannot be connected to (the path is
// too long for this platform, absent, or not a socket) is listed as not
// addressable, with the reason.
func (s *Service) List(ctx context.Context, all bool) (Listing, error) {
	if all {
		l, err := s.Read(ctx)
		markUnreachable(l.Entries)
		return l, err
	}
	l, _, err := s.readLive(ctx)
	if err != nil {
		return l, err
	}
	markUnreachable(l.Entries)
	live := l.Live()
	l.NotLive += len(l.Entries) - len(live)
	l.Entries = live
	return l, nil
}

// Detail is everything known about one record, for `peerctl show`.
type Detail struct {
	Entry domain.Entry
	// SocketOnDisk is Yes when the record's socket path exists as a socket,
	// No when it is absent or not a socket, Unknown when there is no path
	// (none published, or a TCP address: domain.Record.SocketFile).
	SocketOnDisk domain.Tri
	SocketNote   string
	// Transcript is the transcript path ("" when unknown) and whether it exists.
	Transcript       string
	TranscriptExists bool
	// Notes are what its harness says a person should know about a live,
	// addressable session (ports.Harness.Notes).
	Notes []string
	// Glosses are its harness's words for show's rows (ports.Glosser).
	Glosses map[string]string
	// Warnings are notes about the session as addressed, e.g. that its name
	// is carried by another live session (address it by full id or
	// endpoint) or its socket published by another record (sending to it is
	// refused); empty when there is nothing to say.
	Warnings []string
}

// Show finds one session by address (see domain.Lookup) on a fresh read,
// the one List(all) makes, so that Entry.Addressable is list's.
// Show only reads, so the identity rule does not apply: a live session
// addressed by full id, unique id prefix or endpoint is shown even when its
// name is shared, with a warning in Detail.Warnings; an ambiguous address is
// refused with its candidates. When no live session matches, a record
// matching by session id, name, id prefix, pid or file name is shown with
// its verdict: the only one, or the only live one when all matched by pid
// or file name (a live record and a misnamed copy); a live one found so
// carries the warnings its full id would. Otherwise the resolve refusal is
// returned, saying how many records matched when several did.
func (s *Service) Show(ctx context.Context, address string) (Detail, error) {
	// The listing list --all gives: a session is addressable in show
	// exactly when it is in list (markUnreachable).
	l, err := s.List(ctx, true)
	if err != nil {
		return Detail{}, err
	}
	var entry domain.Entry
	sess, warnings, rerr := domain.Lookup(l.Entries, address)
	switch r, ok := domain.AsRefusal(rerr); {
	case rerr == nil:
		for _, e := range l.Entries {
			if e.Live() && e.Record.PID == sess.PID() && e.Record.File == sess.Record().File {
				entry = e
			}
		}
	case ok && r.Reason == domain.ReasonNotLive:
		e, err := s.fallbackMatch(l, address, r)
		if err != nil {
			return Detail{}, err
		}
		entry = e
		if e.Live() && e.Record.SessionID != "" {
			// Found by pid or file name: say what its full id would have said
			// (a shared name, say).
			if _, w, err := domain.Lookup(l.Entries, e.Record.SessionID); err == nil {
				warnings = w
			}
		}
	default:
		return Detail{}, rerr
	}
	d := s.detail(entry)
	d.Warnings = warnings
	for _, u := range l.Unread {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the %s registry could not be read (%v): a session there carrying this name is not seen", u.Harness, u.Err))
	}
	return d, nil
}

// couldHave reports whether harness h could have had a session here: the
// primary harness (the first) always, another when it is present
// (ports.Presence: installed, with state, or its home named; one without
// the method counts as present) or unknown to the Service. What could
// not have had one is left out of refusals and warnings; doctor lists it.
func (s *Service) couldHave(h domain.Harness) bool {
	for i, p := range s.harnesses {
		if p.Kind() == h {
			pr, ok := p.(ports.Presence)
			return i == 0 || !ok || pr.Present()
		}
	}
	return true
}

// noteMissing adds to a not_live refusal that suggests no name which
// harnesses' sessions were searched and which of their registry folders
// do not exist (else only whether the primary's does not) (a wrong home,
// say $CLAUDE_CONFIG_DIR, is the usual cause: the note names the flag and
// variable that set it), which registries could not be read, and which
// live processes' sessions are not listed (each with why: a password
// refused, a TUI that listens on nothing). Only the harnesses that could
// have had the session are named: the primary, and each other that is
// present (ports.Presence: installed, with state, or its home named); the
// rest are doctor's to list.
func (s *Service) noteMissing(l Listing, err error) error {
	r, ok := domain.AsRefusal(err)
	if !ok || r.Reason != domain.ReasonNotLive {
		return err
	}
	// A refusal that suggests live names points at the fix already; the
	// others say where was looked.
	if len(r.Suggestions) == 0 && len(s.harnesses) > 1 {
		var kinds []string
		searched := map[domain.Harness]bool{}
		for _, h := range s.harnesses {
			if s.couldHave(h.Kind()) {
				kinds = append(kinds, h.Kind().String())
				searched[h.Kind()] = true
			}
		}
		r.Detail += "; searched the " + domain.AndList(kinds) + " sessions"
		for _, a := range l.Absent {
			if !searched[a.Harness] {
				continue
			}
			r.Detail += fmt.Sprintf("; the %s registry folder %s does not exist", a.Harness, a.Dir)
			if h, ok := s.harnesses.Of(a.Harness); ok && h.Home().Flag != "" {
				r.Detail += " (check --" + h.Home().Flag + " or " + h.Home().Env + ")"
			}
		}
	} else if l.Missing {
		r.Detail += "; the registry folder " + l.Dir + " does not exist"
		if l.Home.Flag != "" {
			r.Detail += " (check --" + l.Home.Flag + " or " + l.Home.Env + ")"
		}
	}
	for _, u := range l.Unread {
		r.Detail += fmt.Sprintf("; the %s registry could not be read (%v)", u.Harness, u.Err)
	}
	// A live process whose sessions could not be listed (a server that
	// refused peerctl's password, say) may hold the one addressed: say so
	// rather than let "not live" stand alone.
	for _, e := range l.Entries {
		if e.Live() && !e.Addressable && e.Record.SessionID == "" {
			r.Detail += fmt.Sprintf("; %s is live and its sessions are not listed: %s", e.Record.Label(), e.Unaddressable)
		}
	}
	return err
}

// fallbackMatch finds the record Show shows when no live session answers
// to address. A record matches by what names it (session id, name, id
// prefix) or by where it is (pid, file name). The only match is the one;
// among several, the only live one when all matched by pid or file name (a
// live record and a leftover copy of it). Anything else is refused with
// notLive, saying how many records matched.
func (s *Service) fallbackMatch(l Listing, address string, notLive *domain.Refusal) (domain.Entry, error) {
	var byName, byPlace []domain.Entry
	for _, e := range l.Entries {
		r := e.Record
		switch {
		case address == r.SessionID && r.SessionID != "" || address == r.Name && r.Name != "" ||
			len(address) >= domain.MinIDPrefix && strings.HasPrefix(r.SessionID, address):
			byName = append(byName, e)
		case address == fmt.Sprint(r.PID) || address == r.File:
			byPlace = append(byPlace, e)
		}
	}
	matches := append(byName, byPlace...)
	if len(byName) == 0 {
		var live []domain.Entry
		for _, e := range byPlace {
			if e.Live() {
				live = append(live, e)
			}
		}
		if len(live) == 1 {
			matches = live
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return domain.Entry{}, s.noteMissing(l, notLive)
	default:
		notLive.Detail += fmt.Sprintf("; %d records match %q: name one by its file (peerctl list --all)", len(matches), address)
		return domain.Entry{}, s.noteMissing(l, notLive)
	}
}

func (s *Service) detail(e domain.Entry) Detail {
	d := Detail{Entry: e}
	if p := e.Record.SocketFile(); p != "" {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			d.SocketOnDisk, d.SocketNote = domain.No, "absent: "+err.Error()
		case fi.Mode()&os.ModeSocket == 0:
			d.SocketOnDisk, d.SocketNote = domain.No, "not a socket ("+fi.Mode().String()+")"
		default:
			d.SocketOnDisk, d.SocketNote = domain.Yes, "present"
		}
	} else if e.Record.SocketPath != "" {
		d.SocketNote = "not a file: " + e.Record.SocketPath + " is its server's TCP address on loopback"
	}
	if h, ok := s.harnesses.Of(e.Record.Harness); ok && e.Live() && e.Addressable {
		d.Notes = h.Notes(e.Record)
	}
	if h, ok := s.harnesses.Of(e.Record.Harness); ok {
		if g, ok := h.(ports.Glosser); ok {
			d.Glosses = g.Glosses()
		}
	}
	d.Transcript = s.transcriptOf(e.Record)
	if d.Transcript != "" {
		if _, err := os.Stat(d.Transcript); err == nil {
			d.TranscriptExists = true
		}
	}
	return d
}

// SendRequest asks for one message to one session.
type SendRequest struct {
	// Address is a session id, unique id prefix, exact name or endpoint.
	Address string
	// Text is the message, byte for byte.
	Text string
	// DryRun resolves and verifies, then returns the transport's plan
	// without sending.
	DryRun bool
	// AwaitReply, when positive, sends on a long-lived courier (ports.Couriers)
	// (the target harness's: HarnessCouriers) and keeps it open after the
	// delivery until a cross-session message from the target's own socket
	// reaches it (domain.Inbound.IsReplyFrom), AwaitReply passes (counted
	// from the receipt), or ctx ends; no reply in time is a ReasonNoReply
	// refusal returned beside the full result. It replaces the transport
	// chosen for the Service.
	AwaitReply time.Duration

	// Confirmation and waiting: see ConfirmOptions (docs/CONFIRMATION.md).
	ConfirmOptions

	// Settled: hand it over only to a session that has settled (a durable
	// message's rule, Service.unsettled): one still starting is refused
	// not_addressable before anything is sent. A durable message for
	// another machine asks that machine's peerctl so (AttemptElsewhere).
	Settled bool

	// Handed, when set, is called once, in Send's goroutine, with the
	// result so far when the target harness has the message (the receipt
	// came and the confirmation was read, without error) and before a Wait
	// or AwaitReply begins; not on a refusal, a dry run or a failed
	// hand-over. The outbox records "delivered" with it, so that a long
	// wait does not leave the message "delivering".
	Handed func(SendResult)
}

// SendResult is what Send did.
type SendResult struct {
	Target  domain.Session
	Receipt domain.Receipt
	// Plan is set for a dry run.
	Plan    *domain.Plan
	Started time.Time
	// Elapsed runs from Started to the end of the confirmation (the fresh
	// read, resolve, the transport, the transcript confirmation; not
	// --wait). TransportElapsed is the transport's Deliver alone (a socket
	// post, a courier run; with AwaitReply the courier's start and send, in
	// a Relay the send on its courier); ConfirmElapsed is the transcript
	// confirmation alone (0 when none was read).
	Elapsed          time.Duration
	TransportElapsed time.Duration
	ConfirmElapsed   time.Duration

	// Confirmation and wait results (docs/CONFIRMATION.md).
	Confirmation

	// Reply is the target's reply (SendRequest.AwaitReply), nil when none came.
	Reply *domain.Inbound
	// ReplyNote, with AwaitReply, says why the target's own model cannot
	// reply (its harness's ports.ConfirmRule.NoReply; "" when it can).
	ReplyNote string
	// OtherInbound are the messages from other senders that reached the
	// courier while it waited for the reply, in arrival order.
	OtherInbound []domain.Inbound
}

// ErrNoTransport is returned when the Service was built without a transport.
var ErrNoTransport = errors.New("no transport configured")

// ErrNoCouriers is returned for SendRequest.AwaitReply, and by a Relay,
// when the Service was built without ports.Couriers (WithCouriers).
var ErrNoCouriers = errors.New("no long-lived courier configured (awaiting a reply and relaying need the courier)")

// Send validates the message, re-reads the registry, resolves and verifies
// the target on that fresh read (domain.Resolve), refuses a target that is
// not addressable, and only then hands the message to the transport. Every
// refusal is a *domain.Refusal; no transport runs on a refusal. With
// req.AwaitReply it then waits for the target's reply (see sendAwaiting);
// with req.Wait for the end of the turn on the message: by the target's
// registry status (waitIdle), or for a harness whose receipt is its
// confirmation by a courier's reply (ports.ConfirmRule.ReplyEndsTurn,
// sendAwaiting); where neither can see it, the wait is refused with
// harness_unsupported before anything is sent (canWait).
func (s *Service) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	res := SendResult{Started: s.now()}
	if s.transport == nil {
		return res, ErrNoTransport
	}
	if req.AwaitReply > 0 && s.couriers == nil {
		return res, ErrNoCouriers // before the registry is read
	}
	msg, target, err := s.target(ctx, req.Address, req.Text)
	res.Target = target
	if err != nil {
		return res, err
	}
	if req.Settled {
		if r := s.unsettled(target, s.now()); r != nil {
			return res, r
		}
	}
	rule := s.confirmRule(target)
	if req.Wait > 0 {
		// Before anything is sent: a wait that could only time out is no wait.
		if err := s.canWait(target, rule); err != nil {
			return res, err
		}
	}
	if req.DryRun {
		plan, err := s.transport.Plan(target, msg)
		if err != nil {
			return res, err
		}
		res.Plan = &plan
		return res, nil
	}
	if req.AwaitReply > 0 || req.Wait > 0 && rule.ByReceipt {
		return s.sendAwaiting(ctx, req, msg, res)
	}
	var mark ports.TranscriptMark
	if !rule.ByReceipt {
		mark = s.markTranscript(req, target) // before the transport: see afterDelivery
	}
	delivering := s.now()
	started := traceOf(ctx).courierStarting(s.picked(target), target)
	var heed ports.Heed
	if h, ok := s.transport.(ports.Heeding); ok {
		res.Receipt, heed, err = h.DeliverHeeding(ctx, target, msg)
	} else {
		res.Receipt, err = s.transport.Deliver(ctx, target, msg)
	}
	started()
	res.Elapsed = s.now().Sub(res.Started)
	res.TransportElapsed = s.now().Sub(delivering)
	if err != nil {
		return res, asDeliveryFailed(err)
	}
	if rule.ByReceipt {
		return s.receiptConfirm(req, res, rule)
	}
	return s.afterDelivery(ctx, req, res, mark, heed)
}

// picked is the transport a send to target runs: the Router's pick, else
// the one transport (nil when the Router refuses target: Deliver says why).
func (s *Service) picked(target domain.Session) ports.Transport {
	r, ok := s.transport.(*Router)
	if !ok {
		return s.transport
	}
	t, _ := r.Pick(target)
	return t
}

// target is what every send does before a transport runs: it validates
// text, re-reads the registry, resolves address and verifies the identity
// on that fresh read (domain.Resolve), refuses a target that is not
// addressable, and asks the trust policy (Allowed) on that same read. The session is returned whenever it was resolved, also
// beside a not_addressable refusal. Service.Send and Relay.Send share it.
func (s *Service) target(ctx context.Context, address, text string) (domain.Message, domain.Session, error) {
	msg, target, err := s.resolveTarget(ctx, address, text)
	if err == nil {
		err = msg.FitsFor(target)
	}
	return msg, target, interrupted(ctx, err)
}

// interrupted makes err, when ctx ended (Ctrl-C, SIGTERM) before a
// transport ran, a delivery_failed refusal saying so: nothing was sent,
// and a bare "context canceled" says neither. A refusal stays itself.
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if _, ok := domain.AsRefusal(err); ok {
		return err
	}
	return &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Detail: fmt.Sprintf("interrupted before anything was sent (%v)", err), Err: err}
}

// resolveTarget is target without the interrupt's wording.
func (s *Service) resolveTarget(ctx context.Context, address, text string) (domain.Message, domain.Session, error) {
	msg, err := domain.NewMessage(text)
	if err != nil {
		return msg, domain.Session{}, err
	}
	l, partial, err := s.readLive(ctx)
	if err != nil {
		return msg, domain.Session{}, err
	}
	target, err := domain.Resolve(l.Entries, address)
	if err != nil && partial {
		// A refusal may name a record that was skipped unread: decide it
		// on a full read, as if the send had started a moment later.
		if l, err = s.Read(ctx); err != nil {
			return msg, domain.Session{}, err
		}
		target, err = domain.Resolve(l.Entries, address)
	}
	if err != nil {
		if target, err = s.known(ctx, l, address, err); err == nil {
			return msg, target, s.allowed(l, domain.TargetOf(target, ""))
		}
		return msg, domain.Session{}, s.noteMissing(l, err)
	}
	if err := unseenTwin(l, address, target); err != nil {
		return msg, target, err
	}
	s.log.Debug("target resolved", "address", address, "harness", target.Harness().String(), "session", target.ID(),
		"name", target.Name(), "pid", target.PID(), "socket", target.SocketPath(), "addressable", target.Addressable())
	if !target.Addressable() {
		return msg, target, domain.Refuse(domain.ReasonNotAddressable, "%s is live but %s", target.Label(), target.Unaddressable())
	}
	return msg, target, s.allowed(l, domain.TargetOf(target, ""))
}

// durables is the transport that can say which of a harness's transports
// is durable (Router.Durable).
type durables interface {
	Durable(k domain.Harness) (name string, chosen bool)
}

// known looks, when no live session answers to address (notLive, a
// not_live refusal), among the sessions each harness knows but no process
// has open now (ports.KnownRegistry), by exact session id or name. Where
// the chosen transport is durable (ports.DurableTransport) the one match
// is the target, dormant (domain.NewDormantSession), and several are
// refused; where another is chosen the refusal says the durable one would
// keep the message until the session is resumed. One match whose record
// has a Problem (its harness says it cannot take a message now) is
// refused not_live with it (its ProblemShort the refusal's Short),
// whichever transport is chosen; when the live
// read l already listed that session, not live for its harness's reason
// (an ambiguous Codex thread, say), the refusal keeps that read's verdict
// and reason (the pids) and adds the problem. A context that ended
// while the known sessions were read is its error (ctx.Err()), so the
// caller says the send was interrupted. Any other error, or no match, is
// returned as it came.
func (s *Service) known(ctx context.Context, l Listing, address string, notLive error) (domain.Session, error) {
	r, ok := domain.AsRefusal(notLive)
	d, isDurables := s.transport.(durables)
	if !ok || r.Reason != domain.ReasonNotLive || !isDurables {
		return domain.Session{}, notLive
	}
	for _, h := range s.harnesses {
		name, chosen := d.Durable(h.Kind())
		kr, ok := h.Registry().(ports.KnownRegistry)
		if name == "" || !ok {
			continue
		}
		recs, err := kr.Known(ctx)
		if err != nil && ctx.Err() != nil {
			return domain.Session{}, ctx.Err()
		}
		if err != nil {
			if chosen {
				r.Detail += fmt.Sprintf("; the %s sessions no process has open could not be read (%v)", h.Kind(), err)
			}
			continue
		}
		var match []domain.Record
		for _, rec := range recs {
			if rec.SessionID == address || rec.Name != "" && rec.Name == address {
				match = append(match, rec)
			}
		}
		switch {
		case len(match) == 0:
		case len(match) == 1 && match[0].Problem != "":
			// Known, but its harness says it cannot take a message now
			// (a Codex thread its daemon runs with no client).
			// The harness's one line (ProblemShort) is said unless the
			// live read saw another verdict (ambiguous), which it keeps.
			ref := domain.Refuse(domain.ReasonNotLive, "%s session %s: %s", h.Kind(), match[0].SessionID, match[0].Problem)
			ref.Short = match[0].ProblemShort
			if e, ok := listedNotLive(l, h.Kind(), match[0].SessionID); ok {
				ref = domain.Refuse(domain.ReasonNotLive, "%s session %s is %s (%s); %s", h.Kind(), match[0].SessionID, e.Verdict, e.Reason, match[0].Problem)
				if e.Verdict == match[0].ProblemVerdict {
					ref.Short = match[0].ProblemShort
				}
			}
			return domain.Session{}, ref
		case !chosen:
			r.Detail += fmt.Sprintf("; %s session %s is known but no process has it open: --transport %s would keep the message durably and run it when the session is resumed", h.Kind(), match[0].SessionID, name)
		case len(match) > 1:
			ids := make([]string, len(match))
			for i, m := range match {
				ids[i] = m.SessionID
			}
			return domain.Session{}, domain.Refuse(domain.ReasonIdentityMismatch, "%q names %d %s sessions no process has open (%s): use the session id", address, len(match), h.Kind(), strings.Join(ids, ", "))
		default:
			s.log.Debug("target known, not open", "address", address, "harness", h.Kind().String(), "session", match[0].SessionID, "transport", name)
			return domain.NewDormantSession(match[0]), nil
		}
	}
	return domain.Session{}, notLive
}

// listedNotLive is l's entry of session id of harness k when it lists it
// not live for a reason of its harness (a record with a Problem:
// headless, ambiguous).
func listedNotLive(l Listing, k domain.Harness, id string) (domain.Entry, bool) {
	for _, e := range l.Entries {
		if e.Record.Harness == k && e.Record.SessionID == id && e.Record.Problem != "" && !e.Live() {
			return e, true
		}
	}
	return domain.Entry{}, false
}

// unseenTwin refuses a send by name or id prefix while a harness's
// registry could not be read: a session there may carry the same name,
// and the identity rule (the name resolves to that session alone) cannot
// be checked. A full session id or an endpoint names one session whatever
// the unread registry holds, so those are sent to.
func unseenTwin(l Listing, address string, target domain.Session) error {
	if len(l.Unread) == 0 || address == target.ID() || domain.IsEndpoint(address) {
		return nil
	}
	var unread []string
	for _, u := range l.Unread {
		unread = append(unread, fmt.Sprintf("%s (%v)", u.Harness, u.Err))
	}
	return domain.Refuse(domain.ReasonIdentityMismatch, "%q resolves to session %s, but the registry of %s could not be read, so a session there carrying the same name cannot be ruled out; use the full session id or endpoint",
		address, target.ID(), strings.Join(unread, "; "))
}

// asDeliveryFailed makes a transport's error a refusal: its own, or a
// ReasonDeliveryFailed one wrapping it.
func asDeliveryFailed(err error) error {
	if _, ok := domain.AsRefusal(err); !ok {
		return &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Detail: err.Error(), Err: err}
	}
	return err
}
