package fsregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

// wireRecord mirrors Claude Code's <pid>.json (2.1.328 field names). Fields
// whose JSON type varies between versions are kept raw. It is decoded with
// jsonexact, so keys are matched as Claude Code matches them: exactly.
type wireRecord struct {
	PID       json.RawMessage `json:"pid"`
	SessionID json.RawMessage `json:"sessionId"`
	Cwd       json.RawMessage `json:"cwd"`
	StartedAt json.RawMessage `json:"startedAt"`
	ProcStart json.RawMessage `json:"procStart"`
	// ProcStartFt: 2.1.328 reads it before procStart when it is a string.
	ProcStartFt  json.RawMessage `json:"procStartFt"`
	ParkedJobID  json.RawMessage `json:"parkedJobId"`
	Version      json.RawMessage `json:"version"`
	PeerProtocol json.RawMessage `json:"peerProtocol"`
	Kind         json.RawMessage `json:"kind"`
	Entrypoint   json.RawMessage `json:"entrypoint"`
	PIDDomain    json.RawMessage `json:"pidDomain"`
	Tmux         json.RawMessage `json:"tmux"`
	SocketPath   json.RawMessage `json:"messagingSocketPath"`
	Name         json.RawMessage `json:"name"`
	NameSource   json.RawMessage `json:"nameSource"`
	NameSince    json.RawMessage `json:"nameSince"`
	Status       json.RawMessage `json:"status"`
	// WaitingFor: beside "status":"waiting", what the session waits on
	// (Claude Code 2.1.224 to 2.1.332 write it so).
	WaitingFor json.RawMessage `json:"waitingFor"`
	UpdatedAt  json.RawMessage `json:"updatedAt"`
	// StatusUpdatedAt: Claude Code 2.1.328, epoch milliseconds.
	StatusUpdatedAt json.RawMessage `json:"statusUpdatedAt"`
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Parse decodes one record file, reading keys as Claude Code (JavaScript's
// JSON.parse) does: exactly ("Name" is not "name"), the last of duplicate
// keys winning; ill-formed UTF-8 becomes U+FFFD as Claude Code's decoder
// makes it (see replaceInvalidUTF8). It tolerates a UTF-8 BOM, unknown fields,
// null fields, procStart (and pid) as a string or a number, numbers by
// value (7.0 is 7), and text fields and timestamps of the wrong JSON type
// (ignored, with a warning); it rejects anything but exactly one JSON
// object (trailing garbage included), a missing or non-positive pid, and
// pid, procStart or peerProtocol of the wrong type.
// On an error the returned record still holds the text fields read
// (empty when the file is not one JSON object). File, Path and ModTime
// are left for the caller.
func Parse(data []byte) (domain.Record, error) {
	data = replaceInvalidUTF8(bytes.TrimPrefix(data, utf8BOM))
	var w wireRecord
	if err := jsonexact.Unmarshal(data, &w); err != nil {
		// Word the problem: a syntax error or trailing data as the
		// decoder finds it; else the value is not an object.
		dec := json.NewDecoder(bytes.NewReader(data))
		var v json.RawMessage
		if derr := dec.Decode(&v); derr != nil {
			return domain.Record{}, fmt.Errorf("not a JSON record: %w", derr)
		}
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			return domain.Record{}, errors.New("trailing data after the JSON object")
		}
		return domain.Record{}, fmt.Errorf("not a JSON record: %w", err)
	}
	// Text fields first: a record whose pid or procStart is unusable still
	// says its name and socket (Claude Code may list it by its file name).
	var rec domain.Record
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"sessionId", w.SessionID, &rec.SessionID},
		{"cwd", w.Cwd, &rec.Cwd},
		{"version", w.Version, &rec.Version},
		{"kind", w.Kind, &rec.Kind},
		{"entrypoint", w.Entrypoint, &rec.Entrypoint},
		{"pidDomain", w.PIDDomain, &rec.PIDDomain},
		{"tmux", w.Tmux, &rec.Tmux},
		{"messagingSocketPath", w.SocketPath, &rec.SocketPath},
		{"name", w.Name, &rec.Name},
		{"nameSource", w.NameSource, &rec.NameSource},
	} {
		*f.dst = strField(f.name, f.raw, &rec.Warnings)
	}
	rec.Status = domain.ParseStatus(strField("status", w.Status, &rec.Warnings))
	if rec.Status == domain.StatusWaiting {
		// Claude Code lists it with "waiting" alone, as peerctl does.
		rec.WaitingFor = strField("waitingFor", w.WaitingFor, &rec.Warnings)
	}
	pid, err := intField("pid", w.PID)
	if err != nil {
		return rec, err
	}
	if pid <= 0 || pid > 1<<31-1 {
		if len(w.PID) == 0 || string(w.PID) == "null" {
			return rec, errors.New("required field pid is missing")
		}
		return rec, fmt.Errorf("pid %s is not a positive process id", w.PID)
	}
	rec.PID = int(pid)
	if rec.ProcStart, err = procStartField(w.ProcStart); err != nil {
		return rec, err
	}
	rec.ProcStartNumber = rec.ProcStart != "" && w.ProcStart[0] != '"'
	rec.ProcStartEmpty = string(w.ProcStart) == `""`
	// Claude Code 2.1.328 checks procStartFt instead when it is a string.
	var isStr bool
	rec.ProcStartFt, isStr = stringOnly(w.ProcStartFt)
	rec.ProcStartFtEmpty = isStr && rec.ProcStartFt == ""
	rec.ParkedJobID, isStr = stringOnly(w.ParkedJobID)
	rec.ParkedEmpty = isStr && rec.ParkedJobID == ""
	proto, err := intField("peerProtocol", w.PeerProtocol)
	if err != nil {
		return rec, err
	}
	rec.PeerProtocol = int(proto)
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *time.Time
	}{
		{"startedAt", w.StartedAt, &rec.StartedAt},
		{"nameSince", w.NameSince, &rec.NameSince},
		{"updatedAt", w.UpdatedAt, &rec.UpdatedAt},
		{"statusUpdatedAt", w.StatusUpdatedAt, &rec.StatusUpdatedAt},
	} {
		// A timestamp does not decide liveness, and Claude Code lists a
		// record whatever its timestamps hold: a bad one is a warning.
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		v, err := numberField(f.name, f.raw)
		if err != nil {
			rec.Warnings = append(rec.Warnings, err.Error()+"; ignored")
			continue
		}
		if v == 0 {
			continue
		}
		var t time.Time
		ok := math.Abs(v) < 1<<62 // also false for ±Inf
		if ok {
			t, ok = domain.MillisToTime(int64(math.Trunc(v))) // a fraction of a millisecond is dropped
		}
		if !ok {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s %s is not plausible epoch milliseconds (seconds? microseconds?); ignored", f.name, shorten(f.raw)))
			continue
		}
		*f.dst = t
	}
	return rec, nil
}

