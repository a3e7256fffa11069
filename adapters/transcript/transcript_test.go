package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fswatch"
	"github.com/peerctl/peerctl/ports"
)

const sid = "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29"

// enqueueLine is the line Claude Code 2.1.328 writes when a message is queued.
func enqueueLine(text string, at time.Time) string {
	b, _ := json.Marshal(map[string]string{"type": "queue-operation", "operation": "enqueue",
		"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "sessionId": sid, "content": text})
	return string(b) + "\n"
}

func otherLine(at time.Time, size int) string {
	b, _ := json.Marshal(map[string]any{"type": "api-request", "timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"),
		"sessionId": sid, "params": strings.Repeat("x", size)})
	return string(b) + "\n"
}

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

type readerCase struct {
	name string
	new  func() *Reader
}

// readers runs every case against a Reader that uses fsnotify and one that
// only polls, each with a tiny chunk (every line spans chunks) and the
// default chunk.
func readers() []readerCase {
	fast := WithPoll(20 * time.Millisecond)
	return []readerCase{
		{"notify/default-chunk", func() *Reader { return New(fswatch.NewFolder(), WithPoll(time.Hour)) }},
		{"notify/7-byte-chunk", func() *Reader { return New(fswatch.NewFolder(), WithPoll(time.Hour), WithChunk(7)) }},
		{"poll/default-chunk", func() *Reader { return New(nil, fast) }},
		{"poll/7-byte-chunk", func() *Reader { return New(nil, fast, WithChunk(7)) }},
	}
}

func TestWaitEnqueuedTable(t *testing.T) {
	const text = "hello \"peer\" é\ttab\nnewline </script> \u2028"
	cases := []struct {
		name string
		// before is written before the wait starts (relative to since);
		// after is appended once it runs. Empty: nothing.
		before func(since time.Time) string
		after  func(since time.Time) string
		seen   bool
	}{
		{"already there", func(s time.Time) string {
			return otherLine(s.Add(-time.Hour), 10) + enqueueLine(text, s.Add(time.Millisecond))
		}, nil, true},
		{"appended later", func(s time.Time) string { return otherLine(s.Add(-time.Second), 10) },
			func(s time.Time) string { return otherLine(s, 5) + enqueueLine(text, s.Add(2*time.Millisecond)) }, true},
		{"same millisecond as the send", nil, func(s time.Time) string { return enqueueLine(text, s) }, true},
		{"file and folder appear later", nil, func(s time.Time) string { return enqueueLine(text, s.Add(time.Millisecond)) }, true},
		{"not seen", func(s time.Time) string { return otherLine(s, 10) }, nil, false},
		{"seen too early: a matching line from before the send", func(s time.Time) string {
			return enqueueLine(text, s.Add(-2*time.Millisecond))
		}, nil, false},
		{"seen too early, then again after", func(s time.Time) string { return enqueueLine(text, s.Add(-time.Second)) },
			func(s time.Time) string { return enqueueLine(text, s.Add(time.Millisecond)) }, true},
		{"other text (prefix)", nil, func(s time.Time) string { return enqueueLine(text[:10], s.Add(time.Millisecond)) }, false},
		{"other text (longer)", nil, func(s time.Time) string { return enqueueLine(text+" ", s.Add(time.Millisecond)) }, false},
		{"dequeue line, not enqueue", nil, func(s time.Time) string {
			return strings.Replace(enqueueLine(text, s.Add(time.Millisecond)), `"enqueue"`, `"dequeue"`, 1)
		}, false},
		{"enqueue without timestamp", nil, func(s time.Time) string {
			return fmt.Sprintf(`{"type":"queue-operation","operation":"enqueue","content":%q}`+"\n", text)
		}, false},
		{"text only inside a user message", nil, func(s time.Time) string {
			b, _ := json.Marshal(map[string]any{"type": "user", "timestamp": s.Add(time.Millisecond).Format(time.RFC3339Nano),
				"message": map[string]string{"role": "user", "content": text}})
			return string(b) + "\n"
		}, false},
		{"garbage lines around", func(s time.Time) string { return "not json\n{\n\n" },
			func(s time.Time) string {
				return "{\"timestamp\":7}\n" + enqueueLine(text, s.Add(time.Millisecond)) + "tail garbage\n"
			}, true},
		{"written in two steps (partial line first)", nil, func(s time.Time) string {
			return enqueueLine(text, s.Add(time.Millisecond))
		}, true},
	}
	for _, rc := range readers() {
		for _, tc := range cases {
			t.Run(rc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "config", "projects", "-w-proj", sid+".jsonl")
				since := time.Now().Add(-time.Hour).Truncate(time.Millisecond) // fixed reference, far from now
				if tc.before != nil {
					appendFile(t, path, tc.before(since))
				}
				timeout := 10 * time.Second
				if !tc.seen {
					timeout = 400 * time.Millisecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				type result struct {
					off int64
					err error
				}
				done := make(chan result, 1)
				r := rc.new()
				go func() {
					e, err := r.WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: text, Since: since})
					done <- result{e.Offset, err}
				}()
				wantOff := int64(-1)
				if tc.after != nil {
					time.Sleep(30 * time.Millisecond)
					if fi, err := os.Stat(path); err == nil {
						wantOff = fi.Size()
					} else {
						wantOff = 0
					}
					s := tc.after(since)
					if strings.HasPrefix(tc.name, "written in two steps") {
						appendFile(t, path, s[:len(s)/2])
						time.Sleep(30 * time.Millisecond)
						s = s[len(s)/2:]
					}
					appendFile(t, path, s)
				}
				res := <-done
				if !tc.seen {
					require.Error(t, res.err)
					assert.ErrorIs(t, res.err, context.DeadlineExceeded)
					return
				}
				require.NoError(t, res.err)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				line, _, _ := bytes.Cut(data[res.off:], []byte("\n"))
				assert.Contains(t, string(line), `"enqueue"`, "offset points at the enqueue line")
				if wantOff >= 0 && !strings.HasPrefix(tc.name, "garbage") && !strings.HasPrefix(tc.name, "appended later") {
					assert.Equal(t, wantOff, res.off)
				}
			})
		}
	}
}

