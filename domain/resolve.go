package domain

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
// too-short or upper-case id prefix); ReasonIdentityMismatch with every
// candidate when the address is ambiguous; when the session's name does not
// resolve to it alone — the name also belongs to another live session, is
// another live session's id or id prefix, or is carried by a foreign record
// that Claude Code's own listing may show (the courier addresses by name, so
// sending is refused until one of them is renamed); when its session id is
// carried by two live records; when its socket path is published by
// another live record too (compared after filepath.Clean); or when an
// endpoint's name or socket no longer match. A malformed address returns an error
// wrapping ErrBadAddress.
func Resolve(entries []Entry, address string) (Session, error) {
	s, _, err := resolve(entries, address, true)
	return s, err
}

// Lookup is Resolve for reading (`peerctl show`): the identity rule is not
// applied, so a session addressed by full id, unique prefix or endpoint is
// found even when its name is shared. warnings then says so, one line each.
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
	if strings.HasPrefix(address, "cc-peer:") || strings.HasPrefix(address, "qwen-peer:") {
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
		matches = filter(live, func(e Entry) bool {
			return e.Record.Name == address ||
				(len(address) >= MinIDPrefix && strings.HasPrefix(e.Record.SessionID, address))
		})
	}
	switch len(matches) {
	case 0:
		return Entry{}, notLive(entries, address)
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
		r := Refuse(ReasonIdentityMismatch, "%q matches %d live sessions; %s", address, len(matches), ambiguityAdvice(entries, matches, strict))
		r.Candidates = candidates(matches)
		return Entry{}, r
	}
}

// ambiguityAdvice tells what to do about an ambiguous address, never
// suggesting an address the same command would refuse: sending to a
// session whose name is shared is refused however it is addressed.
func ambiguityAdvice(entries, matches []Entry, strict bool) string {
	shared := 0
	for _, m := range matches {
		if len(sharing(entries, m)) > 1 {
			shared++
		}
	}
	const rename = "sending to a session whose name is shared is refused until the others are renamed (Claude Code's /rename)"
	switch {
	case !strict && shared > 0:
		return "show one by its full session id or endpoint (" + rename + ")"
	case !strict, shared == 0:
		return "use a full session id or an endpoint"
	case shared == len(matches):
		return rename
	default:
		return "use the full session id or endpoint of a candidate whose name is not shared; " + rename
	}
}

// sharing returns e and every entry that the courier could take for e when
// it addresses e by name: live sessions with the same name, live sessions
// whose session id is that name or starts with it (a name used as an
// address resolves to them), and records with the same name that we do not
// count live but Claude Code's own listing, which the courier's ListAgents
// reads, shows (Entry.ClaudeMayList: foreign records, zombies). None for an
// unnamed e.
func sharing(entries []Entry, e Entry) []Entry {
	name := e.Record.Name
	if name == "" || !namesAddress(e.Record.Harness) {
		return nil
	}
	key := FoldName(name)
	return filter(entries, func(o Entry) bool {
		if o.Record.File == e.Record.File && o.Record.Harness == e.Record.Harness {
			return true
		}
		if o.Record.Harness != e.Record.Harness {
			return false // the other harness's transports cannot see it
		}
		// SendMessage's candidates (2.1.328) are records with a socket: a
		// record without one cannot be taken for e by name. (Folded only
		// for the records that can count: this runs per candidate.)
		spoken := func() bool { return o.Record.SocketPath != "" && FoldName(spokenName(o.Record)) == key }
		switch o.Verdict {
		case VerdictLive:
			return o.Record.SessionID == name || (len(name) >= MinIDPrefix && strings.HasPrefix(o.Record.SessionID, name)) || spoken()
		default:
			return o.ClaudeMayList && spoken()
		}
	})
}

