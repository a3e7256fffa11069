package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peerUser is the "user" line Claude Code 2.1.328 writes when it takes a
// peer message up (see domain.Enqueued); content may be overridden.
func peerUser(text string, at time.Time, kind string, content any) string {
	if content == nil {
		content = "Another Claude session sent a message:\n" + text + "\n\nThis came from another Claude session."
	}
	b, _ := json.Marshal(map[string]any{"type": "user", "timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"),
		"isMeta": true, "turnOrigin": "peer", "origin": map[string]any{"kind": kind, "from": "unknown"},
		"message": map[string]any{"role": "user", "content": content}})
	return string(b) + "\n"
}

func TestTakenUp(t *testing.T) {
	const text = "run the tests"
	base := time.Date(2026, 11, 30, 9, 45, 55, 117e6, time.UTC)
	cases := []struct {
		name string
		body string
		want time.Time // zero: not taken up
	}{
		{"peer user line after the enqueue", enqueueLine(text, base) + peerUser(text, base.Add(98*time.Millisecond), "peer", nil), base.Add(98 * time.Millisecond)},
		{"content as text blocks", enqueueLine(text, base) + peerUser(text, base.Add(time.Second), "peer",
			[]map[string]string{{"type": "text", "text": "Another Claude session sent a message:\n" + text + "\n\n…"}}), base.Add(time.Second)},
		{"only queued (the session is busy with earlier work)", enqueueLine(text, base) + otherLine(base.Add(time.Second), 10), time.Time{}},
		{"a user line typed by the user", enqueueLine(text, base) + peerUser(text, base.Add(time.Second), "human", nil), time.Time{}},
		{"another peer message containing the words", enqueueLine(text, base) + peerUser("please "+text+" now", base.Add(time.Second), "peer", nil), time.Time{}},
		{"an earlier message with the same text", peerUser(text, base.Add(-time.Second), "peer", nil) + enqueueLine(text, base), time.Time{}},
		{"line still being written", enqueueLine(text, base) + strings.TrimSuffix(peerUser(text, base.Add(time.Second), "peer", nil), "\n"), time.Time{}},
		{"not JSON", enqueueLine(text, base) + "{\"type\":\"user\",\"origin\":{\"kind\":\"peer\"},\"timestamp\":\n", time.Time{}},
	}
	for _, tc := range cases {
		for _, chunk := range []int{7, ChunkBytes} {
			t.Run(tc.name+"/chunk"+strconv(chunk), func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "p", sid+".jsonl")
				appendFile(t, p, tc.body)
				at, next, err := New(nil, WithChunk(chunk)).TakenUp(context.Background(), p, text, 0, base)
				require.NoError(t, err)
				assert.Equal(t, tc.want, at)
				if tc.want.IsZero() {
					assert.Equal(t, int64(strings.LastIndexByte(tc.body, '\n')+1), next, "resumes after the last complete line")
				}
			})
		}
	}
}

// The measured transcript of a real post (Claude Code 2.1.328): the user
// line is the take-up.
func TestTakenUpMeasured(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "claude", "transcript", "peer-post-2.1.328.jsonl"))
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), sid+".jsonl")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	since := time.Date(2026, 11, 30, 9, 1, 14, 311e6, time.UTC)
	at, _, err := New(nil).TakenUp(context.Background(), p, "slug probe ünï cödé", 0, since)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 30, 9, 1, 14, 506e6, time.UTC), at)
}

// Looking again resumes where the last look stopped; a missing file is
// not an error.
func TestTakenUpResumes(t *testing.T) {
	const text = "go"
	base := time.Now().UTC().Truncate(time.Millisecond)
	p := filepath.Join(t.TempDir(), "p", sid+".jsonl")
	r := New(nil)
	at, next, err := r.TakenUp(context.Background(), p, text, 0, base)
	require.NoError(t, err)
	assert.True(t, at.IsZero())
	assert.Zero(t, next)

	appendFile(t, p, enqueueLine(text, base)+otherLine(base, 100))
	at, next, err = r.TakenUp(context.Background(), p, text, 0, base)
	require.NoError(t, err)
	require.True(t, at.IsZero())
	var reads int
	r.onRead = func(int) { reads++ }
	appendFile(t, p, peerUser(text, base.Add(time.Second), "peer", nil))
	at, _, err = r.TakenUp(context.Background(), p, text, next, base)
	require.NoError(t, err)
	assert.Equal(t, base.Add(time.Second), at)
	assert.Equal(t, 1, reads, "only the appended line is read")
}

func strconv(n int) string { return fmt.Sprint(n) }
