package domain

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MinIDPrefix is the shortest session-id prefix accepted as an address.
const MinIDPrefix = 6

// ErrBadAddress is wrapped when an address is malformed (empty, or a bad
// endpoint); it is a usage error, not a refusal.
var ErrBadAddress = errors.New("bad address")

// Resolve finds the one live session an address names, among the entries of
// a single registry read, and verifies its identity for sending. An address
// is, in order of precedence:
//
//   - an endpoint "cc-peer:v1:<pid>:<name>:<socket>": the pid's live record
//     must still carry that name and socket;
//   - a full session id;
//   - an exact session name or a unique session-id prefix of at least
//     MinIDPrefix characters (a name and a prefix naming two different
//     sessions is ambiguous).
//
// Refusals: ReasonNotLive when nothing live matches (the detail says when a
// stale record matched, that the transcript may still exist, and hints at a
// too-short or upper-case id prefix; Refusal.Suggestions names the live
// sessions whose names are close to the address, never picked); ReasonIdentityMismatch with every
// candidate when the address is ambiguous (a name two live sessions carry
// names neither: each is reached by its full id or endpoint), when its
// session id is carried by two live records, when its socket is published
// by another record too (the same path after filepath.Clean, or another
// path to the same file on disk, Entry.SocketFile: a hard link or a linked
// folder; a post reaches whichever process bound it), or when an endpoint's name or
// socket no longer match. A malformed address returns an error wrapping
// ErrBadAddress.
func Resolve(entries []Entry, address string) (Session, error) {
	s, _, err := resolve(entries, address, true)
	return s, err
}

// Lookup is Resolve for reading (`peerctl show`): the identity rule is not
// applied, so a session whose session id or socket another record also
// carries is found; warnings then says so, one line each, and says when its
// name is shared (it is then addressed by full id or endpoint).
// The refusals are Resolve's otherwise; an ambiguous address is still
// refused with its candidates.
func Lookup(entries []Entry, address string) (s Session, warnings []string, err error) {
	return resolve(entries, address, false)
}

func resolve(entries []Entry, address string, strict bool) (Session, []string, error) {
	if strings.TrimSpace(address) == "" {
		return Session{}, nil, fmt.Errorf("%w: empty address", ErrBadAddress)
	}
	var live []Entry
	for _, e := range entries {
		if e.Live() {
			live = append(live, e)
		}
	}
	var (
		e   Entry
		err error
	)
	if IsEndpoint(address) {
		e, err = resolveEndpoint(entries, live, address)
	} else {
		e, err = resolveAddress(entries, live, address, strict)
	}
	if err != nil {
		return Session{}, nil, err
	}
	return verified(entries, live, e, strict)
}

func resolveAddress(entries, live []Entry, address string, strict bool) (Entry, error) {
	var matches []Entry
	if matches = filter(live, func(e Entry) bool { return e.Record.SessionID == address }); len(matches) == 0 {
		matches = filter(live, func(e Entry) bool { return matchesAddress(e.Record, address) })
	}
	switch len(matches) {
	case 0:
		return Entry{}, notLive(entries, live, address)
	case 1:
		return matches[0], nil
	default:
		if len(filter(matches, func(e Entry) bool { return e.Record.SessionID == address })) == len(matches) {
			advice := "refusing to guess which one is the session"
			if !strict {
				advice = "use the endpoint of the one you mean"
			}
			return Entry{}, idTwins(address, matches, advice)
		}
		r := Refuse(ReasonIdentityMismatch, "%q matches %d live sessions; %s", address, len(matches), ambiguityAdvice(strict))
		r.Candidates = candidates(matches)
		return Entry{}, r
	}
}

// matchesAddress reports whether r is named by address, an address that
// is no endpoint: address is r's session id or its name, or a prefix of
// at least MinIDPrefix characters of its session id.
func matchesAddress(r Record, address string) bool {
	return r.SessionID == address || r.Name == address ||
		(len(address) >= MinIDPrefix && strings.HasPrefix(r.SessionID, address))
}

// MayResolve reports whether r, a session as another machine's peerctl
// names it in an answer (its pid, session id and name; a receipt, a
// document, a relay line), could be the session Resolve found there for
// address, judged from r alone: for an endpoint, r has the endpoint's pid
// and the value the endpoint pins (HarnessSpec.Pins: a name, a session
// id); for any other address, address is r's session id or its name, or a
// prefix of at least MinIDPrefix characters of its session id. The
// sessions r was chosen among are not seen, so a name that was another
// live session's full id there cannot be told from it; r's harness is not
// read (a relay line does not say it): an endpoint's is the caller's to
// compare. An empty or blank address resolves to nothing.
func MayResolve(r Record, address string) bool {
	switch {
	case strings.TrimSpace(address) == "":
		return false // Resolve refuses it
	case !IsEndpoint(address):
		return matchesAddress(r, address)
	}
	ep, err := ParseEndpoint(address)
	return err == nil && r.PID == ep.PID() && ep.Harness().spec().key(r) == ep.Name()
}

