// Package qwenregistry reads Qwen Code's live-session registry,
// $QWEN_HOME/sessions/ ($QWEN_HOME defaults to ~/.qwen), into domain
// records, and checks a record's process the way Qwen Code's own readers
// do. It only ever reads: it never writes, renames or deletes (a record with
// a newer schemaVersion is skipped, never removed), and reads each record
// with harnessfile.Read (never following a symlink, never blocking on a
// FIFO, a regular file under MaxRecordBytes only).
//
// The format is Qwen Code's Cross-Session Protocol registry, schema v1, as
// published in its docs (users/features/cross-session-protocol) and
// observed in 0.23.0 and 0.24.4 (docs/QWEN-CODE-FACTS.md): one JSON object
// per file, named <pid>.json for a TUI or <pid>-<8 lowercase hex>.json when
// one process hosts several sessions (qwen --acp):
//
//	{"schemaVersion":1,"pid":4242,"procStart":"<boot_id>:<ticks>","pidNs":4026531836,
//	 "sessionId":"<uuid>","cwd":"/home/dev/proj","name":"proj-3b","startedAt":<epoch ms>,
//	 "qwenVersion":"0.24.4","kind":"tui","ipcPath":"/run/user/1000/qwen-socks/4242.sock",
//	 "ipcToken":"<64 hex>"}
//
// A running session replaces its record whole and never removes it
// (measured on 0.24.4, TestLiveQwenRecordIsReplacedWhole): each write (its
// registration, its ipcPath, a /clear's new sessionId) is a
// <pid>.json.<12 hex>.tmp file renamed over <pid>.json, so a read finds
// the record neither torn nor missing (the temporary files are not
// records: FilePID); it is unlinked only as the session exits.
//
// ipcToken is the inbox's ordinary-peer credential. It never enters a
// domain.Record: ReadToken reads it, for the inbox transport alone, as a
// Token whose every printed form is redacted.
package qwenregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/adapters/internal/harnessfile"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// HomeEnv names the variable that moves Qwen Code's home folder.
const HomeEnv = "QWEN_HOME"

// SessionsDirName is the registry folder's name inside the Qwen home.
const SessionsDirName = "sessions"

// SchemaVersion is the newest registry schema this package reads.
const SchemaVersion = 1

// MaxRecordBytes caps how much of one record file is read (64 KiB; real
// records are under 1 KiB). A larger file is reported malformed.
const MaxRecordBytes = 64 << 10

// Home decides Qwen Code's home folder: flag when non-empty, else
// $QWEN_HOME when set and non-empty, else ~/.qwen (as Qwen Code 0.24.4
// does). The result is absolute and clean.
func Home(flag string, getenv func(string) string) (string, error) {
	dir := flag
	if dir == "" {
		dir = getenv(HomeEnv)
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locate qwen home: %w", err)
		}
		dir = filepath.Join(home, ".qwen")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("locate qwen home %s: %w", dir, err)
	}
	return abs, nil
}

// SessionsDir is home/sessions.
func SessionsDir(home string) string { return filepath.Join(home, SessionsDirName) }

// Registry reads one Qwen Code registry folder. Build it with New.
type Registry struct{ dir string }

var (
	_ ports.HarnessRegistry   = (*Registry)(nil)
	_ ports.SelectiveRegistry = (*Registry)(nil)
)

// New returns a Registry for dir, the sessions folder itself.
func New(dir string) *Registry { return &Registry{dir: dir} }

// Dir returns the folder this registry reads.
func (r *Registry) Dir() string { return r.dir }

// Harness is Kind.
func (r *Registry) Harness() domain.Harness { return Kind }

// Read reads every record file. A missing folder is an empty snapshot with
// Missing set, found by one failed open; any other folder error is an error.
func (r *Registry) Read(ctx context.Context) (ports.Snapshot, error) {
	return r.ReadMatching(ctx, nil)
}

// ReadMatching is Read for the record files whose names keep returns (nil
// keeps every one); keep is asked once, with every record name, after the
// folder has been listed whole (see ports.SelectiveRegistry). A file left
// out is not opened.
func (r *Registry) ReadMatching(ctx context.Context, keep func(names []string) []string) (ports.Snapshot, error) {
	snap := ports.Snapshot{Dir: r.dir}
	entries, err := os.ReadDir(r.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		snap.Missing = true
		return snap, nil
	case err != nil:
		return snap, fmt.Errorf("read qwen registry %s: %w", r.dir, err)
	}
	var names []string
	for _, de := range entries {
		if _, ok := FilePID(de.Name()); ok {
			names = append(names, de.Name())
		}
	}
	if keep != nil && len(names) > 0 {
		names = keep(names)
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return snap, fmt.Errorf("read qwen registry %s: %w", r.dir, err)
		}
		snap.Records = append(snap.Records, r.readOne(name))
	}
	sort.Slice(snap.Records, func(i, j int) bool { return snap.Records[i].File < snap.Records[j].File })
	return snap, nil
}

