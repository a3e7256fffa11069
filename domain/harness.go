package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Harness is the coding-agent program a session runs in. The set is closed;
// String gives the stable word of `list --json` ("harness") and of
// `--harness`. The zero value is HarnessClaudeCode, so a record built
// without one is Claude Code's, as every record was before Qwen Code;
// every other harness is added by its plug-in package (RegisterHarness),
// which holds what is known of it.
type Harness int

// HarnessClaudeCode: Claude Code, registry <config dir>/sessions/<pid>.json:
// the zero value, whose spec (claudecode.go) the domain's own rules and
// tests are written against.
const HarnessClaudeCode Harness = 0

// String returns the harness's stable word ("claude-code", "qwen-code",
// "codex", or a registered harness's).
func (h Harness) String() string {
	if s, ok := specOf(h); ok {
		return s.Word
	}
	return fmt.Sprintf("harness(%d)", int(h))
}

// Title is the harness's name as its makers write it: "Claude Code",
// "Qwen Code", "Codex"... (the String word for a harness outside the set).
func (h Harness) Title() string {
	if s, ok := specOf(h); ok {
		return s.Title
	}
	return h.String()
}

// Harnesses lists every harness in a stable order: Claude Code's (the zero
// value), then the registered ones (RegisterHarness) in the order they
// were added, which is the order Go initialises their packages in. The
// order people see is the plug-in list's (the composition root's).
func Harnesses() []Harness {
	specsMu.RLock()
	defer specsMu.RUnlock()
	out := make([]Harness, len(specs))
	for i := range specs {
		out[i] = Harness(i)
	}
	return out
}

// EndpointPrefix is what starts the harness's endpoints: "cc-peer:v1:",
// "qwen-peer:v1:", "codex-peer:v1:"... ("" for a harness outside the set).
func (h Harness) EndpointPrefix() string {
	s, _ := specOf(h)
	return s.Prefix
}

// endpointForms names every endpoint form accepted, for an error: each
// harness's, then another machine's.
func endpointForms() string {
	var forms []string
	for _, h := range Harnesses() {
		forms = append(forms, h.EndpointPrefix()+"…")
	}
	return strings.Join(forms, ", ") + " or " + HostEndpointPrefix + "<host>:<endpoint>"
}

// ParseHarness maps a wire word ("claude-code", "qwen-code", "codex", or a
// registered harness's) to its Harness.
func ParseHarness(word string) (Harness, error) {
	var words []string
	for _, h := range Harnesses() {
		if h.String() == word {
			return h, nil
		}
		words = append(words, strconv.Quote(h.String()))
	}
	return 0, fmt.Errorf("unknown harness %q (want %s or %s)", word, strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
}

// Harness is the harness the endpoint addresses.
func (e Endpoint) Harness() Harness { return e.harness }

// Harness is the harness that wrote the session's record.
func (s Session) Harness() Harness { return s.rec.Harness }

// endpointFor builds the endpoint of a record by its harness's spec.
func endpointFor(r Record) (Endpoint, error) {
	spec := r.Harness.spec()
	return newEndpoint(r.Harness, spec, r.PID, spec.key(r), spec.endpointSocket(r))
}

// Pins names what the endpoint pins besides pid and socket, the part
// Name returns: "name" (Claude Code), "session id" (Qwen Code), "thread
// id" (Codex)... (HarnessSpec.Pins).
func (e Endpoint) Pins() string { return e.harness.spec().Pins }

// NewHarnessEndpoint builds an endpoint of harness h: pid must be
// positive, key (what the spec pins) and socket non-empty, and key valid by
// the spec's ValidKey.
func NewHarnessEndpoint(h Harness, pid int, key, socket string) (Endpoint, error) {
	spec, ok := specOf(h)
	if !ok {
		return Endpoint{}, fmt.Errorf("%w: harness %s is not in the set", ErrBadEndpoint, h)
	}
	return newEndpoint(h, spec, pid, key, socket)
}

func newEndpoint(h Harness, spec HarnessSpec, pid int, key, socket string) (Endpoint, error) {
	if spec.ValidKey != nil {
		if err := spec.ValidKey(key); err != nil {
			return Endpoint{}, fmt.Errorf("%w: %s %q: %w", ErrBadEndpoint, spec.Pins, key, err)
		}
	}
	ep, err := NewEndpoint(pid, key, socket)
	if err != nil {
		return Endpoint{}, err
	}
	ep.harness = h
	return ep, nil
}
