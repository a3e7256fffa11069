package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Harness is the coding-agent program a session runs in. The set is closed;
// String gives the stable word of `list --json` ("harness") and of
// `--harness`. The zero value is HarnessClaudeCode, so a record built
// without one is Claude Code's, as every record was before Qwen Code.
// Every harness's spec, the zero one's included, is supplied by its
// plug-in package (RegisterZeroHarness, RegisterHarness), which holds what
// is known of it; domain holds none.
type Harness int

// HarnessClaudeCode is the zero value: the harness of a record built
// without one. Its spec comes from Claude Code's plug-in
// (adapters/fsregistry, RegisterZeroHarness); only the name is here, so
// that the packages serving every harness can name the default.
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

// Harnesses lists every harness in a stable order: the zero value's (once
// supplied), then the registered ones (RegisterHarness) in the order they
// were added, which is the order Go initialises their packages in. The
// order people see is the plug-in list's (the composition root's).
func Harnesses() []Harness {
	specsMu.RLock()
	defer specsMu.RUnlock()
	out := make([]Harness, 0, len(specs))
	for i := range specs {
		if i > 0 || zeroSet {
			out = append(out, Harness(i))
		}
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
	return strings.Join(forms, ", ") + ", " + HostEndpointPrefix + "<host>:<endpoint> or " + NodeEndpointPrefix + "<node>:<endpoint>"
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
	if len(words) < 2 {
		return 0, fmt.Errorf("unknown harness %q (want %s)", word, strings.Join(words, ""))
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
	ep, err := rawEndpoint(pid, key, socket)
	if err != nil {
		return Endpoint{}, err
	}
	ep.harness = h
	return ep, nil
}
