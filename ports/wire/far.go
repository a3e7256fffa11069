package wire

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

// InstallFix is the command a refusal names when no usable peerctl is on
// dest, shell-quoted (domain.ShellCommand); for a node of the fleet's
// bus, what to run there.
func InstallFix(dest domain.Dest) string {
	if node, ok := dest.Node(); ok {
		return "run this build's peerctl serve --nats URL --node " + node + " on that machine"
	}
	return domain.ShellCommand("peerctl", "hosts", "install", dest.String())
}

// FarError is a far side's run that failed without a refusal document:
// its message (its stderr, escaped) and its exit code, kept when peerctl's
// table has it (else 1). Code 2 is the far side's usage error.
type FarError struct {
	Dest    domain.Dest
	Code    int
	Message string
}

func (e *FarError) Error() string { return e.Message }

// ReadDoc reads a far side's --json output into v (exactly: see
// jsonexact.Exact) when it exited 0; otherwise its failure is the error
// (Failure).
func ReadDoc(dest domain.Dest, res ports.RemoteResult, v any) error {
	if res.Code == ExitOK {
		out := bytes.TrimSpace(res.Stdout)
		err := jsonexact.Exact(out, v)
		if err == nil {
			err = jsonexact.Complete(out, v)
		}
		if err != nil {
			return Broken(dest, err)
		}
		return nil
	}
	return Failure(dest, res)
}

// Failure is the error of a far side's run that did not succeed: its
// refusal (from its --json refusal document: a *domain.Refusal with the
// far side's reason, its detail headed "on DEST: " so that no refusal
// reads as this machine's), or a *FarError with its message and exit code.
func Failure(dest domain.Dest, res ports.RemoteResult) error {
	var doc RefusalDoc
	if out := bytes.TrimSpace(res.Stdout); len(out) > 0 && jsonexact.Exact(out, &doc) == nil && jsonexact.Complete(out, doc) == nil {
		reason, err := domain.ParseReason(doc.Refusal.Reason)
		if err != nil {
			return Broken(dest, err)
		}
		return &domain.Refusal{Reason: reason, Detail: "on " + dest.String() + ": " + doc.Refusal.Detail, Candidates: doc.Refusal.Candidates,
			Suggestions: doc.Refusal.Suggestions, Status: doc.Refusal.Status, StatusReason: doc.Refusal.StatusReason}
	}
	code := res.Code
	if code <= ExitOK || code > ExitOutcomeUnknown {
		code = ExitError
	}
	return &FarError{Dest: dest, Code: code, Message: fmt.Sprintf("%s: %s", dest, Message(res.Stderr))}
}

// Broken is the refusal of a far side whose output is not what this
// build's peerctl prints: no usable peerctl there.
func Broken(dest domain.Dest, err error) error {
	return domain.Refuse(domain.ReasonHostUnreachable, "%s: the far side's output is not this build's output protocol (%s); fix: %s", dest, Safe(Clip(err.Error(), 200)), Safe(InstallFix(dest)))
}

// Message is a far side's stderr for one line of ours: its lines without
// their "peerctl: " prefix and usage hints, joined by "; ", escaped,
// bounded.
func Message(stderr []byte) string {
	parts := Lines(stderr)
	if len(parts) == 0 {
		return "it said nothing"
	}
	return Safe(Clip(strings.Join(parts, "; "), 2000))
}

// StderrLines are a far side's stderr lines as it printed them, but for
// blank ones, not yet escaped.
func StderrLines(stderr []byte) []string {
	var out []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// Lines are a far side's stderr lines without their "peerctl: " prefix
// and its usage hints ("Run 'peerctl … --help'"), not yet escaped.
func Lines(stderr []byte) []string {
	var parts []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(l, "peerctl: ")); l != "" && !strings.HasPrefix(l, "Run '") {
			parts = append(parts, l)
		}
	}
	return parts
}

// HostEndpoint is ep, as the far side printed it, on dest: "" stays "";
// anything else must be an endpoint of that machine (domain.ParseEndpoint)
// and never an ssh: or nats: one, which would name yet another machine.
func HostEndpoint(dest domain.Dest, ep string) (string, error) {
	switch {
	case ep == "":
		return "", nil
	case strings.HasPrefix(ep, "ssh:"), strings.HasPrefix(ep, domain.NodePrefix):
		return "", fmt.Errorf("its endpoint %q is another machine's, which no session on %s has", Clip(ep, 200), dest)
	}
	if _, err := domain.ParseEndpoint(ep); err != nil {
		return "", fmt.Errorf("its endpoint is none: %s", Safe(Clip(err.Error(), 200)))
	}
	return domain.HostEndpoint(dest, ep), nil
}

// SkipNote is the warning line of a far side's record left out for why,
// naming it by id ("with no id" when it has none).
func SkipNote(what, id string, why error) string {
	if id == "" {
		return fmt.Sprintf("warning: %s with no id left out: %s", what, why)
	}
	return fmt.Sprintf("warning: %s %s left out: %s", what, Safe(Clip(id, 100)), why)
}

// Named is the session a far side's answer names (a send receipt, a show
// document, a relay receipt): its harness's word and its endpoint as the
// far side printed it ("" when the answer does not say them), its pid,
// session id and name.
type Named struct {
	Harness, Endpoint string
	PID               int
	SessionID, Name   string
}

// Agrees is why an answer naming s is not an answer for address, the
// address the call named there (nil when it may be). The session must be
// one the far side could resolve for address (domain.MayResolve): for a
// full session id, that session; for an endpoint, its pid and the value
// it pins (a name, a session id), and, when the answer says them, the
// endpoint's harness and the endpoint itself; for a name or an id prefix,
// a session of that name or whose id starts with it. The error names both,
// escaped.
func Agrees(address string, s Named) error {
	r := domain.Record{PID: s.PID, SessionID: s.SessionID, Name: s.Name}
	ok := domain.MayResolve(r, address)
	if ok && domain.IsEndpoint(address) {
		ep, _ := domain.ParseEndpoint(address) // MayResolve parsed it
		ok = (s.Harness == "" || s.Harness == ep.Harness().String()) && (s.Endpoint == "" || s.Endpoint == address)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("it answered for %s, not for the one asked for, %s", s, Safe(Clip(address, 300)))
}

// String names s for people, escaped: "session ID (name "NAME", pid PID,
// harness, endpoint ENDPOINT)", "a session with no id" for an empty id.
func (s Named) String() string {
	id := "a session with no id"
	if s.SessionID != "" {
		id = "session " + Safe(Clip(s.SessionID, 100))
	}
	about := []string{fmt.Sprintf("name %s, pid %d", strconv.Quote(Clip(s.Name, 100)), s.PID)}
	if s.Harness != "" {
		about = append(about, Safe(Clip(s.Harness, 40)))
	}
	if s.Endpoint != "" {
		about = append(about, "endpoint "+Safe(Clip(s.Endpoint, 300)))
	}
	return id + " (" + strings.Join(about, ", ") + ")"
}
