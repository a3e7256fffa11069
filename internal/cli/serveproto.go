package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// serveProtocol is the version of the line protocol between peerctl and
// its service (docs/SERVE.md): a client writes one request line and reads
// one answer line per connection.
const serveProtocol = 1

// maxServeLine bounds one line of the service protocol: a 64 KiB message
// with its JSON escapes, the environment and the arguments.
const maxServeLine = 4 << 20

// serveRequest is the one line a client writes.
type serveRequest struct {
	// V is serveProtocol.
	V int `json:"v"`
	// Op is "ping" (is the service up, and how is it: serve status),
	// "stop" (end cleanly: the answer is its status, then the connection
	// stays open until the service has ended) or "run" (run Argv as this
	// user's peerctl would, in the service).
	Op string `json:"op"`
	// Argv is the command line after the program name (send ..., outbox
	// cancel|retry ...); Env the client's environment; Stdin what the
	// command reads on stdin (send's text, when it came on stdin).
	Argv  []string `json:"argv,omitempty"`
	Env   []string `json:"env,omitempty"`
	Stdin string   `json:"stdin,omitempty"`
}

// serveAnswer is the one line the service answers with.
type serveAnswer struct {
	// Stdout, Stderr and Code are the run's output and exit code.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Code   int    `json:"code"`
	// PID is the service's (ping); Outbox its database file, and
	// OutboxError why it cannot be used ("" when it can).
	PID         int    `json:"pid,omitempty"`
	Outbox      string `json:"outbox,omitempty"`
	OutboxError string `json:"outboxError,omitempty"`
	// Status is how the service stands (ping, and stop before it stops).
	Status *serveStatus `json:"status,omitempty"`
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line of at most maxServeLine bytes into v.
func readLine(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, more, err := r.ReadLine()
		if err != nil {
			return err
		}
		line = append(line, chunk...)
		if len(line) > maxServeLine {
			return fmt.Errorf("a line over %d bytes", maxServeLine)
		}
		if !more {
			break
		}
	}
	return json.Unmarshal(line, v)
}