// ambiguityAdvice tells what to do about an ambiguous address.
func ambiguityAdvice(strict bool) string {
	if strict {
		return "use the full session id or endpoint of the one you mean"
	}
	return "show one by its full session id or endpoint"
}

func resolveEndpoint(entries, live []Entry, address string) (Entry, error) {
	ep, err := ParseEndpoint(address)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrBadAddress, err)
	}
	byPID := filter(live, func(e Entry) bool { return e.Record.PID == ep.PID() && e.Record.Harness == ep.Harness() })
	spec := ep.Harness().spec()
	if spec.ManyPerPID && len(byPID) > 0 {
		// One process holds many sessions: the pinned key picks the one.
		byKey := filter(byPID, func(e Entry) bool { return e.Record.SessionID == ep.Name() })
		if len(byKey) == 0 {
			return Entry{}, Refuse(ReasonNotLive, "pid %d is live but no longer serves %s %s; list again for its sessions", ep.PID(), spec.Pins, ep.Name())
		}
		byPID = byKey
	}
	switch {
	case len(byPID) == 0:
		for _, e := range entries {
			// A record with a problem is another's trouble, unless it is
			// the very session the endpoint pins (its pid and key): then
			// its verdict and reason are what is true of it.
			pinned := e.Record.Harness == ep.Harness() && spec.key(e.Record) == ep.Name()
			if e.Record.PID == ep.PID() && (e.Record.Problem == "" || pinned) {
				return Entry{}, Refuse(ReasonNotLive, "endpoint pid %d: record %s is %s (%s); its transcript may still exist", ep.PID(), e.Record.File, e.Verdict, e.Reason)
			}
		}
		return Entry{}, Refuse(ReasonNotLive, "no live session has pid %d; if it ended, its transcript may still exist", ep.PID())
	case len(byPID) > 1:
		r := Refuse(ReasonIdentityMismatch, "pid %d has %d live records", ep.PID(), len(byPID))
		r.Candidates = candidates(byPID)
		return Entry{}, r
	}
	e := byPID[0]
	if now := spec.key(e.Record); now != ep.Name() {
		r := Refuse(ReasonIdentityMismatch, "%s", spec.moved(ep.Name(), now, ep.PID()))
		r.Candidates = candidates(byPID)
		return Entry{}, r
	}
	if now := spec.endpointSocket(e.Record); now != ep.Socket() {
		r := Refuse(ReasonIdentityMismatch, "endpoint socket %q but pid %d now publishes %q", ep.Socket(), ep.PID(), now)
		r.Candidates = candidates(byPID)
		return Entry{}, r
	}
	return e, nil
}

// SharedSocket says, when e's socket is published by other records too
// (the same path, or another path to the same file on disk: a hard link or
// a linked folder, Entry.SocketFile), what is shared and by how many, with
// every record that publishes it (e included); "" and nil when e's socket
// is its own. Records counted are those live or listed by their harness's
// own listing (Entry.HarnessMayList). A
// post to a shared socket reaches whichever process bound it: sending to
// any of them is refused (the identity rule), and list shows them as not
// addressable with this text.
func SharedSocket(entries []Entry, e Entry) (string, []Entry) {
	sock := e.Record.SocketPath
	if sock == "" || e.Record.Harness.spec().SharedSocket {
		// One socket serves many sessions of such a harness by design (a
		// Codex home's control socket, an opencode server): the call
		// names the session.
		return "", nil
	}
	clean := filepath.Clean(sock)
	aliased := false
	twins := filter(entries, func(o Entry) bool {
		if !(o.Live() || o.HarnessMayList) || o.Record.SocketPath == "" {
			return false
		}
		if filepath.Clean(o.Record.SocketPath) == clean {
			return true
		}
		same := e.SocketFile != "" && o.SocketFile == e.SocketFile
		aliased = aliased || same
		return same
	})
	if len(twins) < 2 {
		return "", nil
	}
	what := fmt.Sprintf("socket %q is published by %d live records", sock, len(twins))
	if n := len(filter(twins, Entry.Live)); n < len(twins) {
		what = fmt.Sprintf("socket %q is published by %d records (%d we call live; %s's own listing shows the others)", sock, len(twins), n, e.Record.Harness.Title())
	}
	if aliased {
		what += " (under other paths too: " + strings.Join(socketPaths(twins), ", ") + " are one socket, the same file on disk)"
	}
	return what, twins
}

