package fsregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// wireRecord mirrors Claude Code's <pid>.json (2.1.328 field names). Fields
// whose JSON type varies between versions are kept raw.
type wireRecord struct {
	PID          json.RawMessage `json:"pid"`
	SessionID    *string         `json:"sessionId"`
	Cwd          *string         `json:"cwd"`
	StartedAt    json.RawMessage `json:"startedAt"`
	ProcStart    json.RawMessage `json:"procStart"`
	Version      *string         `json:"version"`
	PeerProtocol json.RawMessage `json:"peerProtocol"`
	Kind         *string         `json:"kind"`
	Entrypoint   *string         `json:"entrypoint"`
	PIDDomain    *string         `json:"pidDomain"`
	Tmux         *string         `json:"tmux"`
	SocketPath   *string         `json:"messagingSocketPath"`
	Name         *string         `json:"name"`
	NameSource   *string         `json:"nameSource"`
	NameSince    json.RawMessage `json:"nameSince"`
	Status       *string         `json:"status"`
	UpdatedAt    json.RawMessage `json:"updatedAt"`
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Parse decodes one record file. It tolerates a UTF-8 BOM, unknown fields,
// null fields and procStart as a string or a number; it rejects anything but
// exactly one JSON object (trailing garbage included), a missing or
// non-positive pid, and fields of the wrong JSON type. File, Path and
// ModTime are left for the caller.
func Parse(data []byte) (domain.Record, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var w wireRecord
	if err := dec.Decode(&w); err != nil {
		return domain.Record{}, fmt.Errorf("not a JSON record: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return domain.Record{}, errors.New("trailing data after the JSON object")
	}
	var rec domain.Record
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
	rec.SessionID = str(w.SessionID)
	rec.Cwd = str(w.Cwd)
	rec.Version = str(w.Version)
	rec.Kind = str(w.Kind)
	rec.Entrypoint = str(w.Entrypoint)
	rec.PIDDomain = str(w.PIDDomain)
	rec.Tmux = str(w.Tmux)
	rec.SocketPath = str(w.SocketPath)
	rec.Name = str(w.Name)
	rec.NameSource = str(w.NameSource)
	rec.Status = domain.ParseStatus(str(w.Status))
	if rec.ProcStart, err = procStartField(w.ProcStart); err != nil {
		return rec, err
	}
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
	} {
		ms, err := intField(f.name, f.raw)
		if err != nil {
			return rec, err
		}
		if ms == 0 {
			continue
		}
		t, ok := domain.MillisToTime(ms)
		if !ok {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s %d is not epoch milliseconds (seconds?); ignored", f.name, ms))
			continue
		}
		*f.dst = t
	}
	return rec, nil
}

// intField decodes an optional integer field; absent or null is 0.
func intField(name string, raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("field %s is %s, not a number", name, shorten(raw))
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s is %s, not a whole number", name, shorten(raw))
	}
	return v, nil
}

// procStartField accepts a string or a number and returns its text, as Claude
// Code compares it (2.1.328 writes a string of digits).
func procStartField(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("field procStart is %s, not a string or number", shorten(raw))
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func shorten(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
