//go:build unix

// Command fakeclaude stands in for `claude -p` in peerctl's tests. It reads
// its prompt from stdin to EOF (as Claude Code 2.1.328 does when given no
// prompt argument), records what it was given, and prints the output of a
// scripted scenario.
//
// Environment:
//
//	FAKECLAUDE_RECORD    a folder; when set, the fake writes there
//	                     argv.json (its arguments, a JSON array of strings),
//	                     stdin (the bytes read), env (os.Environ(), one
//	                     variable per line), cwd.json (its working
//	                     directory: {"path","mode" (octal string),"uid"}),
//	                     pid (its pid and process group)
//	                     children (pids it started, one a line) and
//	                     sent.jsonl (each successful SendMessage: to, message)
//	FAKECLAUDE_SCENARIO  what to do; see the scenarios table (default "sent")
//	FAKECLAUDE_WORD      the result word of scenario "word"
//
// Like a real courier, the fake parses the prompt: it takes the target name
// from the JSON string after "exactly this JSON string: ", finds the nonce,
// and takes the message as the bytes between the fence lines carrying that
// nonce. When the prompt does not parse it exits 2 and says why on stderr.
//
// Its output shapes follow `claude -p --output-format json [--verbose]` of
// Claude Code 2.1.328: a JSON array of messages (system init, assistant
// tool_use, user tool_result, ..., a final {"type":"result"}) with
// --verbose, one result object without it.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Real outputs of Claude Code 2.1.328 (ids made neutral).
var (
	//go:embed testdata/not-logged-in.stdout.json
	notLoggedIn []byte
	//go:embed testdata/unknown-option.stderr.txt
	unknownOption []byte
)

// The prompt's fence, as adapters/courierexec writes it. The fake re-derives
// everything else from the prompt itself.
const (
	namePhrase  = "exactly this JSON string: "
	noncePhrase = "carry the nonce "
	beginMarker = "<<<PEERCTL-MESSAGE-BEGIN "
	endMarker   = "<<<PEERCTL-MESSAGE-END "
	markerClose = ">>>"
)

type scenario func(p prompt) int

var scenarios = map[string]scenario{
	// sent: a faithful courier (verbose array with the SendMessage evidence).
	"sent": func(p prompt) int { return emit(verbose(p, sendCall(p.name, p.text, false), "SENT")) },
	// banner: a version manager's line before the JSON.
	"banner": func(p prompt) int {
		fmt.Println("Now using node v22.11.0 (npm v10.9.0)")
		return emit(verbose(p, sendCall(p.name, p.text, false), "SENT"))
	},
	// object: SENT as a single result object, no transcript to prove it.
	"object": func(p prompt) int { return emit(result("success", false, str("SENT"), nil)) },
	// is_error: the text says SENT, the flag says error.
	"is_error": func(p prompt) int {
		out := verbose(p, sendCall(p.name, p.text, false), "SENT")
		out[len(out)-1] = result("success", true, str("SENT"), nil)
		return emit(out)
	},
	// max_turns: subtype error_max_turns with errors[].
	"max_turns": func(p prompt) int {
		out := verbose(p, nil, "")
		out[len(out)-1] = result("error_max_turns", false, nil, []string{"Reached maximum number of turns (2)"})
		return emit(out)
	},
	// empty_result: result "".
	"empty_result": func(p prompt) int { return emit(verbose(p, sendCall(p.name, p.text, false), "")) },
	// no_result: the result message has no result field.
	"no_result": func(p prompt) int {
		out := verbose(p, sendCall(p.name, p.text, false), "")
		out[len(out)-1] = result("success", false, nil, nil)
		return emit(out)
	},
	// no_output: prints nothing, exits 0.
	"no_output": func(p prompt) int { return 0 },
	// no_call: SENT without any SendMessage call.
	"no_call": func(p prompt) int { return emit(verbose(p, nil, "SENT")) },
	// truncated: SendMessage carries half the text.
	"truncated": func(p prompt) int {
		return emit(verbose(p, sendCall(p.name, p.text[:len(p.text)/2], false), "SENT"))
	},
	// other_name: SendMessage to another session.
	"other_name": func(p prompt) int {
		return emit(verbose(p, sendCall("someone-else", p.text, false), "SENT"))
	},
	// twice: SendMessage to the target, then again to another session.
	"twice": func(p prompt) int {
		calls := append(sendCall(p.name, p.text, false), sendCall("someone-else", p.text, false)...)
		return emit(verbose(p, calls, "SENT"))
	},
	// tool_error: SendMessage's tool_result is an error.
	"tool_error": func(p prompt) int { return emit(verbose(p, sendCall(p.name, p.text, true), "SENT")) },
	// not_found: no agent of that name.
	"not_found": func(p prompt) int { return emit(verbose(p, nil, "NOT_FOUND")) },
	// word: a faithful call, then FAKECLAUDE_WORD as the answer.
	"word": func(p prompt) int {
		return emit(verbose(p, sendCall(p.name, p.text, false), os.Getenv("FAKECLAUDE_WORD")))
	},
	// exit1_sent: a faithful transcript, but exit status 1.
	"exit1_sent": func(p prompt) int {
		emit(verbose(p, sendCall(p.name, p.text, false), "SENT"))
		return 1
	},
	// fork_hang: starts `sleep 1000` in its group and hangs.
	"fork_hang": func(p prompt) int {
		forkSleep()
		hang()
		return 0
	},
	// fork_hang_ignore_term: the same, ignoring SIGTERM (only SIGKILL ends it).
	"fork_hang_ignore_term": func(p prompt) int {
		ignoreTerm()
		forkSleep()
		hang()
		return 0
	},
	// sent_then_hang: prints a faithful SENT transcript, then never exits.
	"sent_then_hang": func(p prompt) int {
		emit(verbose(p, sendCall(p.name, p.text, false), "SENT"))
		hang()
		return 0
	},
	// sent_leave_child: prints a faithful transcript and exits 0, leaving a
	// `sleep 1000` in its group that holds stdout and stderr open.
	"sent_leave_child": func(p prompt) int {
		forkSleep()
		return emit(verbose(p, sendCall(p.name, p.text, false), "SENT"))
	},
	// env: prints its environment on stderr, then behaves like "sent".
	"env": func(p prompt) int {
		fmt.Fprintln(os.Stderr, strings.Join(os.Environ(), "\n"))
		return emit(verbose(p, sendCall(p.name, p.text, false), "SENT"))
	},
	// unknown_option: Claude Code's answer to a flag it does not know.
	"unknown_option": func(p prompt) int {
		os.Stderr.Write(unknownOption)
		return 1
	},
	// not_logged_in: the real output of `claude -p` without a login.
	"not_logged_in": func(p prompt) int {
		os.Stdout.Write(notLoggedIn)
		return 1
	},
}

