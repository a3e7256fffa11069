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
		`{"pid":1,"name":"ü\u0041","cwd":"/é\/x","procStart":"日\t"}`, `{"pid":1,"name":"a","NAME":"b"}`, `{"pid":1,"pid":2,"PID":3}`,
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
		// Differential: every text field is what a plain decode of the same
		// bytes into a map gives (exact keys, the last duplicate winning, as
		// Claude Code's JSON.parse reads them); the parser's fast paths must
		// not differ.
		// Members kept raw: a huge number in an unknown field is fine.
		var ref map[string]json.RawMessage
		// Ill-formed UTF-8 is replaced first, as Claude Code's decoder does
		// (TestReplaceInvalidUTF8 checks how).
		require.NoError(t, json.Unmarshal(fsregistry.ReplaceInvalidUTF8(bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})), &ref), "Parse accepted what json.Unmarshal refuses")
		for key, got := range map[string]string{
			"sessionId": rec.SessionID, "cwd": rec.Cwd, "version": rec.Version, "kind": rec.Kind,
			"pidDomain": rec.PIDDomain, "tmux": rec.Tmux, "messagingSocketPath": rec.SocketPath,
			"name": rec.Name, "nameSource": rec.NameSource, "procStart": rec.ProcStart,
		} {
			var want string
			if raw, ok := ref[key]; ok && json.Unmarshal(raw, &want) == nil {
				assert.Equal(t, want, got, "field %s", key)
			} else if key != "procStart" {
				assert.Empty(t, got, "field %s is not a string in the file", key)
			}
		}
	})
}