// FilePID returns the pid a registry file name carries: name is
// <pid>.json or <pid>-<8 lowercase hex>.json with pid in canonical decimal
// (no sign, no leading zero). Any other name is not a record (Qwen Code's
// writers leave temp files beside them while renaming).
func FilePID(name string) (int, bool) {
	stem, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return 0, false
	}
	digits := stem
	if i := strings.IndexByte(stem, '-'); i >= 0 {
		digits = stem[:i]
		hex := stem[i+1:]
		if len(hex) != 8 || strings.Trim(hex, "0123456789abcdef") != "" {
			return 0, false
		}
	}
	if digits == "" || len(digits) > 10 || digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid > 1<<31-1 {
		return 0, false
	}
	return pid, true
}

func (r *Registry) readOne(name string) domain.Record {
	path := filepath.Join(r.dir, name)
	rec := domain.Record{Harness: Kind, File: name, Path: path}
	data, mod, err := harnessfile.Read(path, MaxRecordBytes)
	if err != nil {
		rec.ModTime = mod
		rec.Problem, rec.ProblemVerdict = err.Error(), domain.VerdictUnreadable
		if harnessfile.IsTooLarge(err) {
			rec.ProblemVerdict = domain.VerdictMalformed
		}
		return fileNamePID(rec)
	}
	rec.ModTime = mod
	parsed, _, err := parse(data)
	parsed.Harness, parsed.File, parsed.Path, parsed.ModTime = rec.Harness, name, path, mod
	if err != nil {
		parsed.Problem, parsed.ProblemVerdict = err.Error(), domain.VerdictMalformed
		var unsup errUnsupported
		if errors.As(err, &unsup) {
			parsed.ProblemVerdict = domain.VerdictUnsupported
		}
		return fileNamePID(parsed)
	}
	if pid, _ := FilePID(name); pid != parsed.PID {
		parsed.Problem, parsed.ProblemVerdict = fmt.Sprintf("file name says pid %d, record says pid %d (Qwen Code skips it)", pid, parsed.PID), domain.VerdictMisnamed
	}
	return parsed
}

// fileNamePID gives a record that could not be read or parsed, and so has
// no pid of its own, the pid its file name says (<pid>.json or
// <pid>-<8hex>.json), for list --all and show to print. Such a record is
// never probed for liveness, so the pid only names it.
func fileNamePID(rec domain.Record) domain.Record {
	if rec.PID == 0 {
		rec.PID, _ = FilePID(rec.File)
	}
	return rec
}

// errUnsupported marks a record of a newer schema.
type errUnsupported struct{ version int64 }

func (e errUnsupported) Error() string {
	return fmt.Sprintf("schemaVersion %d is newer than peerctl reads (%d): skipped, never deleted", e.version, SchemaVersion)
}

// raw is the v1 record as written; ipcToken is read only by ReadToken.
type raw struct {
	SchemaVersion *json.Number `json:"schemaVersion"`
	PID           *json.Number `json:"pid"`
	ProcStart     *string      `json:"procStart"`
	PIDNs         *json.Number `json:"pidNs"`
	SessionID     *string      `json:"sessionId"`
	Cwd           *string      `json:"cwd"`
	Name          *string      `json:"name"`
	StartedAt     *json.Number `json:"startedAt"`
	QwenVersion   *string      `json:"qwenVersion"`
	Kind          *string      `json:"kind"`
	IPCPath       *string      `json:"ipcPath"`
	IPCToken      *string      `json:"ipcToken"`
}

