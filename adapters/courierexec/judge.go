package courierexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/adapters/internal/jsonexact"
	"github.com/peerctl/peerctl/domain"
)

// Result is the {"type":"result"} message `claude -p --output-format json`
// ends with (Claude Code 2.1.328).
type Result struct {
	Type    string            `json:"type"`
	Subtype string            `json:"subtype"`
	IsError bool              `json:"is_error"`
	Result  *string           `json:"result"`
	Errors  []json.RawMessage `json:"errors"`
}

// Output is a parsed courier stdout: the result and, in the verbose array
// form, every message up to and including it. Messages after the result
// taken are dropped: the transcript that proves a call is what came before
// the courier's answer.
type Output struct {
	Result   *Result
	Messages []json.RawMessage // empty for the single-object form; the result is the last
	Array    bool
}

// MaxCandidates bounds how many lines starting with '{' or '[' ParseOutput
// tries to decode as the courier's JSON. Junk before the JSON is a banner of
// a few lines (a version manager's "Now using node ..."), and each try reads
// at most the rest of stdout, so parsing stays linear in the output's size:
// a courier printing "[\n" fifty thousand times costs MaxCandidates tries,
// not fifty thousand.
const MaxCandidates = 8

// ParseOutput finds the courier's JSON in stdout. It skips junk lines before
// it (a version manager's banner, say), accepts one result object or an array
// of messages (from --verbose, or a user's verbose setting), and in an array
// takes the last message of type "result". It fails when no JSON value with a
// result starts at one of the first MaxCandidates lines that begin (after
// blanks) with '{' or '['.
func ParseOutput(stdout []byte) (Output, error) {
	out, _, err := parseOutput(stdout)
	return out, err
}

// parseOutput is ParseOutput that also reports how many decodes it tried.
func parseOutput(stdout []byte) (Output, int, error) {
	tries := 0
	rest := stdout
	for len(rest) > 0 && tries < MaxCandidates {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i]
		}
		trimmed := bytes.TrimLeft(line, " \t\r")
		if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
			start := len(stdout) - len(rest) + (len(line) - len(trimmed))
			tries++
			if out, ok := decodeAt(stdout[start:]); ok {
				return out, tries, nil
			}
		}
		if len(line) == len(rest) {
			break
		}
		rest = rest[len(line)+1:]
	}
	if tries == MaxCandidates {
		return Output{}, tries, fmt.Errorf("no JSON result in the courier's output (tried its first %d lines that start with { or [)", tries)
	}
	return Output{}, tries, fmt.Errorf("no JSON result in the courier's output")
}

func decodeAt(b []byte) (Output, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Output{}, false
	}
	var out Output
	switch raw[0] {
	case '{':
		var r Result
		if jsonexact.Unmarshal(raw, &r) != nil || r.Type != "result" {
			return Output{}, false
		}
		out.Result = &r
	case '[':
		if json.Unmarshal(raw, &out.Messages) != nil {
			return Output{}, false
		}
		out.Array = true
		for i := len(out.Messages) - 1; i >= 0; i-- {
			var r Result
			if jsonexact.Unmarshal(out.Messages[i], &r) == nil && r.Type == "result" {
				out.Result = &r
				out.Messages = out.Messages[:i+1]
				break
			}
		}
		if out.Result == nil {
			return Output{}, false
		}
	default:
		return Output{}, false
	}
	return out, true
}

// Judge decides whether a finished courier run delivered text to name. It
// returns nil only when every proof holds (see the package doc); otherwise a
// *domain.Refusal with ReasonDeliveryFailed saying which proof failed.
func Judge(r Run, name, text string) error {
	fail := func(format string, args ...any) error {
		return domain.Refuse(domain.ReasonDeliveryFailed, "%s (exit %d); %s", fmt.Sprintf(format, args...), r.ExitCode, r.heads())
	}
	out, err := ParseOutput(r.Stdout)
	if err != nil {
		if len(bytes.TrimSpace(r.Stdout)) == 0 {
			return fail("courier printed nothing on stdout")
		}
		return fail("courier printed no JSON result")
	}
	res := out.Result
	report := ""
	if res.Result != nil {
		report = *res.Result
	}
	switch {
	case res.IsError:
		return fail("courier reported an error: %q", clip(report, 400))
	case strings.HasPrefix(res.Subtype, "error"):
		return fail("courier ended with %s: %s", res.Subtype, clip(joinRaw(res.Errors), 400))
	case r.ExitCode != 0:
		return fail("courier exited with status %d: %q", r.ExitCode, clip(report, 400))
	case res.Result == nil || strings.TrimSpace(report) == "":
		return fail("courier's result is empty")
	case strings.TrimSpace(report) == "NOT_FOUND":
		return fail("courier found no agent named %q in ListAgents", name)
	case strings.TrimSpace(report) != "SENT":
		return fail("courier answered %q, not SENT", clip(report, 400))
	}
	if !out.Array {
		return fail("courier said SENT but its output has no transcript to prove a SendMessage call (was --verbose dropped?)")
	}
	return evidence(out.Messages, name, text, fail)
}

