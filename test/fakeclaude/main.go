//go:build unix

// Command fakeclaude stands in for the courier's `claude -p --input-format
// stream-json --output-format stream-json --verbose` in peerctl's tests. It
// behaves as Claude Code 2.1.328/2.1.332 does against a Messages endpoint
// (docs/CLAUDE-CODE-FACTS.md, "A courier with no model"): for each user
// turn read from stdin it POSTs /v1/messages?beta=true to
// $ANTHROPIC_BASE_URL with the x-api-key $ANTHROPIC_API_KEY, stream true
// and the tools ListAgents and SendMessage; when the answer is a SendMessage
// tool_use it runs it — to "uds:<path>" only — by posting one JSON line to
// that socket, then POSTs again with the tool result. It exits when stdin
// ends. It prints stream-json lines (init, assistant, user, result).
//
// Environment:
//
//	FAKECLAUDE_RECORD    a folder; when set, the fake writes there argv.json
//	                     (its arguments), env (one variable a line),
//	                     cwd.json ({"path","mode" (octal),"uid"}), pid (its
//	                     pid and process group), children (pids it started)
//	                     and sent.jsonl (each SendMessage it ran: to, message)
//	FAKECLAUDE_SCENARIO  what to do; see scenarios (default "sent")
//	FAKECLAUDE_CRASH     a file: with scenario "crash_once", the first fake
//	                     to find it absent creates it and dies at its
//	                     second send turn
//
// Like Claude Code, the fake is a peer: it binds its own inbox socket
// $TMPDIR/cc-socks/<pid>.sock, and each JSON line posted there
// ({"type":"user","message":{"content":…}}) becomes a new turn after the
// current one, its content the user text (2.1.332 hands a reply to a
// stream-json courier so).
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

// scenarios: how the fake departs from a faithful Claude Code.
var scenarios = map[string]string{
	"sent":                  "faithful",
	"no_send_tool":          "offers ListAgents only",
	"tool_error":            "SendMessage's result is an error (is_error)",
	"not_sent":              "SendMessage answers success:false",
	"held":                  "after the send, a new turn: a held delivery notice naming the msg_id",
	"refused":               "after the send, a new turn: a refused delivery notice naming the msg_id",
	"other_notice":          "after the send, a held notice about another msg_id",
	"wrong_key":             "first makes one request with a wrong key",
	"hang":                  "reads stdin, never makes a request, never exits",
	"fork_hang":             "starts `sleep 1000` in its group and hangs",
	"fork_hang_ignore_term": "the same, ignoring SIGTERM",
	"sent_leave_child":      "faithful, then leaves `sleep 1000` in its group holding stdout and stderr",
	"not_logged_in":         "the real output of `claude -p` without a login, exit 1",
	"unknown_option":        "Claude Code's answer to a flag it does not know, exit 1",
	"env":                   "prints its environment on stderr, then faithful",
	"sent_hang":             "runs SendMessage (the text is posted), then hangs before it reports the result",
	"crash_once":            "faithful, but the first run (see FAKECLAUDE_CRASH) dies by SIGKILL at its second send turn",
}

var (
	scenario = "sent"
	name     = "courier"
	ownSock  string
	pending  []string // notice turns to run after the current one
)

