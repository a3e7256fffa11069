package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/peerctl/peerctl/ports/jsonexact"
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
	// Notes are the node's lines for stderr beside the report (not its
	// problems, which Problems holds): whole lines, as a far side printed
	// them; escaped when printed.
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

// maxDoctorDepth bounds how deeply a far side's document may nest (this
// build's nests 4 deep): a deeper one would be printed here many times its
// size, indented.
const maxDoctorDepth = 16

// harnessKey is how a harness plug-in's key in the document is spelled.
// Compiled on first use, not in the package initialisation every command runs.
var harnessKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`) })

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
		k, err := json.Marshal(h.Key)
		if err != nil {
			return nil, err
		}
		b.WriteString(",")
		b.Write(k)
		b.WriteString(":")
		b.Write(v)
	}
	_, rest, _ := bytes.Cut(body, []byte(","))
	b.WriteString(",")
	b.Write(rest)
	return b.Bytes(), nil
}

// ReadDoctor reads a far side's `doctor --json` document: one object
// whose own keys are read with exact keys (jsonexact.Exact), each of them
// there, its lists never null; every other key a harness's object (kept
// as written, in its order), named as a harness plug-in's key is
// (harnessKey: "claude", "opencode"); at most maxDoctorDepth deep.
func ReadDoctor(b []byte) (Doctor, error) {
	if !json.Valid(b) {
		return Doctor{}, errors.New("the doctor's output is not one JSON object")
	}
	if d := jsonexact.Depth(b); d > maxDoctorDepth {
		return Doctor{}, fmt.Errorf("the doctor's output nests %d deep (at most %d)", d, maxDoctorDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Doctor{}, errors.New("the doctor's output is not one JSON object")
	}
	own, missing := map[string]bool{}, map[string]bool{}
	for _, k := range []string{"ok", "registry", "socketDirs", "reach", "session", "mcp", "problems", "warnings", "rows", "summary"} {
		own[k], missing[k] = true, true
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
			if !harnessKey().MatchString(key) {
				return Doctor{}, fmt.Errorf("the doctor's key %s is no harness's", Safe(Clip(strconv.Quote(key), 60)))
			}
			for _, h := range harnesses {
				if h.Key == key {
					return Doctor{}, fmt.Errorf("the doctor's %q is there twice", Clip(key, 40))
				}
			}
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				return Doctor{}, fmt.Errorf("the doctor's %q is not an object", Clip(key, 40))
			}
			if dup, ok := jsonexact.Duplicate(v); ok {
				return Doctor{}, fmt.Errorf("the doctor's %q holds key %s twice", key, Safe(Clip(strconv.Quote(dup), 60)))
			}
			harnesses = append(harnesses, DoctorHarness{Key: key, JSON: v})
			continue
		}
		delete(missing, key) // a second one is refused by Exact below
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
	if len(missing) > 0 {
		return Doctor{}, fmt.Errorf("the doctor's output has no %s", strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
	var d doctorPlain
	if err := jsonexact.Exact(plain.Bytes(), &d); err != nil {
		return Doctor{}, err
	}
	if d.Problems == nil || d.Warnings == nil || d.Rows == nil {
		return Doctor{}, errors.New("the doctor's problems, warnings or rows are null")
	}
	out := Doctor(d)
	out.Harnesses = harnesses
	return out, nil
}
