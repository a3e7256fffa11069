package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Claude Code's status words, "waiting" among them (a session stopped on
// its user: a dialog, a prompt), each read back as itself; any other word
// is unknown.
func TestParseStatusWords(t *testing.T) {
	for _, s := range []Status{StatusIdle, StatusBusy, StatusWaiting} {
		assert.Equal(t, s, ParseStatus(s.String()))
	}
	assert.Equal(t, StatusUnknown, ParseStatus("thinking"))
	assert.Equal(t, "unknown", StatusUnknown.String())
}

func TestStatusText(t *testing.T) {
	assert.Equal(t, "waiting (dialog open)", StatusText("waiting", "dialog open"))
	assert.Equal(t, "waiting", StatusText("waiting", ""))
	assert.Equal(t, "idle", StatusText("idle", "dialog open"), "only a waiting session waits on something")
}

func TestRecordStarting(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 31, 47, 0, time.UTC)
	cases := []struct {
		name string
		rec  Record
		want bool
	}{
		{"just appeared, no status", Record{StartedAt: now.Add(-time.Second)}, true},
		{"no status yet, a loaded minute", Record{StartedAt: now.Add(-time.Minute)}, true},
		{"no status past the limit", Record{StartedAt: now.Add(-SettleLimit)}, false},
		{"settled idle", Record{StartedAt: now.Add(-time.Second), Status: StatusIdle, StatusUpdatedAt: now}, false},
		{"settled busy, no status time", Record{StartedAt: now.Add(-time.Second), Status: StatusBusy}, false},
		{"a future status word with its time", Record{StartedAt: now.Add(-time.Second), StatusUpdatedAt: now}, false},
		{"updatedAt only", Record{StartedAt: now.Add(-time.Second), UpdatedAt: now}, false},
		{"start unknown", Record{}, false},
		{"started in the far future (clock moved)", Record{StartedAt: now.Add(SettleLimit)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.rec.Starting(now))
		})
	}
}
