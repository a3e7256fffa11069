package dashboard

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkData500 is the page's data (docs/PERFORMANCE.md): 500 live
// sessions over 5 machines and 500 outbox messages, read from a fake
// backend, grouped, escaped and encoded as JSON. Target: 50 ms.
func BenchmarkData500(b *testing.B) {
	f := &fake{hosts: manySessions(500, 5)}
	for i := range 500 {
		f.msgs = append(f.msgs, Message{ID: int64(i + 1), State: "delivered", Address: "proj-1", Text: "the API changed, rebase",
			History: []Event{{State: "stored"}, {State: "delivering"}, {State: "delivered"}}})
	}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Now: func() time.Time { return time.Unix(0, 0) }})
	require.NoError(b, err)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		data, err := d.Data(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		n = len(data)
	}
	b.ReportMetric(float64(n), "bytes")
}

// BenchmarkDelta10k is what an open page is sent when one message changes
// (docs/PERFORMANCE.md): 500 live sessions over 5 machines and 10,000
// outbox messages (the page shows the newest 500), one message moving to
// another state per op; each op reads the data again, builds it and
// writes the delta a stream sends. Reported: the delta's bytes and the
// first event's (the whole page). Goal: a few KB a change.
func BenchmarkDelta10k(b *testing.B) {
	f := &fake{hosts: manySessions(500, 5), msgs: manyMessages(10_000)}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Now: func() time.Time { return time.Unix(0, 0) }})
	require.NoError(b, err)
	v := view{}
	d.acquire(v)
	defer d.release(v)
	last, _ := d.read(context.Background(), listBound)
	var first bytes.Buffer
	last.state(&first, v, 1)
	b.ReportAllocs()
	var n, seq int
	states := []string{"replied", "delivered"}
	for b.Loop() {
		seq++
		f.move(int64(10_000-seq%500), states[seq/500%2])
		s, _ := d.read(context.Background(), listBound)
		var buf bytes.Buffer
		if !s.delta(&buf, last, v, seq) {
			b.Fatal("no change seen")
		}
		n, last = buf.Len(), s
	}
	b.ReportMetric(float64(n), "delta-bytes")
	b.ReportMetric(float64(first.Len()), "state-bytes")
}