func TestWaitEnqueuedFileReplaced(t *testing.T) {
	for _, rc := range readers() {
		t.Run(rc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), sid+".jsonl")
			since := time.Now().Truncate(time.Millisecond)
			appendFile(t, path, otherLine(since, 4000)+otherLine(since, 4000))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := rc.new().WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "hi", Since: since})
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			// Replaced by a shorter file: read afresh, not from the old offset.
			tmp := path + ".tmp"
			require.NoError(t, os.WriteFile(tmp, []byte(enqueueLine("hi", since.Add(time.Millisecond))), 0o600))
			require.NoError(t, os.Rename(tmp, path))
			require.NoError(t, <-done)
		})
	}
}

func TestWaitEnqueuedReadErrorEndsWait(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sid+".jsonl")
	require.NoError(t, os.Mkdir(path, 0o755)) // a folder where the file should be
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := New(nil).WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "hi", Since: time.Now()})
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "read transcript")
}

// TestLargeTranscriptReadsOnlyItsEnd writes a 50 MB transcript whose match
// is the last line, preceded by lines stamped long before the send: the
// wait must find it having read a bounded amount from the end, with a
// bounded amount of memory.
func TestLargeTranscriptReadsOnlyItsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50 MB")
	}
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	since := time.Now().Truncate(time.Millisecond)
	writeFiller(t, path, 50<<20, true, since.Add(-2*time.Hour))
	appendFile(t, path, enqueueLine("the match", since.Add(time.Millisecond)))

	var read atomic.Int64
	r := New(nil, WithReadHook(func(n int) { read.Add(int64(n)) }))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := r.WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "the match", Since: since})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fi.Size()-int64(len(enqueueLine("the match", since))), e.Offset)
	assert.LessOrEqual(t, read.Load(), int64(4*ChunkBytes), "read %d bytes of a %d-byte file", read.Load(), fi.Size())
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "allocated during the wait")
}

// TestLargeTranscriptWithoutTimestampsBoundedMemory: with no timestamp to
// stop at and no match, the backward scan reads the whole 50 MB file, but
// one chunk at a time.
func TestLargeTranscriptWithoutTimestampsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50 MB")
	}
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	since := time.Now().Truncate(time.Millisecond)
	writeFiller(t, path, 50<<20, false, time.Time{})
	var read atomic.Int64
	r := New(nil, WithPoll(time.Hour), WithReadHook(func(n int) { read.Add(int64(n)) }))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The wait ends by its deadline once the first look is done.
	done := make(chan error, 1)
	go func() {
		_, err := r.WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "absent", Since: since})
		done <- err
	}()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return read.Load() >= fi.Size() }, 30*time.Second, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "allocated while reading a %d-byte file", fi.Size())
}

