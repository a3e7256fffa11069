package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
)

// enqueueFor is an enqueue line of session id.
func enqueueFor(id, text string, at time.Time) string {
	b, _ := json.Marshal(map[string]string{"type": "queue-operation", "operation": "enqueue",
		"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "sessionId": id, "content": text})
	return string(b) + "\n"
}

// A huge transcript (sparse: no line in it) must not hold the wait past
// its deadline, and the backward scan reads a bounded number of bytes.
func TestWaitEnqueuedHugeFileBounded(t *testing.T) {
	cases := []struct {
		name string
		back int64 // WithBackLimit; 0: the default MaxBackBytes
		size int64
		// bound is the most bytes the wait may read.
		bound int64
	}{
		{"backward scan capped", 0, 4 << 30, MaxBackBytes + MaxLineBytes + ChunkBytes},
		// With no byte cap in the way, only the deadline can end the reads.
		{"deadline checked between reads", 1 << 60, 64 << 30, 64<<30 - 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p", sid+".jsonl")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			f, err := os.Create(path)
			require.NoError(t, err)
			if err := f.Truncate(tc.size); err != nil {
				t.Skipf("no sparse file of %d bytes here: %v", tc.size, err)
			}
			require.NoError(t, f.Close())
			var read atomic.Int64
			opts := []Option{WithPoll(20 * time.Millisecond), WithReadHook(func(n int) { read.Add(int64(n)) })}
			if tc.back > 0 {
				opts = append(opts, WithBackLimit(tc.back))
			}
			r := New(nil, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := r.WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: "hi", SessionID: sid, Since: time.Now(),
					Mark: ports.TranscriptMark{Taken: true}})
				done <- err
			}()
			select {
			case err := <-done:
				assert.True(t, errors.Is(err, context.DeadlineExceeded), "err %v", err)
			case <-time.After(within):
				t.Fatalf("the wait outlived its deadline by more than %s", within)
			}
			assert.LessOrEqual(t, read.Load(), tc.bound, "bytes read")
		})
	}
}

const within = 10 * time.Second

// Which lines confirm a send: only the target's, only written after the
// mark taken before the send (whatever their timestamps), never stamped
// implausibly far in the future.
func TestWaitEnqueuedPositionSessionFuture(t *testing.T) {
	const text = "deploy now"
	const other = "0c9f3f35-8d38-4d61-9a53-7a1c2a0e0d11"
	far := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		// before is in the file when the mark is taken (mark: whether one
		// is taken); after is written once the send began; replace writes
		// after as a new file in place of the old one.
		before  func(since time.Time) string
		mark    bool
		after   func(since time.Time) string
		replace bool
		seen    bool
		note    string
	}{
		{name: "written before the send, stamped 2099", mark: true,
			before: func(time.Time) string { return enqueueFor(sid, text, far) }},
		{name: "written before the send, clock stepped back", mark: true,
			before: func(s time.Time) string { return enqueueFor(sid, text, s.Add(2*time.Second)) }},
		{name: "written before the send, mark mid-line", mark: true,
			before: func(s time.Time) string {
				l := enqueueFor(sid, text, s.Add(time.Second))
				return l[:len(l)-1] // its newline comes after the mark
			},
			after: func(time.Time) string { return "\n" }},
		{name: "appended after the mark", mark: true,
			before: func(s time.Time) string { return otherLine(s.Add(-time.Hour), 10) },
			after:  func(s time.Time) string { return enqueueFor(sid, text, s) }, seen: true},
		{name: "file replaced after the mark is read whole", mark: true, replace: true,
			before: func(s time.Time) string { return otherLine(s.Add(-time.Hour), 10) },
			after:  func(s time.Time) string { return otherLine(s, 10) + enqueueFor(sid, text, s) }, seen: true},
		{name: "file created after the mark", mark: true,
			after: func(s time.Time) string { return enqueueFor(sid, text, s) }, seen: true},
		{name: "stamped 2099, no mark", note: "in the future",
			after: func(time.Time) string { return enqueueFor(sid, text, far) }},
		{name: "stamped 2099 after the mark", mark: true, note: "in the future",
			after: func(time.Time) string { return enqueueFor(sid, text, far) }},
		{name: "another session's line", mark: true,
			after: func(s time.Time) string { return enqueueFor(other, text, s) }},
		{name: "another session's line, then ours", mark: true,
			after: func(s time.Time) string { return enqueueFor(other, text, s) + enqueueFor(sid, text, s) }, seen: true},
	}
	for _, rc := range readers() {
		for _, tc := range cases {
			t.Run(rc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "p", sid+".jsonl")
				since := time.Now()
				if tc.before != nil {
					appendFile(t, path, tc.before(since))
				}
				r := rc.new()
				var mark ports.TranscriptMark
				if tc.mark {
					mark = r.Mark(path)
				}
				if tc.after != nil {
					if tc.replace {
						tmp := path + ".new"
						appendFile(t, tmp, tc.after(since))
						require.NoError(t, os.Rename(tmp, path))
					} else {
						appendFile(t, path, tc.after(since))
					}
				}
				timeout := 300 * time.Millisecond
				if tc.seen {
					timeout = within
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				e, err := r.WaitEnqueued(ctx, ports.EnqueueQuery{Path: path, Text: text, SessionID: sid, Since: since, Mark: mark})
				if !tc.seen {
					require.Error(t, err, "confirmed by the line at %d", e.Offset)
					assert.True(t, errors.Is(err, context.DeadlineExceeded), "err %v", err)
					if tc.note != "" {
						var n interface{ ConfirmNote() string }
						require.True(t, errors.As(err, &n))
						assert.Contains(t, n.ConfirmNote(), tc.note)
					}
					return
				}
				require.NoError(t, err)
				assert.Equal(t, sid, e.SessionID)
				if tc.mark && !tc.replace && mark.File != nil {
					assert.GreaterOrEqual(t, e.Offset, mark.Size)
				}
			})
		}
	}
}