type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

type message struct {
	Type    string          `json:"type"`
	Message json.RawMessage `json:"message"`
}

type messageBody struct {
	Content json.RawMessage `json:"content"`
}

type sendInput struct {
	To      *string `json:"to"`
	Message *string `json:"message"`
}

// evidence requires exactly one SendMessage tool_use, to name, carrying
// exactly text, with a tool_result that is not an error and no tool_result
// for it that is. A second call (to anyone) fails: the courier was told to
// call once, and a call elsewhere leaks the text. Only what Claude Code
// writes counts: tool_use blocks of "assistant" messages and tool_result
// blocks of "user" messages (Claude Code 2.1.328's verbose transcript), of
// messages before the result (msgs ends with it, see Output). An error
// result counts wherever it appears.
func evidence(msgs []json.RawMessage, name, text string, fail func(string, ...any) error) error {
	type call struct{ to, message string }
	calls := map[string]call{}
	var order []string
	type outcome struct{ ok, failed bool }
	results := map[string]outcome{} // tool_use_id -> what its results said
	for _, raw := range msgs {
		var m message
		var body messageBody
		if jsonexact.Unmarshal(raw, &m) != nil || jsonexact.Unmarshal(m.Message, &body) != nil ||
			len(body.Content) == 0 || body.Content[0] != '[' {
			continue
		}
		var rawBlocks []json.RawMessage
		if json.Unmarshal(body.Content, &rawBlocks) != nil {
			continue
		}
		for _, rb := range rawBlocks {
			var b contentBlock
			if jsonexact.Unmarshal(rb, &b) != nil {
				continue
			}
			switch {
			case b.Type == "tool_use" && b.Name == "SendMessage" && m.Type == "assistant":
				var in sendInput
				_ = jsonexact.Unmarshal(b.Input, &in)
				c := call{}
				if in.To != nil {
					c.to = *in.To
				}
				if in.Message != nil {
					c.message = *in.Message
				}
				calls[b.ID] = c
				order = append(order, b.ID)
			case b.Type == "tool_result":
				o := results[b.ToolUseID]
				if b.IsError {
					o.failed = true
				} else if m.Type == "user" {
					o.ok = true
				}
				results[b.ToolUseID] = o
			}
		}
	}
	switch len(order) {
	case 0:
		return fail("courier said SENT but made no SendMessage call")
	case 1:
	default:
		tos := make([]string, len(order))
		for i, id := range order {
			tos[i] = strconv.Quote(clip(calls[id].to, 100))
		}
		return fail("courier made %d SendMessage calls (to %s), want exactly one", len(order), strings.Join(tos, ", "))
	}
	id := order[0]
	c := calls[id]
	res := results[id]
	switch {
	case c.to != name:
		return fail("courier said SENT but its SendMessage went to %q, not %q", clip(c.to, 100), name)
	case c.message != text:
		return fail("courier said SENT but its SendMessage carried an altered text (%d bytes, want the exact %d bytes)", len(c.message), len(text))
	case res.failed:
		return fail("courier's SendMessage call failed")
	case !res.ok:
		return fail("courier's SendMessage call has no tool result")
	}
	return nil
}

func joinRaw(rs []json.RawMessage) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		var s string
		if json.Unmarshal(r, &s) == nil {
			parts = append(parts, s)
		} else {
			parts = append(parts, string(r))
		}
	}
	if len(parts) == 0 {
		return "no errors[] given"
	}
	return strings.Join(parts, "; ")
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