// writeFiller writes about size bytes of transcript-like lines.
func writeFiller(t testing.TB, path string, size int, stamped bool, at time.Time) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	var line string
	if stamped {
		line = otherLine(at, 900)
	} else {
		line = `{"type":"mode","mode":"normal","sessionId":"` + sid + `","pad":"` + strings.Repeat("y", 900) + "\"}\n"
	}
	block := strings.Repeat(line, (1<<20)/len(line))
	for written := 0; written < size; written += len(block) {
		_, err := f.WriteString(block)
		require.NoError(t, err)
	}
}

// TestScanBackLines checks the backward scan against a plain split, for
// chunk sizes that cut lines everywhere, with empty lines, a line without
// a final newline and lines over MaxLineBytes (skipped).
func TestScanBackLines(t *testing.T) {
	long := strings.Repeat("L", MaxLineBytes+1)
	files := map[string]string{
		"simple":          "a\nbb\nccc\n",
		"empty lines":     "\n\na\n\nb\n",
		"no final":        "a\nb\nunfinished",
		"one line":        "only\n",
		"empty":           "",
		"long in middle":  "a\n" + long + "\nb\n",
		"long first":      long + "\nb\n",
		"long last":       "a\n" + long + "\n",
		"at the cap":      "a\n" + long[1:] + "\nb\n",
		"utf-8 and bytes": "é\n\xff\xfe\n日本\n",
	}
	for name, content := range files {
		chunks := []int{1, 2, 3, 7, 64, ChunkBytes}
		if len(content) > MaxLineBytes {
			chunks = []int{999, 4096, ChunkBytes}
		}
		for _, chunk := range chunks {
			t.Run(fmt.Sprintf("%s/chunk-%d", name, chunk), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "f")
				require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
				f, err := os.Open(path)
				require.NoError(t, err)
				defer f.Close()
				r := New(nil, WithChunk(chunk))
				end, tooLong, err := r.lastNewline(context.Background(), f, int64(len(content)))
				require.NoError(t, err)
				require.False(t, tooLong)
				var got []string
				var offs []int64
				require.NoError(t, r.scanBack(context.Background(), f, end, false, func(line []byte, off int64) bool {
					got = append(got, string(line))
					offs = append(offs, off)
					return false
				}))
				var want []string
				var wantOffs []int64
				pos := 0
				for _, l := range strings.SplitAfter(content[:end], "\n") {
					body := strings.TrimSuffix(l, "\n")
					if body != "" && len(body) <= MaxLineBytes {
						want = append([]string{body}, want...)
						wantOffs = append([]int64{int64(pos)}, wantOffs...)
					}
					pos += len(l)
				}
				assert.Equal(t, want, got)
				assert.Equal(t, wantOffs, offs)
			})
		}
	}
}

// TestOverlongLastLineSkipped: a partial last line already over the cap is
// skipped, and the match appended after its end is found.
func TestOverlongLastLineSkipped(t *testing.T) {
	for _, rc := range readers() {
		t.Run(rc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), sid+".jsonl")
			since := time.Now().Truncate(time.Millisecond)
			appendFile(t, path, `{"type":"x","pad":"`+strings.Repeat("z", MaxLineBytes+10))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := rc.new().WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "after", Since: since})
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			appendFile(t, path, strings.Repeat("z", 100)+"\"}\n"+enqueueLine("after", since.Add(time.Millisecond)))
			require.NoError(t, <-done)
		})
	}
}

var _ ports.Transcripts = (*Reader)(nil)

func BenchmarkWaitEnqueuedLarge(b *testing.B) {
	path := filepath.Join(b.TempDir(), sid+".jsonl")
	since := time.Now().Truncate(time.Millisecond)
	writeFiller(b, path, 50<<20, true, since.Add(-2*time.Hour))
	appendFile(b, path, enqueueLine("the match", since.Add(time.Millisecond)))
	r := New(nil)
	b.ResetTimer()
	for range b.N {
		if _, err := r.WaitEnqueued(context.Background(), ports.EnqueueQuery{Path: path, Text: "the match", Since: since}); err != nil {
			b.Fatal(err)
		}
	}
}
