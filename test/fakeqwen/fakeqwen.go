// Package fakeqwen stands in for a Qwen Code 0.24.4 session in tests: a
// live registry record (Home) and an inbox socket that answers as the
// session does (Listen). Formats: docs/QWEN-CODE-FACTS.md.
package fakeqwen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

// Token is the ipcToken of every record Home writes; it must never appear
// in peerctl's output.
const Token = "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface"

// Home makes a Qwen Code home whose registry holds one live record for pid
// (its real boot id, start ticks and pid namespace), named "app-3b", with
// inbox ipcPath, and returns the home folder. Linux only (/proc).
func Home(t testing.TB, pid int, sessionID, ipcPath string) string {
	t.Helper()
	start, err := procliveness.StartTime("/proc", pid)
	must(t, err)
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	must(t, err)
	ns, err := os.Readlink("/proc/self/ns/pid")
	must(t, err)
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	home := t.TempDir()
	dir := filepath.Join(home, "sessions")
	must(t, os.MkdirAll(dir, 0o700))
	rec := fmt.Sprintf(`{"schemaVersion":1,"pid":%d,"procStart":"%s:%s","pidNs":%s,"sessionId":%q,"cwd":"/w/app","name":"app-3b","startedAt":1796142262298,"qwenVersion":"0.24.4","kind":"tui","ipcPath":%q,"ipcToken":%q}`,
		pid, strings.TrimSpace(string(boot)), start, ns, sessionID, ipcPath, Token)
	must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", pid)), []byte(rec), 0o600))
	return home
}

// Inbox is a session's inbox at Sock: it checks the auth line with Token,
// reads the user frame and closes, then connects to the frame's from with
// its replyToken and writes a delivered receipt and, when Answer gives
// text, after Delay, a user frame from Sock (the reply).
type Inbox struct {
	Sock   string
	Delay  time.Duration
	Answer func(text string) string

	mu     sync.Mutex
	frames []map[string]any
}

// Listen serves an Inbox at sock until the test ends.
func Listen(t testing.TB, sock string, delay time.Duration, answer func(string) string) *Inbox {
	t.Helper()
	q := &Inbox{Sock: sock, Delay: delay, Answer: answer}
	ln, err := net.Listen("unix", sock)
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go q.handle(c)
		}
	}()
	return q
}

// Pong answers "pong: <text>".
func Pong(text string) string { return "pong: " + text }

// Frames returns the user frames received, in order.
func (q *Inbox) Frames() []map[string]any {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]map[string]any(nil), q.frames...)
}

func (q *Inbox) handle(c net.Conn) {
	sc := bufio.NewScanner(c)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			lines = append(lines, m)
		}
	}
	c.Close()
	if len(lines) < 2 || lines[0]["token"] != Token {
		return
	}
	fr := lines[1]
	q.mu.Lock()
	q.frames = append(q.frames, fr)
	q.mu.Unlock()
	from, _ := fr["from"].(string)
	back, err := net.Dial("unix", from)
	if err != nil {
		return
	}
	defer back.Close()
	id, _ := fr["msgId"].(string)
	enc := json.NewEncoder(back)
	_ = enc.Encode(map[string]any{"msgV": 1, "type": "auth", "token": fr["replyToken"]})
	_ = enc.Encode(map[string]any{"msgV": 1, "msgId": "r-" + id, "type": "control", "action": "delivery_status",
		"status": "delivered", "origMsgId": id, "from": q.Sock})
	msg, _ := fr["message"].(map[string]any)
	content, _ := msg["content"].(string)
	text := q.Answer(content)
	if text == "" {
		return
	}
	time.Sleep(q.Delay)
	_ = enc.Encode(map[string]any{"msgV": 1, "msgId": "p-" + id, "type": "user", "from": q.Sock, "fromName": "app-3b",
		"message": map[string]any{"role": "user", "content": text}})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