// FoldName is how Claude Code compares session names when SendMessage
// resolves one (read from 2.1.328's name matching): control, format and
// surrogate characters dropped (JavaScript's whitespace kept), trimmed,
// lower-cased, runs of whitespace made one "-", cut to 200 characters, and
// a name left empty is "untitled session". Beyond that, U+FFFD is dropped
// (it stands for a lone surrogate Claude Code drops) and final sigma folds
// like sigma, which may only join names Claude Code keeps apart. Claude
// Code also applies NFKC normalization and turns ‹…› and <…> into (…),
// which this does not (so "ｂｕｉｌｄ" and "build", or "café" written
// composed and decomposed, stay apart here; Claude Code then finds the name
// ambiguous and a courier send fails). Two names with one FoldName are one
// name to the courier.
func FoldName(name string) string {
	// Whitespace runs become one ' ' first; the cut to 200 can leave one
	// at the end, which is trimmed before ' ' becomes '-'.
	var folded []rune
	space := false
	for _, r := range strings.TrimFunc(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !jsSpace(r) && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cs, r)) {
			return -1
		}
		return r
	}, name), jsSpace) {
		if jsSpace(r) {
			space = true
			continue
		}
		if space {
			folded = append(folded, ' ')
			space = false
		}
		switch r {
		case 'İ': // JavaScript lower-cases it to "i̇", two code points
			folded = append(folded, 'i', '\u0307')
		case 'ς', 'Σ':
			folded = append(folded, 'σ')
		default:
			folded = append(folded, unicode.ToLower(r))
		}
	}
	if len(folded) > 200 {
		folded = folded[:200]
	}
	s := strings.ReplaceAll(strings.TrimRight(string(folded), " "), " ", "-")
	if s == "" {
		return "untitled-session"
	}
	return s
}

// jsSpace reports whether r is whitespace to JavaScript's \s (which counts
// U+FEFF and not U+0085, unlike unicode.IsSpace).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// spokenName is the name SendMessage knows a session by: its name, or for
// an unnamed session its working folder's last element.
func spokenName(r Record) string {
	if r.Name != "" {
		return r.Name
	}
	if cwd := strings.TrimRight(r.Cwd, "/"); cwd != "" {
		return filepath.Base(cwd)
	}
	return ""
}

func resolveEndpoint(entries, live []Entry, address string) (Entry, error) {
	ep, err := ParseEndpoint(address)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrBadAddress, err)
	}
	byPID := filter(live, func(e Entry) bool { return e.Record.PID == ep.PID() && e.Record.Harness == ep.Harness() })
	switch {
	case len(byPID) == 0:
		for _, e := range entries {
			if e.Record.PID == ep.PID() && e.Record.Problem == "" {
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
	if what, now := endpointKey(e.Record); now != ep.Name() {
		detail := fmt.Sprintf("endpoint names %q but pid %d is now named %q", ep.Name(), ep.PID(), now)
		if e.Record.Harness == HarnessQwenCode {
			detail = fmt.Sprintf("endpoint pins %s %s but pid %d now carries %s (Qwen Code changes it on /clear and /resume); list again for the new endpoint", what, ep.Name(), ep.PID(), now)
		}
		r := Refuse(ReasonIdentityMismatch, "%s", detail)
		r.Candidates = candidates(byPID)
		return Entry{}, r
	}
	if e.Record.SocketPath != ep.Socket() {
		r := Refuse(ReasonIdentityMismatch, "endpoint socket %q but pid %d now publishes %q", ep.Socket(), ep.PID(), e.Record.SocketPath)
		r.Candidates = candidates(byPID)
		return Entry{}, r
	}
	return e, nil
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
	if sock := e.Record.SocketPath; sock != "" {
		clean := filepath.Clean(sock)
		if twins := filter(entries, func(o Entry) bool {
			return (o.Live() || o.ClaudeMayList) && o.Record.SocketPath != "" && filepath.Clean(o.Record.SocketPath) == clean
		}); len(twins) > 1 {
			what := fmt.Sprintf("socket %q is published by %d live records", sock, len(twins))
			if n := len(filter(twins, Entry.Live)); n < len(twins) {
				what = fmt.Sprintf("socket %q is published by %d records (%d we call live; Claude Code's own listing shows the others)", sock, len(twins), n)
			}
			if strict {
				r := Refuse(ReasonIdentityMismatch, "%s; a post there reaches whichever process bound it, so sending is refused", what)
				r.Candidates = candidates(twins)
				return Session{}, nil, r
			}
			warnings = append(warnings, what+": sending to it is refused")
		}
	}
	if same := sharing(entries, e); len(same) > 1 {
		what := nameConflict(e, same)
		if strict {
			r := Refuse(ReasonIdentityMismatch, "%s; a message by name could reach the wrong one, so sending is refused until %s", what, remedy(e, same))
			r.Candidates = candidates(same)
			return Session{}, nil, r
		}
		warnings = append(warnings, what+": sending to it is refused until "+remedy(e, same))
	}
	s, err := NewSession(e)
	if err != nil {
		return Session{}, nil, err
	}
	return s, warnings, nil
}

// idTwins refuses a session id that several live records carry.
func idTwins(id string, twins []Entry, advice string) *Refusal {
	r := Refuse(ReasonIdentityMismatch, "session id %s is carried by %d live records; %s", id, len(twins), advice)
	r.Candidates = candidates(twins)
	return r
}

// remedy says what ends a name conflict: renaming sessions (live ones,
// background ones, those of another machine or pid namespace, which may be
// running there), removing or fixing leftover record files (which no
// session will rename).
func remedy(e Entry, same []Entry) string {
	var sessions, leftovers int
	for _, o := range same {
		switch {
		case o.Record.File == e.Record.File:
		case o.Live(), o.Verdict == VerdictForeign, o.Verdict == VerdictHeadless:
			sessions++
		default:
			leftovers++
		}
	}
	switch {
	case leftovers == 0:
		return "the others are renamed (Claude Code's /rename)"
	case sessions == 0:
		return "the leftover record files named in the candidates are removed or fixed"
	default:
		return "the other sessions are renamed (Claude Code's /rename) and the leftover record files named in the candidates are removed or fixed"
	}
}

// nameConflict says how the entries in same collide with e's name.
func nameConflict(e Entry, same []Entry) string {
	var named, alike, unnamed, ids, foreign, zombies, listed int
	for _, o := range same {
		switch {
		case o.Record.File == e.Record.File:
		case o.Verdict == VerdictForeign:
			foreign++
		case o.Verdict == VerdictStale:
			zombies++
		case !o.Live():
			listed++
		case o.Record.Name == e.Record.Name:
			named++
		case FoldName(spokenName(o.Record)) == FoldName(e.Record.Name):
			alike++
			if o.Record.Name == "" {
				unnamed++
			}
		default:
			ids++
		}
	}
	if alike == 0 && ids == 0 && foreign == 0 && zombies == 0 && listed == 0 {
		return fmt.Sprintf("name %q is shared by %d live sessions", e.Record.Name, named+1)
	}
	var parts []string
	if named > 0 {
		parts = append(parts, fmt.Sprintf("shared by %d live sessions", named+1))
	}
	if alike > 0 {
		part := fmt.Sprintf("spelled alike by %d other live session(s): Claude Code compares names ignoring case, spaces versus hyphens and invisible characters", alike)
		if unnamed > 0 {
			part += fmt.Sprintf("; %d of them unnamed, which Claude Code calls by its folder's name", unnamed)
		}
		parts = append(parts, part)
	}
	if ids > 0 {
		parts = append(parts, fmt.Sprintf("it is also the session id or an id prefix of %d other live session(s)", ids))
	}
	if foreign > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) from another machine or pid namespace carry it too, and Claude Code's own listing shows them", foreign))
	}
	if zombies > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) of an exited process not yet reaped carry it too, and Claude Code's own listing shows them", zombies))
	}
	if listed > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) we do not call live (a background session, a reused pid whose procStart is a number, a misnamed or malformed <pid>.json) carry it too, and Claude Code's own listing may show them", listed))
	}
	return fmt.Sprintf("name %q does not identify one session alone (%s)", e.Record.Name, strings.Join(parts, "; "))
}

