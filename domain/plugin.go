package domain

import (
	"fmt"
	"strings"
	"sync"
)

// HarnessSpec is what a harness plug-in tells the domain about itself, so
// that adding a harness needs no switch in domain: its words, the endpoint
// form and what it pins, whether one socket serves many of its sessions by
// design, how its records are classified and how a reply from one of its
// sessions is told. Claude Code, Qwen Code and Codex are built in; every
// other harness registers a spec (RegisterHarness) from its plug-in
// package, and the rules written once here (resolve-then-verify, verdicts,
// refusals) apply to it unchanged.
type HarnessSpec struct {
	// Word is the stable word of `list --json` and `--harness`
	// ("opencode"); Title the name as its makers write it ("opencode").
	Word, Title string
	// Prefix starts the harness's endpoints, "<scheme>:v1:" (e.g.
	// "opencode-peer:v1:"); each endpoint is <prefix><pid>:<key>:<socket>,
	// escaped as cc-peer endpoints are.
	Prefix string
	// Pins names what an endpoint pins besides pid and socket ("session
	// id"); the record's SessionID is that value.
	Pins string
	// ValidKey checks the pinned value of a parsed endpoint (nil: any
	// non-empty value).
	ValidKey func(key string) error
	// SharedSocket: one socket (one server) serves many sessions by
	// design; the call names the session, so a socket published by several
	// records is not a reason to refuse.
	SharedSocket bool
	// NetworkSocket: the records' SocketPath is a loopback address
	// ("127.0.0.1:<port>"), not a file: nothing is looked up on disk for
	// it.
	NetworkSocket bool
	// ManyPerPID: one process holds many sessions; an endpoint picks the
	// pid's record by the pinned key.
	ManyPerPID bool
	// Unaddressable says why a live record cannot be sent to ("" when it
	// can). Classification is otherwise the shared one for records that
	// name one process: the record's problem, else the process's verdict
	// (stale, reused, live).
	Unaddressable func(r Record) string
	// ReplyFrom reports whether in is a reply from target (nil: in.From is
	// target's session id).
	ReplyFrom func(in Inbound, target Session) bool
}

var (
	specsMu sync.RWMutex
	specs   = map[Harness]HarnessSpec{}
)

// RegisterHarness adds a harness to the closed set and returns its value;
// a plug-in package calls it once, in a package-level var, so that the set
// is complete before main runs. It panics on an empty or taken word or
// prefix (a programming error).
func RegisterHarness(s HarnessSpec) Harness {
	specsMu.Lock()
	defer specsMu.Unlock()
	if s.Word == "" || s.Title == "" || !strings.HasSuffix(s.Prefix, ":v1:") || s.Pins == "" || s.Unaddressable == nil {
		panic(fmt.Sprintf("domain.RegisterHarness: incomplete spec %+v", s))
	}
	for i, w := range harnessWords {
		if w == s.Word || Harness(i).EndpointPrefix() == s.Prefix {
			panic("domain.RegisterHarness: " + s.Word + " is built in")
		}
	}
	for _, o := range specs {
		if o.Word == s.Word || o.Prefix == s.Prefix {
			panic("domain.RegisterHarness: " + s.Word + " registered twice")
		}
	}
	h := Harness(len(harnessWords) + len(specs))
	specs[h] = s
	return h
}

// specOf is the registered spec of h (ok false for a built-in harness or
// one outside the set).
func specOf(h Harness) (HarnessSpec, bool) {
	specsMu.RLock()
	defer specsMu.RUnlock()
	s, ok := specs[h]
	return s, ok
}

// registered lists the registered harnesses in the order they were added.
func registered() []Harness {
	specsMu.RLock()
	defer specsMu.RUnlock()
	out := make([]Harness, 0, len(specs))
	for i := range len(specs) {
		out = append(out, Harness(len(harnessWords)+i))
	}
	return out
}

// specByPrefix finds the registered harness whose endpoints s starts with;
// version is true when s has the harness's scheme but another version.
func specByPrefix(s string) (h Harness, spec HarnessSpec, ok, version bool) {
	for _, h := range registered() {
		spec, _ := specOf(h)
		if strings.HasPrefix(s, spec.Prefix) {
			return h, spec, true, false
		}
		if scheme, _, _ := strings.Cut(spec.Prefix, ":"); strings.HasPrefix(s, scheme+":") {
			return h, spec, false, true
		}
	}
	return 0, HarnessSpec{}, false, false
}

// classifySpec is Classify for a registered harness: the record's problem,
// else its process's verdict; a live record is addressable unless the
// spec's Unaddressable says why not.
func classifySpec(spec HarnessSpec, r Record, l Liveness) Entry {
	e := Entry{Record: r, Unchecked: l.Unchecked}
	if r.Problem != "" {
		e.Verdict, e.Reason = problemVerdict(r)
		e.Unchecked = nil
		return e
	}
	e.Verdict, e.Reason = pidVerdict(r, l, func() string {
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
// that is a file (a Unix socket, checked on disk), as every built-in
// harness's do; false for a registered harness whose socket is a network
// address (HarnessSpec.NetworkSocket).
func (h Harness) SocketIsFile() bool {
	s, ok := specOf(h)
	return !ok || !s.NetworkSocket
}
