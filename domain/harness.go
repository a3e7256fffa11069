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
type Harness int

// The harnesses peerctl reads.
const (
	// HarnessClaudeCode: Claude Code, registry <config dir>/sessions/<pid>.json.
	HarnessClaudeCode Harness = iota
	// HarnessQwenCode: Qwen Code (0.24.x; 0.23.x with messaging turned on),
	// registry $QWEN_HOME/sessions/<pid>.json and <pid>-<8 hex>.json.
	HarnessQwenCode
	// HarnessCodex: Codex CLI (0.171.0), its threads read from the
	// app-server daemon and the processes that hold them (adapters/codex).
	HarnessCodex
)

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

// HarnessTitles lists every harness's Title in prose joined by conj:
// "Claude Code, Qwen Code or Codex" for "or". Help texts use it, so that
// no harness is left out of one.
func HarnessTitles(conj string) string {
	hs := Harnesses()
	titles := make([]string, len(hs))
	for i, h := range hs {
		titles[i] = h.Title()
	}
	if len(titles) < 2 {
		return strings.Join(titles, "")
	}
	return strings.Join(titles[:len(titles)-1], ", ") + " " + conj + " " + titles[len(titles)-1]
}

// Harnesses lists every harness in a stable order: the built-in ones, then
// the registered ones (RegisterHarness) in the order they were added.
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

// EndpointPrefixQwen starts every Qwen Code endpoint of protocol version 1:
//
//	qwen-peer:v1:<pid>:<sessionId>:<socket>
//
// escaped as cc-peer endpoints are. Where a cc-peer endpoint pins the
// session's name, a qwen-peer endpoint pins its session id: Qwen Code's
// names are not unique by design (cwd basename + 2 hex digits), and one
// process changes its session id on /clear and /resume. An endpoint taken
// before a /clear therefore refuses (identity_mismatch) instead of reaching
// the new conversation; re-list to get the new one.
const EndpointPrefixQwen = "qwen-peer:v1:"

// NewQwenEndpoint builds a qwen-peer endpoint; pid must be positive,
// sessionID and socket non-empty.
func NewQwenEndpoint(pid int, sessionID, socket string) (Endpoint, error) {
	return NewHarnessEndpoint(HarnessQwenCode, pid, sessionID, socket)
}

// EndpointPrefixCodex starts every Codex endpoint of protocol version 1:
//
//	codex-peer:v1:<pid>:<threadId>:<daemon socket>
//
// escaped as cc-peer endpoints are. It pins the thread id (Codex's one id
// for a thread, session and conversation) and the pid that has the thread
// open: a client's (the TUI's), or the --no-daemon TUI's own. The socket is
// the daemon's socket the Codex home's control socket links to, which every
// thread of that home shares; a --no-daemon thread, which no socket
// serves, has CodexQueueAddress there.
const EndpointPrefixCodex = "codex-peer:v1:"

// NewCodexEndpoint builds a codex-peer endpoint; pid must be positive,
// threadID a UUID (IsUUID) and socket non-empty.
func NewCodexEndpoint(pid int, threadID, socket string) (Endpoint, error) {
	return NewHarnessEndpoint(HarnessCodex, pid, threadID, socket)
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