func notLive(entries []Entry, address string) error {
	for _, e := range entries {
		r := e.Record
		if e.Live() || r.Problem != "" {
			continue
		}
		if r.SessionID == address || r.Name == address || (len(address) >= MinIDPrefix && strings.HasPrefix(r.SessionID, address)) {
			return Refuse(ReasonNotLive, "session %s (%q) is not live: %s is %s (%s); its transcript may still exist", r.SessionID, r.Name, r.File, e.Verdict, e.Reason)
		}
	}
	return Refuse(ReasonNotLive, "no live session matches %q%s; if it has ended, its transcript may still exist", address, addressHint(address))
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
		c := Candidate{SessionID: e.Record.SessionID, Name: e.Record.Name, PID: e.Record.PID, File: e.Record.File}
		if !e.Live() {
			c.Verdict = e.Verdict.String()
		}
		if (c.PID == 0 || e.Verdict == VerdictMisnamed) && canonicalRecordFile(c.File) {
			// The pid Claude Code reads it under: its file name's.
			c.PID, _ = strconv.Atoi(strings.TrimSuffix(c.File, ".json"))
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
	// Outcome is "sent" (courier evidence), "posted" (socket accepted the
	// frame), "delivered" (seen in the target's transcript, or a Qwen Code
	// receipt said so) or "held" (a Qwen Code receipt: parked for review).
	Outcome string
	// Detail is a short human note (may be empty).
	Detail string
}

// Plan describes what a transport would do, for `send --dry-run`.
type Plan struct {
	Transport string   `json:"transport"`
	Program   string   `json:"program,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Stdin     string   `json:"stdin,omitempty"`
	Socket    string   `json:"socket,omitempty"`
	Frame     string   `json:"frame,omitempty"`
}