func main() {
	args := os.Args[1:]
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	record(args, stdin)
	name := os.Getenv("FAKECLAUDE_SCENARIO")
	if name == "" {
		name = "sent"
	}
	sc, ok := scenarios[name]
	if !ok {
		fail("unknown scenario %q", name)
	}
	// Scenarios that never look at the prompt still require one that parses
	// unless they imitate a failure before reading it.
	p, err := parsePrompt(string(stdin))
	if err != nil && name != "unknown_option" && name != "not_logged_in" && name != "no_output" {
		fail("bad prompt: %v", err)
	}
	os.Exit(sc(p))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakeclaude: "+format+"\n", args...)
	os.Exit(2)
}

// prompt is what a courier understands of its stdin.
type prompt struct {
	name, nonce, text string
}

// parsePrompt reads the target name and the fenced text the way a careful
// courier would: the nonce from the instructions, the text strictly between
// the first begin line and the end line carrying it, the end line being the
// prompt's last line, and the nonce nowhere in the text.
func parsePrompt(s string) (prompt, error) {
	var p prompt
	i := strings.Index(s, namePhrase)
	if i < 0 {
		return p, errors.New("no target name")
	}
	dec := json.NewDecoder(strings.NewReader(s[i+len(namePhrase):]))
	if err := dec.Decode(&p.name); err != nil {
		return p, fmt.Errorf("target name is not a JSON string: %w", err)
	}
	i = strings.Index(s, noncePhrase)
	if i < 0 {
		return p, errors.New("no nonce")
	}
	rest := s[i+len(noncePhrase):]
	j := strings.IndexByte(rest, ':')
	if j < 0 {
		return p, errors.New("nonce not followed by a colon")
	}
	p.nonce = rest[:j]
	if len(p.nonce) < 32 {
		return p, fmt.Errorf("nonce %q is shorter than 128 bits of hex", p.nonce)
	}
	begin := "\n" + beginMarker + p.nonce + markerClose + "\n"
	end := "\n" + endMarker + p.nonce + markerClose + "\n"
	b := strings.Index(s, begin)
	e := strings.LastIndex(s, end)
	switch {
	case b < 0:
		return p, errors.New("no begin line")
	case e < 0:
		return p, errors.New("no end line")
	case e+len(end) != len(s):
		return p, errors.New("the end line is not the last line")
	case e < b+len(begin)-1:
		return p, errors.New("end line before the begin line")
	}
	// The text starts after the begin line and ends before the newline that
	// starts the end line.
	p.text = s[b+len(begin) : e]
	if strings.Contains(p.text, p.nonce) {
		return p, errors.New("the text contains the nonce")
	}
	if n := strings.Count(s, p.nonce); n != 3 {
		return p, fmt.Errorf("the nonce occurs %d times, want 3 (instructions, begin, end)", n)
	}
	return p, nil
}