func main() {
	if s := os.Getenv("FAKECLAUDE_SCENARIO"); s != "" {
		scenario = s
	}
	if _, ok := scenarios[scenario]; !ok {
		fail("unknown scenario %q", scenario)
	}
	args := os.Args[1:]
	record(args)
	if i := slices.Index(args, "-n"); i >= 0 && i+1 < len(args) {
		name = args[i+1]
	}
	ownSock = filepath.Join(os.TempDir(), "cc-socks", fmt.Sprintf("%d.sock", os.Getpid()))
	switch scenario {
	case "unknown_option":
		os.Stderr.Write(unknownOption)
		os.Exit(1)
	case "not_logged_in":
		os.Stdout.Write(notLoggedIn)
		os.Exit(1)
	case "hang":
		hang()
	case "fork_hang":
		forkSleep()
		hang()
	case "fork_hang_ignore_term":
		signal.Ignore(syscall.SIGTERM) // survives exec: the sleep child ignores it too
		forkSleep()
		hang()
	case "env":
		fmt.Fprintln(os.Stderr, strings.Join(os.Environ(), "\n"))
	case "wrong_key":
		req, _ := http.NewRequest(http.MethodPost, os.Getenv("ANTHROPIC_BASE_URL")+"/v1/messages?beta=true", strings.NewReader("{}"))
		req.Header.Set("x-api-key", "not-the-key")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	emit(map[string]any{"type": "system", "subtype": "init", "tools": tools(), "model": "fake", "claude_code_version": "2.1.328"})
	turns := make(chan any)
	stdinDone := make(chan struct{})
	go func() {
		defer close(stdinDone)
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 64<<10), 8<<20)
		for in.Scan() {
			var line struct {
				Type    string `json:"type"`
				Message struct {
					Content any `json:"content"`
				} `json:"message"`
			}
			if err := json.Unmarshal(in.Bytes(), &line); err != nil || line.Type != "user" {
				fail("bad stdin line %q", in.Text())
			}
			turns <- line.Message.Content
		}
	}()
	listen(turns)
	defer os.Remove(ownSock)
	var conv []any
	sendTurns := 0
	for {
		var content any
		select {
		case content = <-turns:
		case <-stdinDone:
			select {
			case content = <-turns:
			default:
				content = nil
			}
		}
		if content == nil {
			break
		}
		if text, ok := content.(string); ok && strings.HasPrefix(text, "peerctl-turn-") {
			sendTurns++
			if scenario == "crash_once" && sendTurns == 2 && firstRun() {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		conv = append(conv, map[string]any{"role": "user", "content": content})
		conv = turn(conv)
	}
	if scenario == "sent_leave_child" {
		forkSleep()
	}
}

// listen binds the fake's own inbox socket and sends the content of each
// posted line to turns.
func listen(turns chan<- any) {
	_ = os.MkdirAll(filepath.Dir(ownSock), 0o700)
	_ = os.Remove(ownSock) // a leftover of an earlier process with our pid
	ln, err := net.Listen("unix", ownSock)
	if err != nil {
		fail("listen on %s: %v", ownSock, err)
	}
	go func() {
		// One post at a time, in the order they connect: what two posts
		// made one after the other say arrives in that order.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			sc := bufio.NewScanner(c)
			sc.Buffer(make([]byte, 64<<10), 8<<20)
			for sc.Scan() {
				var frame struct {
					Message struct {
						Content any `json:"content"`
					} `json:"message"`
				}
				if json.Unmarshal(sc.Bytes(), &frame) == nil && frame.Message.Content != nil {
					turns <- frame.Message.Content
				}
			}
			c.Close()
		}
	}()
}