// verified applies the identity rule when strict: the session's name must
// resolve to that session alone among the live sessions. Otherwise a shared
// name is returned as a warning.
func verified(entries, live []Entry, e Entry, strict bool) (Session, []string, error) {
	var warnings []string
	if id := e.Record.SessionID; id != "" {
		if twins := filter(live, func(o Entry) bool { return o.Record.SessionID == id }); len(twins) > 1 {
			if strict {
				return Session{}, nil, idTwins(id, twins, "refusing to guess which one is the session")
			}
			warnings = append(warnings, fmt.Sprintf("session id %s is carried by %d live records: sending to it is refused", id, len(twins)))
		}
	}
	if what, twins := SharedSocket(entries, e); what != "" {
		if strict {
			r := Refuse(ReasonIdentityMismatch, "%s; a post there reaches whichever process bound it, so sending is refused", what)
			r.Candidates = candidates(twins)
			return Session{}, nil, r
		}
		warnings = append(warnings, what+": sending to it is refused")
	}
	if name := e.Record.Name; name != "" && !strict {
		if same := filter(live, func(o Entry) bool { return o.Record.Name == name }); len(same) > 1 {
			warnings = append(warnings, fmt.Sprintf("name %q is carried by %d live sessions: address this one by its full session id or endpoint", name, len(same)))
		}
	}
	s, err := NewSession(e)
	if err != nil {
		return Session{}, nil, err
	}
	return s, warnings, nil
}

