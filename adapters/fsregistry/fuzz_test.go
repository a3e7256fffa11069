package fsregistry_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
)

// FuzzParse: Parse never panics; an accepted record has a positive pid, and
// its timestamps are either unset or plausible epoch-millisecond dates (a
// value in seconds is a warning, never a date in year 58000).
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "records", "*.json"))
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
		f.Add(append([]byte{0xEF, 0xBB, 0xBF}, b...))
		f.Add(b[:len(b)/2])
		f.Add(append(b, " {}"...))
	}
	for _, s := range []string{
		`{"pid":1}`, `{"pid":"1"}`, `{"pid":-1}`, `{"pid":1.5}`, `{"pid":1e3}`,
		`{"pid":2147483648}`, `{"pid":1,"procStart":123}`, `{"pid":1,"procStart":{}}`,
		`{"pid":1,"startedAt":1796027521}`, `{"pid":1,"startedAt":1796027521308000}`, `{"pid":1,"startedAt":99999999999999999999}`,
		`{"pid":1,"name":"\u0000\u001b[2J"}`, `null`, `[]`, "{\"pid\":1,\"cwd\":\"\xff\"}",
		`{"pid":1,"name":"ü\u0041","cwd":"/é\/x","procStart":"日\t"}`, `{"pid":1,"NAME":"a","name":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := fsregistry.Parse(data)
		if err != nil {
			return
		}
		assert.Positive(t, rec.PID, "accepted a record without a positive pid")
		for _, tm := range []struct {
			name string
			y    int
			zero bool
		}{
			{"startedAt", rec.StartedAt.Year(), rec.StartedAt.IsZero()},
			{"nameSince", rec.NameSince.Year(), rec.NameSince.IsZero()},
			{"updatedAt", rec.UpdatedAt.Year(), rec.UpdatedAt.IsZero()},
		} {
			if !tm.zero {
				assert.True(t, tm.y >= 1973 && tm.y <= 9999, "%s year %d", tm.name, tm.y)
			}
		}
		for _, s := range []string{rec.Name, rec.SessionID, rec.Cwd, rec.SocketPath} {
			assert.True(t, utf8.ValidString(s), "JSON strings decode to valid UTF-8")
		}
		// Differential: every text field is what a plain json.Unmarshal of
		// the same bytes gives (the parser's fast paths must not differ).
		var ref struct {
			SessionID  any `json:"sessionId"`
			Cwd        any `json:"cwd"`
			Version    any `json:"version"`
			Kind       any `json:"kind"`
			PIDDomain  any `json:"pidDomain"`
			Tmux       any `json:"tmux"`
			SocketPath any `json:"messagingSocketPath"`
			Name       any `json:"name"`
			NameSource any `json:"nameSource"`
			ProcStart  any `json:"procStart"`
		}
		require.NoError(t, json.Unmarshal(bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF}), &ref), "Parse accepted what json.Unmarshal refuses")
		for _, c := range []struct {
			name string
			want any
			got  string
		}{
			{"sessionId", ref.SessionID, rec.SessionID}, {"cwd", ref.Cwd, rec.Cwd}, {"version", ref.Version, rec.Version},
			{"kind", ref.Kind, rec.Kind}, {"pidDomain", ref.PIDDomain, rec.PIDDomain}, {"tmux", ref.Tmux, rec.Tmux},
			{"messagingSocketPath", ref.SocketPath, rec.SocketPath}, {"name", ref.Name, rec.Name},
			{"nameSource", ref.NameSource, rec.NameSource}, {"procStart", ref.ProcStart, rec.ProcStart},
		} {
			if want, ok := c.want.(string); ok {
				assert.Equal(t, want, c.got, "field %s", c.name)
			}
		}
	})
}