// firstRun reports whether this is the first fake to see FAKECLAUDE_CRASH
// absent (it creates the file).
func firstRun() bool {
	path := os.Getenv("FAKECLAUDE_CRASH")
	if path == "" {
		return false
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func tools() []string {
	if scenario == "no_send_tool" {
		return []string{"ListAgents"}
	}
	return []string{"ListAgents", "DeferredToolPlaceholder", "SendMessage"}
}

// turn runs one turn: requests until an answer ends it; returns the conversation.
func turn(conv []any) []any {
	for range 8 {
		blocks, stop := ask(conv)
		conv = append(conv, map[string]any{"role": "assistant", "content": blocks})
		emit(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": blocks}})
		if stop != "tool_use" {
			emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": text(blocks)})
			for len(pending) > 0 {
				// A notice comes as a new turn after this one, as on 2.1.332.
				n := pending[0]
				pending = pending[1:]
				time.Sleep(100 * time.Millisecond)
				conv = turn(append(conv, map[string]any{"role": "user", "content": n}))
			}
			return conv
		}
		var results []any
		var notice string
		for _, b := range blocks {
			if b["type"] != "tool_use" {
				continue
			}
			res, n := run(b)
			notice = n
			results = append(results, res)
		}
		if scenario == "sent_hang" {
			hang()
		}
		conv = append(conv, map[string]any{"role": "user", "content": results})
		emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": results}})
		if notice != "" {
			pending = append(pending, notice)
		}
	}
	fail("turn did not end in 8 requests")
	return conv
}

func text(blocks []map[string]any) string {
	for _, b := range blocks {
		if b["type"] == "text" {
			s, _ := b["text"].(string)
			return s
		}
	}
	return ""
}

// ask POSTs the conversation and reads the streamed answer.
func ask(conv []any) ([]map[string]any, string) {
	var ts []map[string]any
	for _, n := range tools() {
		ts = append(ts, map[string]any{"name": n, "description": "tool " + n, "input_schema": map[string]any{"type": "object"}})
	}
	body, _ := json.Marshal(map[string]any{"model": "fake", "stream": true, "max_tokens": 1024,
		"system": []any{map[string]any{"type": "text", "text": "You are a courier."}}, "tools": ts, "messages": conv})
	req, _ := http.NewRequest(http.MethodPost, os.Getenv("ANTHROPIC_BASE_URL")+"/v1/messages?beta=true", bytes.NewReader(body))
	req.Header.Set("x-api-key", os.Getenv("ANTHROPIC_API_KEY"))
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("request: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		fail("request: %s: %s", resp.Status, b)
	}
	var blocks []map[string]any
	var partial []string
	stop := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string         `json:"type"`
			ContentBlock map[string]any `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			fail("bad event %q: %v", data, err)
		}
		switch ev.Type {
		case "content_block_start":
			blocks = append(blocks, ev.ContentBlock)
			partial = append(partial, "")
		case "content_block_delta":
			i := len(blocks) - 1
			switch ev.Delta.Type {
			case "text_delta":
				blocks[i]["text"] = blocks[i]["text"].(string) + ev.Delta.Text
			case "input_json_delta":
				partial[i] += ev.Delta.PartialJSON
			}
		case "content_block_stop":
			i := len(blocks) - 1
			if blocks[i]["type"] == "tool_use" {
				var input map[string]any
				if err := json.Unmarshal([]byte(partial[i]), &input); err != nil {
					fail("bad tool input %q: %v", partial[i], err)
				}
				blocks[i]["input"] = input
			}
		case "message_delta":
			stop = ev.Delta.StopReason
		}
	}
	return blocks, stop
}

// run runs one tool_use block and returns its tool_result and, for the
// held and refused scenarios, the notice turn that follows.
func run(b map[string]any) (map[string]any, string) {
	id, _ := b["id"].(string)
	res := map[string]any{"type": "tool_result", "tool_use_id": id}
	if b["name"] != "SendMessage" || !slices.Contains(tools(), "SendMessage") {
		res["content"], res["is_error"] = fmt.Sprintf("<tool_use_error>Error: No such tool available: %v</tool_use_error>", b["name"]), true
		return res, ""
	}
	input, _ := b["input"].(map[string]any)
	to, _ := input["to"].(string)
	msg, _ := input["message"].(string)
	if scenario == "tool_error" {
		res["content"], res["is_error"] = "<tool_use_error>Error: the fake refuses this call</tool_use_error>", true
		return res, ""
	}
	msgID := uuid()
	answer := func(ok bool, message string) {
		j, _ := json.Marshal(map[string]any{"success": ok, "message": message, "msg_id": msgID})
		res["content"] = []any{map[string]any{"type": "text", "text": string(j)}}
	}
	path, ok := strings.CutPrefix(to, "uds:")
	if !ok {
		answer(false, "the fake only sends to uds: addresses, got "+to)
		return res, ""
	}
	if scenario == "not_sent" {
		answer(false, "“"+name+"” → "+to+": not sent (the fake says no)")
		return res, ""
	}
	frame, _ := json.Marshal(map[string]any{"msgV": 1, "msg_id": msgID, "type": "user", "message": map[string]any{"role": "user",
		"content": fmt.Sprintf("<cross-session-message from=\"uds:%s\" from-name=\"%s\" from-mode=\"prompting\">\n%s\n</cross-session-message>", ownSock, name, msg)},
		"priority": "next", "from": "uds:" + ownSock})
	if err := post(path, append(frame, '\n')); err != nil {
		answer(false, fmt.Sprintf("“%s” → %s: could not reach that session (%v)", name, to, err))
		return res, ""
	}
	if dir := os.Getenv("FAKECLAUDE_RECORD"); dir != "" {
		line, _ := json.Marshal(map[string]string{"to": to, "message": msg})
		appendFile(filepath.Join(dir, "sent.jsonl"), append(line, '\n'))
	}
	answer(true, "“"+name+"” → "+to+"; in that session's inbox, not yet read by its Claude — a [Cross-session delivery notice] follows if that session holds it (usually a different permission mode) or refuses it")
	switch scenario {
	case "held":
		return res, fmt.Sprintf("[Cross-session delivery notice] Your message to another session was held by that session (recipient: %s; msg_id: %s). NOT delivered yet.", to, msgID)
	case "refused":
		return res, fmt.Sprintf("[Cross-session delivery notice] Your message to another session was refused (recipient: %s; msg_id: %s): that session is not accepting cross-session messages.", to, msgID)
	case "other_notice":
		return res, fmt.Sprintf("[Cross-session delivery notice] Your message to another session was held by that session (recipient: %s; msg_id: %s). NOT delivered yet.", to, uuid())
	}
	return res, ""
}

func post(path string, frame []byte) error {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(frame); err != nil {
		return err
	}
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	return nil
}

func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakeclaude: "+format+"\n", args...)
	os.Exit(2)
}

func record(args []string) {
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
		"cwd.json":  cwdJSON,
		"env":       []byte(strings.Join(os.Environ(), "\n") + "\n"),
		"pid":       fmt.Appendf(nil, "%d %d\n", os.Getpid(), pgid),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			fail("record %s: %v", name, err)
		}
	}
}

func appendFile(path string, data []byte) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fail("record: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		fail("record: %v", errors.Join(err))
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
		appendFile(filepath.Join(dir, "children"), fmt.Appendf(nil, "%d\n", cmd.Process.Pid))
	}
	time.Sleep(50 * time.Millisecond)
}

// emit prints one stream-json line.
func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail("encode output: %v", err)
	}
	os.Stdout.Write(append(b, '\n'))
}

// hang never returns (select{} would trip the runtime's deadlock check).
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}
