package domain

import (
	"fmt"
	"strings"
	"sync"
)

// HarnessSpec is what a harness tells the domain about itself, so that
// domain holds no switch over harnesses: its words, the endpoint form and
// what it pins, whether one socket serves many of its sessions by design,
// how its records are classified and how a reply from one of its sessions
// is told. The rules written once here (resolve-then-verify, verdicts,
// refusals) apply to every harness unchanged. Each harness's plug-in
// package supplies its spec: the zero Harness's by RegisterZeroHarness
// (Claude Code's, from adapters/fsregistry), every other by
// RegisterHarness (Qwen Code's from adapters/qwenregistry, Codex's from
// adapters/codex, opencode's from adapters/opencode).
type HarnessSpec struct {
	// Word is the stable word of `list --json` and `--harness`
	// ("opencode"); Title the name as its makers write it ("opencode").
	Word, Title string
	// Prefix starts the harness's endpoints, "<scheme>:v1:" (e.g.
	// "opencode-peer:v1:"); each endpoint is <prefix><pid>:<key>:<socket>,
	// escaped as cc-peer endpoints are (Endpoint).
	Prefix string
	// Pins names what an endpoint pins besides pid and socket ("session
	// id"); Key gives the record's value of it.
	Pins string
	// Key is the value r's endpoint pins (nil: r.SessionID).
	Key func(r Record) string
	// ValidKey checks the pinned value of an endpoint (nil: any non-empty
	// value).
	ValidKey func(key string) error
	// EndpointSocket is the last part of r's endpoint (nil: r.SocketPath).
	EndpointSocket func(r Record) string
	// Moved words the refusal of an endpoint whose pinned value pid no
	// longer carries (nil: "endpoint pins <Pins> <pinned> but pid <pid>
	// now carries <now>; list again for the new endpoint").
	Moved func(pinned, now string, pid int) string
	// SharedSocket: one socket (one server) serves many sessions by
	// design; the call names the session, so a socket published by several
	// records is not a reason to refuse.
	SharedSocket bool
	// NetworkSocket: the records' SocketPath is a loopback address and
	// port ("127.0.0.2:4096", "[::1]:4096"), not a file: nothing is looked
	// up on disk for it.
	NetworkSocket bool
	// ManyPerPID: one process holds many sessions; an endpoint picks the
	// pid's record by the pinned key.
	ManyPerPID bool
	// Classify decides a record's verdict (nil: the shared rule for
	// records that name one process: the record's problem, else the
	// process's verdict, stale, reused or live, and a live record is
	// addressable unless Unaddressable says why not).
	Classify func(r Record, l Liveness) Entry
	// Unaddressable says why a live record cannot be sent to ("" when it
	// can); required when Classify is nil.
	Unaddressable func(r Record) string
	// ReplyFrom reports whether in is a reply from target (nil: in.From is
	// target's session id).
	ReplyFrom func(in Inbound, target Session) bool
	// FilePID is the pid the harness itself reads a record under when its
	// file name gives one (ok false otherwise; nil: never): a refusal's
	// candidate without a pid, or misnamed, shows that pid.
	FilePID func(file string) (pid int, ok bool)
	// MaxMessage is the most bytes of UTF-8 one message to its sessions
	// may have, when the harness takes less than MaxMessageBytes (0:
	// MaxMessageBytes); MaxMessageWhy says in a few words what a larger
	// one does there. Message.FitsFor applies it before anything is sent.
	MaxMessage    int
	MaxMessageWhy string
}

var (
	specsMu sync.RWMutex
	// specs holds every harness's spec, indexed by its Harness value: the
	// zero Harness's first (RegisterZeroHarness; empty until then), then
	// the registered ones in the order they were added.
	specs = []HarnessSpec{{}}
	// zeroSet: the zero Harness's spec has been supplied.
	zeroSet bool
)

// RegisterZeroHarness supplies the spec of the zero Harness
// (HarnessClaudeCode), the harness of a record built without one; its
// plug-in package calls it once, in a package-level var. Until then the
// zero Harness is outside the set. It panics on an incomplete spec, a
// second call, or a taken word or prefix (a programming error).
func RegisterZeroHarness(s HarnessSpec) Harness {
	specsMu.Lock()
	defer specsMu.Unlock()
	if zeroSet {
		panic("domain.RegisterZeroHarness: the zero Harness's spec is already supplied (" + specs[0].Word + ")")
	}
	mustAdd(s)
	specs[0], zeroSet = s, true
	return 0
}

// RegisterHarness adds a harness to the closed set and returns its value;
// a plug-in package calls it once, in a package-level var, so that the set
// is complete before main runs. It panics on an incomplete spec or a taken
// word or prefix (a programming error).
func RegisterHarness(s HarnessSpec) Harness {
	specsMu.Lock()
	defer specsMu.Unlock()
	mustAdd(s)
	specs = append(specs, s)
	return Harness(len(specs) - 1)
}

// mustAdd panics unless s is complete and its word and prefix are free;
// specsMu is held.
func mustAdd(s HarnessSpec) {
	if err := s.check(); err != nil {
		panic("domain: register harness: " + err.Error())
	}
	for i, o := range specs {
		if i == 0 && !zeroSet {
			continue
		}
		if o.Word == s.Word || o.Prefix == s.Prefix || scheme(o.Prefix) == scheme(s.Prefix) {
			panic("domain: register harness: " + s.Word + " is taken (" + o.Word + ")")
		}
	}
}

