package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/peerctl/peerctl/internal/jsonexact"
)

// Doctor is `doctor --json`'s document (docs/OUTPUT.md): what this
// peerctl prints, and what a far side's prints for doctor --host (read
// back by ReadDoctor). Each harness plug-in adds its own object under its
// key ("claude", "qwen"), written right after "ok" (Harnesses). Rows and
// Summary are the report as doctor prints it for people (output protocol
// 4), so that one printer prints a report made here or there.
type Doctor struct {
	OK         bool           `json:"ok"`
	Registry   DoctorRegistry `json:"registry"`
	SocketDirs []DoctorSocket `json:"socketDirs"`
	Reach      DoctorReach    `json:"reach"`
	Session    DoctorSession  `json:"session"`
	MCP        DoctorMCP      `json:"mcp"`
	Problems   []string       `json:"problems"`
	Warnings   []string       `json:"warnings"`
	// Rows are the table's rows in their order; Summary its last line
	// ("peerctl is usable here.").
	Rows    []DoctorRow `json:"rows"`
	Summary string      `json:"summary"`
	// Harnesses are the harness plug-ins' objects, in their order.
	Harnesses []DoctorHarness `json:"-"`
	// Notes are the node's lines for people beside the report (not its
	// problems, which Problems holds), without "peerctl: ", not escaped.
	Notes []string `json:"-"`
}

// DoctorHarness is one harness plug-in's object in the document: JSON
// under Key (ports.DoctorRow; a far side's as it printed it).
type DoctorHarness struct {
	Key  string
	JSON any
}

// DoctorRow is one row of doctor's table: the check ("registry"), its
// health word (ok, warn, fail, skip, info) and what it found.
type DoctorRow struct {
	Check  string `json:"check"`
	Health string `json:"health"`
	Text   string `json:"text"`
}

// DoctorMCP is where `peerctl mcp`'s server is: linked into this
// program, or the peerctl-mcp it runs.
type DoctorMCP struct {
	Health string `json:"health"`
	Path   string `json:"path"`
	Note   string `json:"note"`
}

// DoctorRegistry is Claude Code's registry folder and its records by
// verdict.
type DoctorRegistry struct {
	Health  string         `json:"health"`
	Dir     string         `json:"dir"`
	Missing bool           `json:"missing"`
	Error   string         `json:"error,omitempty"`
	Counts  map[string]int `json:"counts"`
}

// DoctorSocket is one folder holding live sessions' sockets.
type DoctorSocket struct {
	Health   string `json:"health"`
	Dir      string `json:"dir"`
	Mode     string `json:"mode"` // octal, e.g. "0700"; "" when not stat-able
	UID      int    `json:"uid"`  // -1 when unknown
	Ours     bool   `json:"ours"`
	Sessions int    `json:"sessions"`
	Problem  string `json:"problem,omitempty"`
}

// DoctorReach is whether the live sessions' sockets can be connected to
// (there, a socket, a path short enough); nothing is connected to.
type DoctorReach struct {
	Health      string              `json:"health"` // ok, warn (some unreachable), skip (none publishes a socket)
	Reachable   int                 `json:"reachable"`
	Unreachable []DoctorUnreachable `json:"unreachable"`
}

// DoctorUnreachable is a live session whose socket cannot be reached.
type DoctorUnreachable struct {
	SessionID  string `json:"sessionId"`
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	SocketPath string `json:"socketPath"`
	Reason     string `json:"reason"`
}

// DoctorSession is the session this shell runs in, if any.
type DoctorSession struct {
	Inside    bool     `json:"inside"`
	EnvVars   []string `json:"envVars"`
	Via       string   `json:"via"`
	SessionID string   `json:"sessionId,omitempty"`
	Name      string   `json:"name,omitempty"`
	PID       int      `json:"pid,omitempty"`
	Endpoint  string   `json:"endpoint,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// doctorPlain is Doctor without its harness objects (and its methods).
type doctorPlain Doctor

// MarshalJSON writes the object with every harness's object after "ok".
func (d Doctor) MarshalJSON() ([]byte, error) {
	body, err := json.Marshal(doctorPlain(d))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"ok":` + strconv.FormatBool(d.OK))
	for _, h := range d.Harnesses {
		v, err := json.Marshal(h.JSON)
		if err != nil {
			return nil, err
		}
		b.WriteString("," + strconv.Quote(h.Key) + ":")
		b.Write(v)
	}
	_, rest, _ := bytes.Cut(body, []byte(","))
	b.WriteString(",")
	b.Write(rest)
	return b.Bytes(), nil
}

// ReadDoctor reads a far side's `doctor --json` document: one object
// whose own keys are read with exact keys (jsonexact.Exact), every other
// key a harness's object (kept as written, in its order).
func ReadDoctor(b []byte) (Doctor, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Doctor{}, errors.New("the doctor's output is not one JSON object")
	}
	own := map[string]bool{}
	for _, k := range []string{"ok", "registry", "socketDirs", "reach", "session", "mcp", "problems", "warnings", "rows", "summary"} {
		own[k] = true
	}
	var plain bytes.Buffer
	plain.WriteByte('{')
	var harnesses []DoctorHarness
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Doctor{}, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Doctor{}, err
		}
		if !own[key] {
			for _, h := range harnesses {
				if h.Key == key {
					return Doctor{}, fmt.Errorf("the doctor's %q is there twice", Clip(key, 40))
				}
			}
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				return Doctor{}, fmt.Errorf("the doctor's %q is not an object", Clip(key, 40))
			}
			harnesses = append(harnesses, DoctorHarness{Key: key, JSON: v})
			continue
		}
		if plain.Len() > 1 {
			plain.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		plain.Write(k)
		plain.WriteByte(':')
		plain.Write(v)
	}
	if _, err := dec.Token(); err != nil {
		return Doctor{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Doctor{}, errors.New("the doctor's output is more than one JSON object")
	}
	plain.WriteByte('}')
	var d doctorPlain
	if err := jsonexact.Exact(plain.Bytes(), &d); err != nil {
		return Doctor{}, err
	}
	out := Doctor(d)
	out.Harnesses = harnesses
	return out, nil
}
