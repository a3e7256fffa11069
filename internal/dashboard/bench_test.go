package dashboard

import (
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