// check says what an incomplete spec lacks.
func (s HarnessSpec) check() error {
	switch {
	case s.Word == "" || s.Title == "":
		return fmt.Errorf("spec %q has no word or title", s.Word)
	case !strings.HasSuffix(s.Prefix, ":v1:") || strings.Count(s.Prefix, ":") != 2:
		return fmt.Errorf("spec %q: prefix %q is not of the form %q", s.Word, s.Prefix, "<scheme>:v1:")
	case s.Pins == "":
		return fmt.Errorf("spec %q pins nothing", s.Word)
	case s.Classify == nil && s.Unaddressable == nil:
		return fmt.Errorf("spec %q has neither Classify nor Unaddressable", s.Word)
	}
	return nil
}

// Spec is h's spec (ok false for a value outside the set).
func (h Harness) Spec() (HarnessSpec, bool) { return specOf(h) }

func specOf(h Harness) (HarnessSpec, bool) {
	specsMu.RLock()
	defer specsMu.RUnlock()
	if int(h) < 0 || int(h) >= len(specs) || h == 0 && !zeroSet {
		return HarnessSpec{}, false
	}
	return specs[h], true
}

// spec is h's spec; for a value outside the set, the zero Harness's (as a
// record built without one is the zero Harness's), or, before that is
// supplied, outsideSpec.
func (h Harness) spec() HarnessSpec {
	if s, ok := specOf(h); ok {
		return s
	}
	if s, ok := specOf(0); ok {
		return s
	}
	return outsideSpec
}

// outsideSpec is the spec of a harness outside the set: its records are
// judged by the shared rule and never addressable.
var outsideSpec = HarnessSpec{
	Pins: "key",
	Unaddressable: func(r Record) string {
		return fmt.Sprintf("harness %s is not in the set", r.Harness)
	},
}

// scheme is a prefix's scheme ("cc-peer" of "cc-peer:v1:").
func scheme(prefix string) string {
	s, _, _ := strings.Cut(prefix, ":")
	return s
}

// specByPrefix finds the harness whose endpoints s starts with; version is
// true when s has the harness's scheme but another version.
func specByPrefix(s string) (h Harness, spec HarnessSpec, ok, version bool) {
	for _, h := range Harnesses() {
		spec := h.spec()
		if strings.HasPrefix(s, spec.Prefix) {
			return h, spec, true, false
		}
		if strings.HasPrefix(s, scheme(spec.Prefix)+":") {
			return h, spec, false, true
		}
	}
	return 0, HarnessSpec{}, false, false
}

// key is the value r's endpoint pins.
func (s HarnessSpec) key(r Record) string {
	if s.Key != nil {
		return s.Key(r)
	}
	return r.SessionID
}

// endpointSocket is the last part of r's endpoint.
func (s HarnessSpec) endpointSocket(r Record) string {
	if s.EndpointSocket != nil {
		return s.EndpointSocket(r)
	}
	return r.SocketPath
}

// moved words the refusal of an endpoint whose pinned value moved.
func (s HarnessSpec) moved(pinned, now string, pid int) string {
	if s.Moved != nil {
		return s.Moved(pinned, now, pid)
	}
	return fmt.Sprintf("endpoint pins %s %s but pid %d now carries %s; list again for the new endpoint", s.Pins, pinned, pid, now)
}

// replyFrom reports whether in is a reply from target.
func (s HarnessSpec) replyFrom(in Inbound, target Session) bool {
	if s.ReplyFrom != nil {
		return s.ReplyFrom(in, target)
	}
	return target.ID() != "" && in.From == target.ID()
}

// classify is Classify by the spec.
func (s HarnessSpec) classify(r Record, l Liveness) Entry {
	if s.Classify != nil {
		return s.Classify(r, l)
	}
	return classifySpec(s, r, l)
}

// classifySpec is Classify for a registered harness: the record's problem,
// else its process's verdict; a live record is addressable unless the
// spec's Unaddressable says why not.
func classifySpec(spec HarnessSpec, r Record, l Liveness) Entry {
	e := Entry{Record: r, Unchecked: l.Unchecked}
	if r.Problem != "" {
		e.Verdict, e.Reason = ProblemVerdict(r)
		e.Unchecked = nil
		return e
	}
	e.Verdict, e.Reason = PIDVerdict(r, l, func() string {
		return fmt.Sprintf("pid %d started at %s, not at %s when it was read", r.PID, l.ActualStart, r.ProcStart)
	})
	if e.Verdict != VerdictLive {
		return e
	}
	if why := spec.Unaddressable(r); why != "" {
		e.Unaddressable = why
	} else {
		e.Addressable = true
	}
	return e
}

// SocketIsFile reports whether the harness's records publish a socket
// that is a file (a Unix socket, checked on disk); false for a harness
// whose socket is a network address (HarnessSpec.NetworkSocket).
func (h Harness) SocketIsFile() bool { return !h.spec().NetworkSocket }

// SocketFile is r's socket when it is a file on disk (a Unix socket: its
// harness's SocketIsFile), "" otherwise: no socket published, or a
// loopback address and port (an opencode server's "127.0.0.1:4096"),
// which has no folder and nothing on disk to check.
func (r Record) SocketFile() string {
	if !r.Harness.SocketIsFile() {
		return ""
	}
	return r.SocketPath
}