// socketPaths lists the socket paths of es, each once, quoted.
func socketPaths(es []Entry) []string {
	var out []string
	for _, e := range es {
		if q := strconv.Quote(e.Record.SocketPath); !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// idTwins refuses a session id that several live records carry.
func idTwins(id string, twins []Entry, advice string) *Refusal {
	r := Refuse(ReasonIdentityMismatch, "session id %s is carried by %d live records; %s", id, len(twins), advice)
	r.Candidates = candidates(twins)
	return r
}

// notLiveAdvice ends a not_live refusal of an address that matched no
// record: where to look now. A stored message that waits for its session
// has no use for it (WithoutAdvice).
const notLiveAdvice = ": peerctl list shows the live ones, and if it has ended, its transcript may still exist"

// WithoutAdvice is r's text (Error) without the advice to a person that a
// not_live refusal of an unmatched address carries: the outbox's reason of
// a message that waits for its session.
func WithoutAdvice(r *Refusal) string { return strings.Replace(r.Error(), notLiveAdvice, "", 1) }

func notLive(entries, live []Entry, address string) error {
	for _, e := range entries {
		r := e.Record
		// A record whose problem is its harness's verdict on a session
		// (a Codex thread the daemon holds with no client, or whose
		// client cannot be told) names that session: it is said why it
		// is not live, not "no live session matches".
		if e.Live() || r.Problem != "" && e.Verdict != VerdictHeadless && e.Verdict != VerdictAmbiguous {
			continue
		}
		if matchesAddress(r, address) {
			return Refuse(ReasonNotLive, "%s is not live: %s is %s (%s); its transcript may still exist", r.Label(), r.File, e.Verdict, e.Reason)
		}
	}
	near := suggestNames(live, address)
	if len(near) == 0 {
		return Refuse(ReasonNotLive, "no live session matches %q%s%s", address, addressHint(address), notLiveAdvice)
	}
	quoted := make([]string, len(near))
	for i, n := range near {
		quoted[i] = strconv.Quote(n)
	}
	shown, why := strconv.Quote(address), ""
	if i := slices.IndexFunc(near, func(n string) bool { return normalisedApart(address, n) }); i >= 0 {
		// Two spellings that look alike: show their marks.
		shown, quoted[i] = quoteMarks(address), quoteMarks(near[i])
		why = fmt.Sprintf(" (they differ in Unicode normalisation: one writes a letter and a combining mark, shown as %s, where the other has one precomposed letter; names are matched byte for byte)", markEscapes(address+near[i]))
	}
	r := Refuse(ReasonNotLive, "no live session matches %s%s; did you mean %s?%s", shown, addressHint(address), strings.Join(quoted, " or "), why)
	r.Suggestions = near
	return r
}

// addressHint explains why an address that looks like a session-id prefix
// matched nothing: ids are lower-case hex with dashes, and a prefix needs
// MinIDPrefix characters. It returns "" for anything else (a name).
func addressHint(address string) string {
	upper := false
	for _, c := range address {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c == '-':
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return ""
		}
	}
	var hints []string
	if len(address) < MinIDPrefix {
		hints = append(hints, fmt.Sprintf("id prefixes need at least %d characters", MinIDPrefix))
	}
	if upper {
		hints = append(hints, "session ids are lower case")
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

func filter(es []Entry, keep func(Entry) bool) []Entry {
	var out []Entry
	for _, e := range es {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

func candidates(es []Entry) []Candidate {
	out := make([]Candidate, 0, len(es))
	for _, e := range es {
		c := Candidate{SessionID: e.Record.SessionID, Name: e.Record.Name, Harness: e.Record.Harness.String(), PID: e.Record.PID, File: e.Record.File}
		if !e.Live() {
			c.Verdict = e.Verdict.String()
		}
		if c.PID == 0 || e.Verdict == VerdictMisnamed {
			// The pid the harness reads it under, when its file name
			// gives one.
			if f := e.Record.Harness.spec().FilePID; f != nil {
				if pid, ok := f(c.File); ok {
					c.PID = pid
				}
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Receipt is what a transport returns when it has done its part.
type Receipt struct {
	// Transport is the transport's name ("courier", "socket", ...).
	Transport string
	// Outcome is "queued" (Claude Code's SendMessage put it in the
	// target's inbox), "held" (the target holds it: Claude Code's notice or
	// a Qwen Code receipt), "posted" (the socket or inbox accepted the
	// frame, nothing more heard) or "delivered" (seen in the target's
	// transcript, or a Qwen Code receipt said so).
	Outcome string
	// Detail is a short human note (may be empty).
	Detail string
	// MsgID is Claude Code's msg_id for a courier send, or the frame's
	// msgId of a Qwen Code inbox send ("" otherwise); Detail does not
	// repeat it.
	MsgID string
	// ClaudeResult is Claude Code's own words about a courier send: its
	// SendMessage result message, or the delivery notice that followed.
	ClaudeResult string
}

// Plan describes what a transport would do, for `send --dry-run`.
type Plan struct {
	Transport string   `json:"transport"`
	Program   string   `json:"program,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Stdin     string   `json:"stdin,omitempty"`
	Call      string   `json:"call,omitempty"`
	Socket    string   `json:"socket,omitempty"`
	Frame     string   `json:"frame,omitempty"`
	// Warning says why the plan could not run as it stands (the courier
	// program not found, say); "" when nothing stands in its way.
	Warning string `json:"warning,omitempty"`
}

// ErrDurablePrefix is wrapped (with ErrBadAddress) when a durable message
// is addressed by a session-id prefix (DurableAddress).
var ErrDurablePrefix = errors.New("a durable message takes a full session id, a name or an endpoint, never an id prefix")

// DurableAddress checks the address of a message to be kept and tried
// again later (send --durable) against entries, one registry read (live
// or not): an endpoint, a full session id or a name of a record is taken,
// and so is an address no record answers to (a name that may come later);
// an address that is only a prefix (MinIDPrefix or more characters) of a
// record's session id is an error wrapping ErrBadAddress and
// ErrDurablePrefix: tried later, a prefix may name a session started
// since, which is a guess. A session id or name several live sessions
// answer to now is Resolve's identity_mismatch refusal, with its
// candidates: delivered later to whichever is left would be a guess too.
func DurableAddress(entries []Entry, address string) error {
	if IsEndpoint(address) {
		return nil
	}
	var live []Entry
	for _, e := range entries {
		if e.Live() && (e.Record.SessionID == address || e.Record.Name == address) {
			live = append(live, e)
		}
	}
	if len(live) > 1 {
		_, err := resolveAddress(entries, live, address, true)
		return err
	}
	if len(address) < MinIDPrefix {
		return nil
	}
	var prefixOf []string
	for _, e := range entries {
		if e.Record.SessionID == address || e.Record.Name == address {
			return nil
		}
		if strings.HasPrefix(e.Record.SessionID, address) {
			prefixOf = append(prefixOf, e.Record.SessionID)
		}
	}
	if len(prefixOf) == 0 {
		return nil
	}
	sort.Strings(prefixOf)
	return fmt.Errorf("%w: %q begins the session id %s: %w (tried later, a prefix may name a different session started since); give the full id",
		ErrBadAddress, address, prefixOf[0], ErrDurablePrefix)
}

// ByPrefixOnly reports whether session s, resolved from address, was
// found by its session-id prefix alone: address is not an endpoint, not
// s's full id and not s's name. A durable message never goes to such a
// session (DurableAddress).
func ByPrefixOnly(s Session, address string) bool {
	return !IsEndpoint(address) && s.ID() != address && s.Name() != address
}