// intField decodes an optional integer field; absent or null is 0. A
// number is read by value, as JavaScript reads it (7.0 and 0.7e1 are 7); a
// string holding a number is read as that number ("0576" is 576).
func intField(name string, raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if n, ok := fastNumber(raw); ok {
		if v, err := strconv.ParseInt(n, 10, 64); err == nil {
			return v, nil
		}
	}
	v, err := numberField(name, raw)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, fmt.Errorf("field %s is %s, not a whole number", name, shorten(raw))
	}
	return int64(v), nil
}

// numberField reads a JSON number, or a string holding a decimal number,
// as a float64 (±Inf beyond its range).
func numberField(name string, raw json.RawMessage) (float64, error) {
	text, ok := fastNumber(raw)
	if !ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, fmt.Errorf("field %s is %s, not a number", name, shorten(raw))
		}
		text = strings.TrimSpace(s)
		if !decimal(text) {
			return 0, fmt.Errorf("field %s is %s, not a number", name, shorten(raw))
		}
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("field %s is %s, not a number", name, shorten(raw))
	}
	return v, nil
}

// decimal reports whether s is a decimal number: digits with an optional
// sign, fraction and exponent (not hex, not Inf or NaN, which
// strconv.ParseFloat also reads).
func decimal(s string) bool {
	digits := false
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c == '+' || c == '-':
			if i > 0 && s[i-1] != 'e' && s[i-1] != 'E' {
				return false
			}
		case c == '.' || c == 'e' || c == 'E':
		default:
			return false
		}
	}
	return digits
}

// procStartField accepts a string or a number and returns its text, as Claude
// Code compares it (2.1.328 writes a string of digits): a number becomes
// the text JavaScript's String(n) gives for it (1497606.0 is "1497606").
func procStartField(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if s, ok := fastString(raw); ok {
		return s, nil
	}
	if n, ok := fastNumber(raw); ok {
		if _, err := strconv.ParseUint(n, 10, 64); err == nil {
			return n, nil
		}
		v, err := strconv.ParseFloat(n, 64)
		if err == nil && v == math.Trunc(v) && math.Abs(v) < 1e21 {
			if v == 0 {
				v = 0 // -0 is "0" in JavaScript too
			}
			return strconv.FormatFloat(v, 'f', -1, 64), nil
		}
		return n, nil // no process start matches it
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	return "", fmt.Errorf("field procStart is %s, not a string or number", shorten(raw))
}

// stringOnly returns raw's text and true when raw is a JSON string; a
// value of another type is ignored silently, as Claude Code 2.1.328
// ignores it.
func stringOnly(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// strField decodes an optional string field. Absent or null is "". A value
// of another JSON type is treated as absent and noted in warnings: Claude
// Code 2.1.328's own listing keeps such a record and drops the field
// (measured), and a record is too valuable to lose over one odd field.
func strField(name string, raw json.RawMessage, warnings *[]string) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if s, ok := fastString(raw); ok {
		return s
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		*warnings = append(*warnings, fmt.Sprintf("field %s is %s, not a string; ignored", name, shorten(raw)))
		return ""
	}
	return s
}

func shorten(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
