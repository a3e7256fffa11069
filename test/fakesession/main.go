// Command fakesession stands in for an interactive Claude Code session in
// peerctl's tests. It writes its registry record <config>/sessions/<pid>.json,
// listens on its inbox socket and, for each post, does what a real session
// does as far as peerctl can see (Claude Code 2.1.328 formats): appends the
// queue "enqueue" line with the text to its transcript
// <config>/projects/<slug>/<sessionId>.jsonl, then goes busy, takes the
// message up (a "dequeue" line and a peer "user" line) and goes idle again.
//
// Flags: -config DIR, -id UUID, -name NAME, -cwd DIR, -socket PATH,
// -confirm (default true; false: never write the enqueue line),
// -react (default true; false: never change status), -starting (the
// record as Claude Code first writes it, before the session settled: no
// status, no updatedAt, no statusUpdatedAt, until a "status" command).
//
// It prints "ready <pid>" on stdout once the record and socket exist. It
// reads commands on stdin, one a line: "status idle|busy", "name NEW",
// "waiting WHAT" (stopped on its user: "status":"waiting" with
// "waitingFor":WHAT, as Claude Code 2.1.332 writes it; a later status
// removes waitingFor, as Claude Code's record writer drops it).
// SIGTERM or SIGINT is a clean exit (the record is removed, as Claude Code
// does); SIGKILL leaves the record behind, as a crash does.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type session struct {
	mu         sync.Mutex
	config     string
	rec        map[string]any
	transcript string
}

func main() {
	config := flag.String("config", "", "Claude Code config dir")
	id := flag.String("id", "", "session id")
	name := flag.String("name", "fake", "session name")
	cwd := flag.String("cwd", "", "working directory (default <config>/cwd/<name>)")
	sock := flag.String("socket", "", "inbox socket path (default <config>/socks/<pid>.sock)")
	confirm := flag.Bool("confirm", true, "write the enqueue line for each post")
	react := flag.Bool("react", true, "go busy then idle after each post")
	starting := flag.Bool("starting", false, "write the record as a session that has not settled: no status yet")
	flag.Parse()
	if *config == "" || *id == "" {
		fmt.Fprintln(os.Stderr, "fakesession: -config and -id are required")
		os.Exit(2)
	}
	pid := os.Getpid()
	if *cwd == "" {
		*cwd = filepath.Join(*config, "cwd", *name)
	}
	if *sock == "" {
		*sock = filepath.Join(*config, "socks", strconv.Itoa(pid)+".sock")
	}
	for _, d := range []string{filepath.Join(*config, "sessions"), filepath.Dir(*sock), *cwd} {
		must(os.MkdirAll(d, 0o700))
	}
	ln, err := net.Listen("unix", *sock)
	must(err)
	now := time.Now().UnixMilli()
	s := &session{config: *config, transcript: filepath.Join(*config, "projects", slug(*cwd), *id+".jsonl"),
		rec: map[string]any{"pid": pid, "sessionId": *id, "cwd": *cwd, "startedAt": now, "procStart": procStart(pid),
			"version": "2.1.328", "peerProtocol": 1, "kind": "interactive", "entrypoint": "cli",
			"messagingSocketPath": *sock, "name": *name, "nameSource": "derived", "nameSince": now,
			"status": "idle", "updatedAt": now, "statusUpdatedAt": now}}
	if *starting {
		delete(s.rec, "status")
		delete(s.rec, "updatedAt")
		delete(s.rec, "statusUpdatedAt")
	}
	s.write()
	fmt.Printf("ready %d\n", pid)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		_ = os.Remove(s.path())
		_ = ln.Close()
		os.Exit(0)
	}()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmd, arg, _ := strings.Cut(sc.Text(), " ")
			switch cmd {
			case "status":
				s.set(map[string]any{"status": arg, "waitingFor": nil})
			case "waiting":
				s.set(map[string]any{"status": "waiting", "waitingFor": arg})
			case "name":
				s.set(map[string]any{"name": arg, "nameSource": "user", "nameSince": time.Now().UnixMilli()})
			}
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(io.LimitReader(c, 1<<20))
		_ = c.Close()
		var frame struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(b, &frame) != nil {
			continue
		}
		if *confirm {
			s.enqueue(frame.Message.Content)
		}
		if *react {
			go func() {
				time.Sleep(100 * time.Millisecond)
				s.set(map[string]any{"status": "busy"})
				if *confirm {
					s.takeUp(frame.Message.Content)
				}
				time.Sleep(300 * time.Millisecond)
				s.set(map[string]any{"status": "idle"})
			}()
		}
	}
}

func (s *session) path() string {
	return filepath.Join(s.config, "sessions", strconv.Itoa(os.Getpid())+".json")
}

func (s *session) set(fields map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	for k, v := range fields {
		if v == nil {
			delete(s.rec, k) // absent, as JSON.stringify leaves out undefined
			continue
		}
		s.rec[k] = v
	}
	s.rec["updatedAt"] = now
	if _, ok := fields["status"]; ok {
		s.rec["statusUpdatedAt"] = now
	}
	s.write()
}

// write replaces the record atomically (temp file and rename).
func (s *session) write() {
	b, err := json.Marshal(s.rec)
	must(err)
	tmp := s.path() + ".tmp"
	must(os.WriteFile(tmp, b, 0o600))
	must(os.Rename(tmp, s.path()))
}

func (s *session) enqueue(text string) {
	s.appendLines(map[string]any{"type": "queue-operation", "operation": "enqueue",
		"timestamp": stamp(), "sessionId": s.id(), "content": text})
}

// takeUp writes the dequeue line and the peer "user" line that begin the
// turn on text.
func (s *session) takeUp(text string) {
	s.appendLines(map[string]any{"type": "queue-operation", "operation": "dequeue", "timestamp": stamp(), "sessionId": s.id()},
		map[string]any{"type": "user", "timestamp": stamp(), "isMeta": true, "turnOrigin": "peer",
			"origin":  map[string]any{"kind": "peer", "from": "unknown"},
			"message": map[string]any{"role": "user", "content": "Another Claude session sent a message:\n" + text + "\n\nThis came from another Claude session."}})
}

func stamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

func (s *session) id() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec["sessionId"].(string)
}

func (s *session) appendLines(lines ...map[string]any) {
	var b []byte
	for _, l := range lines {
		line, err := json.Marshal(l)
		must(err)
		b = append(append(b, line...), '\n')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	must(os.MkdirAll(filepath.Dir(s.transcript), 0o700))
	f, err := os.OpenFile(s.transcript, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	must(err)
	defer f.Close()
	_, err = f.Write(b)
	must(err)
}

// slug is Claude Code's project folder name for a cwd: every byte that is
// not an ASCII letter or digit becomes '-'.
func slug(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// procStart is field 22 of /proc/<pid>/stat, the start time in clock ticks.
func procStart(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	must(err)
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[19]
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakesession:", err)
		os.Exit(1)
	}
}