func record(args []string, stdin []byte) {
	dir := os.Getenv("FAKECLAUDE_RECORD")
	if dir == "" {
		return
	}
	a, _ := json.Marshal(args)
	pgid, _ := syscall.Getpgid(0)
	cwd := map[string]any{}
	if wd, err := os.Getwd(); err == nil {
		cwd["path"] = wd
		var st syscall.Stat_t
		if syscall.Lstat(wd, &st) == nil {
			cwd["mode"], cwd["uid"] = fmt.Sprintf("%o", st.Mode&0o7777), st.Uid
		}
	}
	cwdJSON, _ := json.Marshal(cwd)
	for name, data := range map[string][]byte{
		"argv.json": a,
		"stdin":     stdin,
		"cwd.json":  cwdJSON,
		"env":       []byte(strings.Join(os.Environ(), "\n") + "\n"),
		"pid":       fmt.Appendf(nil, "%d %d\n", os.Getpid(), pgid),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			fail("record %s: %v", name, err)
		}
	}
}

// forkSleep starts `sleep 1000` in the fake's process group, sharing its
// stdout and stderr, and records its pid.
func forkSleep() {
	cmd := exec.Command("sleep", "1000")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fail("start sleep: %v", err)
	}
	if dir := os.Getenv("FAKECLAUDE_RECORD"); dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, "children"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			fail("record child: %v", err)
		}
		fmt.Fprintf(f, "%d\n", cmd.Process.Pid)
		f.Close()
	}
	// Let the child get going before the scenario goes on.
	time.Sleep(50 * time.Millisecond)
}

func ignoreTerm() {
	// SIG_IGN survives exec, so the sleep child ignores TERM too: a stubborn
	// group that only SIGKILL ends.
	signal.Ignore(syscall.SIGTERM)
}

var nextID = 1

func toolID() string {
	id := fmt.Sprintf("toolu_%02d", nextID)
	nextID++
	return id
}

func str(s string) *string { return &s }

// verbose builds the --verbose array: init, a ListAgents round trip listing
// the target, the given messages, the answer word as assistant text and a
// result message with that word ("" leaves the answer out and the result "").
func verbose(p prompt, calls []any, word string) []any {
	list := toolID()
	agents, _ := json.Marshal([]map[string]any{{"name": p.name, "status": "idle"}})
	out := []any{
		map[string]any{"type": "system", "subtype": "init", "session_id": "00000000-0000-4000-8000-000000000000",
			"tools": []string{"ListAgents", "SendMessage"}, "mcp_servers": []any{}, "model": "claude-haiku-4-5",
			"permissionMode": "default", "claude_code_version": "2.1.328"},
		assistant(map[string]any{"type": "tool_use", "id": list, "name": "ListAgents", "input": map[string]any{}}),
		user(map[string]any{"type": "tool_result", "tool_use_id": list, "content": string(agents)}),
	}
	out = append(out, calls...)
	if word != "" {
		out = append(out, assistant(map[string]any{"type": "text", "text": word}))
	}
	return append(out, result("success", false, str(word), nil))
}

// sendCall is one SendMessage tool_use and its tool_result. A call that
// succeeds is appended to FAKECLAUDE_RECORD/sent.jsonl as {"to","message"}:
// what the target session would have received.
func sendCall(to, text string, isError bool) []any {
	id := toolID()
	if dir := os.Getenv("FAKECLAUDE_RECORD"); dir != "" && !isError {
		line, _ := json.Marshal(map[string]string{"to": to, "message": text})
		f, err := os.OpenFile(filepath.Join(dir, "sent.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			fail("record send: %v", err)
		}
		f.Write(append(line, '\n'))
		f.Close()
	}
	res := map[string]any{"type": "tool_result", "tool_use_id": id, "content": "Message sent to " + to}
	if isError {
		res["content"], res["is_error"] = "Error: no agent named "+to, true
	}
	return []any{
		assistant(map[string]any{"type": "tool_use", "id": id, "name": "SendMessage",
			"input": map[string]any{"to": to, "summary": "relayed by peerctl", "message": text}}),
		user(res),
	}
}

func assistant(block map[string]any) map[string]any {
	return map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{block}}}
}

func user(block map[string]any) map[string]any {
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{block}}}
}

// result is the final message; a nil text leaves the field out.
func result(subtype string, isError bool, text *string, errs []string) map[string]any {
	r := map[string]any{"type": "result", "subtype": subtype, "is_error": isError, "num_turns": 3,
		"session_id": "00000000-0000-4000-8000-000000000000", "total_cost_usd": 0}
	if text != nil {
		r["result"] = *text
	}
	if errs != nil {
		r["errors"] = errs
	}
	return r
}

// emit prints v as Claude Code does (one line) and returns exit status 0.
// Without --verbose in argv, an array is reduced to its last element.
func emit(v any) int {
	if arr, ok := v.([]any); ok && !slices.Contains(os.Args[1:], "--verbose") {
		v = arr[len(arr)-1]
	}
	b, err := json.Marshal(v)
	if err != nil {
		fail("encode output: %v", err)
	}
	os.Stdout.Write(append(b, '\n'))
	return 0
}

// hang never returns (select{} would trip the runtime's deadlock check).
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}