// parse decodes one record. Errors never quote ipcToken.
func parse(data []byte) (domain.Record, Token, error) {
	var rec domain.Record
	rec.Harness = Kind
	if len(data) > MaxRecordBytes {
		return rec, Token{}, fmt.Errorf("over the %d-byte cap", MaxRecordBytes)
	}
	var v raw
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return rec, Token{}, fmt.Errorf("not a JSON record: %s", redactJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return rec, Token{}, errors.New("trailing data after the JSON object")
	}
	if v.PID != nil {
		if pid, err := v.PID.Int64(); err == nil && pid > 0 && pid <= 1<<31-1 {
			rec.PID = int(pid)
		}
	}
	if v.SessionID != nil {
		rec.SessionID = *v.SessionID
	}
	if v.Name != nil {
		rec.Name = *v.Name
	}
	if v.SchemaVersion == nil {
		return rec, Token{}, errors.New("no schemaVersion")
	}
	sv, err := v.SchemaVersion.Int64()
	if err != nil {
		return rec, Token{}, fmt.Errorf("schemaVersion %s is not an integer", v.SchemaVersion.String())
	}
	if sv > SchemaVersion {
		return rec, Token{}, errUnsupported{sv}
	}
	if sv < 1 {
		return rec, Token{}, fmt.Errorf("schemaVersion %d is not a version Qwen Code writes", sv)
	}
	if rec.PID == 0 {
		return rec, Token{}, errors.New("no pid (a positive integer)")
	}
	if rec.SessionID == "" {
		return rec, Token{}, errors.New("no sessionId")
	}
	if v.ProcStart != nil {
		rec.ProcStart = *v.ProcStart
		rec.ProcStartEmpty = *v.ProcStart == ""
	}
	if v.PIDNs != nil {
		if ns, err := v.PIDNs.Int64(); err == nil && ns > 0 {
			rec.PIDDomain = strconv.FormatInt(ns, 10)
		} else {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("pidNs %s is not a positive integer", v.PIDNs.String()))
		}
	}
	if v.Cwd != nil {
		rec.Cwd = *v.Cwd
	}
	if v.StartedAt != nil {
		if ms, err := v.StartedAt.Int64(); err == nil {
			t, ok := domain.MillisToTime(ms)
			rec.StartedAt = t
			if !ok {
				rec.Warnings = append(rec.Warnings, fmt.Sprintf("startedAt %d does not look like epoch milliseconds", ms))
			}
		}
	}
	if v.QwenVersion != nil {
		rec.Version = *v.QwenVersion
	}
	rec.Kind = "tui" // absent before 0.24
	if v.Kind != nil && *v.Kind != "" {
		rec.Kind = *v.Kind
	}
	if v.IPCPath != nil {
		rec.SocketPath = *v.IPCPath
	}
	var tok Token
	if v.IPCToken != nil {
		tok = Token{value: *v.IPCToken}
	}
	return rec, tok, nil
}

// redactJSONError keeps a decoder error's position but never its quoted
// input, which could be part of ipcToken.
func redactJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q is a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return "invalid JSON"
}

// Token is a record's ipcToken. Its String, GoString and Format print
// "[redacted]", so a Token put in a log line or an error shows nothing;
// Reveal returns the value for the auth line alone.
type Token struct{ value string }

// Reveal returns the token's value ("" when the record has none).
func (t Token) Reveal() string { return t.value }

// IsZero reports whether the record had no ipcToken (a build that needs
// no auth line).
func (t Token) IsZero() bool { return t.value == "" }

// String returns "[redacted]" (or "[none]").
func (t Token) String() string {
	if t.value == "" {
		return "[none]"
	}
	return "[redacted]"
}

// GoString is String, for %#v.
func (t Token) GoString() string { return t.String() }

// Format prints String for every verb.
func (t Token) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, t.String()) }

// MarshalJSON writes String, never the value.
func (t Token) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// ReadToken re-reads the record file at path (never following a symlink)
// and returns its ipcToken, after checking that the file still describes
// the session expected: same pid, session id and ipcPath. A mismatch is an
// error saying which field moved (Qwen Code rewrites the record on /clear
// and /resume); errors never contain the token.
func ReadToken(path string, pid int, sessionID, ipcPath string) (Token, error) {
	data, _, err := harnessfile.Read(path, MaxRecordBytes)
	if err != nil {
		return Token{}, fmt.Errorf("re-read record %s: %w", path, err)
	}
	rec, tok, err := parse(data)
	if err != nil {
		return Token{}, fmt.Errorf("re-read record %s: %w", path, err)
	}
	switch {
	case rec.PID != pid:
		return Token{}, fmt.Errorf("record %s now has pid %d, not %d", path, rec.PID, pid)
	case rec.SessionID != sessionID:
		return Token{}, fmt.Errorf("record %s now has session %s, not %s (a /clear or /resume); list again", path, rec.SessionID, sessionID)
	case rec.SocketPath != ipcPath:
		return Token{}, fmt.Errorf("record %s now publishes ipcPath %q, not %q", path, rec.SocketPath, ipcPath)
	}
	return tok, nil
}
