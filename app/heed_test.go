package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// heedTransport is a ports.Heeding whose far end says, after `after`, what
// notice says ("held", "refused", or "" for nothing), and which may enqueue
// the text in the target's transcript when it accepts it.
type heedTransport struct {
	cueTransport
	notice string
	after  time.Duration
	closed atomic.Int32 // how often the Heed ended
}

var _ ports.Heeding = (*heedTransport)(nil)

func (h *heedTransport) DeliverHeeding(ctx context.Context, s domain.Session, m domain.Message) (domain.Receipt, ports.Heed, error) {
	rec, err := h.Deliver(ctx, s, m)
	rec.MsgID, rec.ClaudeResult = "0d9c7a4e-1111-4222-8333-444455556666", "in that session's inbox"
	return rec, func(ctx context.Context) (domain.Receipt, error) {
		defer h.closed.Add(1)
		if h.notice == "" {
			<-ctx.Done()
			return rec, nil
		}
		select {
		case <-ctx.Done():
			return rec, nil
		case <-time.After(h.after):
		}
		if h.notice == "refused" {
			return rec, domain.Refuse(domain.ReasonDeliveryFailed, "refused by the target (msg_id %s)", rec.MsgID)
		}
		rec.Outcome = h.notice
		return rec, nil
	}, err
}

func TestSendHeedsNotices(t *testing.T) {
	const text = "heed me"
	tests := []struct {
		name    string
		notice  string
		enqueue bool
		opts    app.ConfirmOptions
		want    domain.Outcome
		refusal bool
	}{
		{name: "seen in the transcript", enqueue: true, want: domain.OutcomeDelivered},
		{name: "held", notice: "held", want: domain.OutcomeHeld},
		{name: "refused", notice: "refused", refusal: true},
		{name: "nothing heard, nothing seen", opts: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond}, want: domain.OutcomeQueued},
		{name: "no confirm: not listening", notice: "held", opts: app.ConfirmOptions{NoConfirm: true}, want: domain.OutcomeQueued},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := t.TempDir()
			f := startFake(t, cfg, idA, "proj-89")
			tr := &heedTransport{cueTransport: cueTransport{outcome: "queued"}, notice: tt.notice, after: 50 * time.Millisecond}
			if tt.enqueue {
				tr.cue = func(s string) { f.enqueue(s, time.Now()) }
			}
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			res, err := newService(cfg, tr, variants()[0]).Send(ctx, app.SendRequest{Address: "proj-89", Text: text, ConfirmOptions: tt.opts})
			assert.Equal(t, int32(1), tr.closed.Load(), "the Heed ran and ended once")
			if tt.refusal {
				r, ok := domain.AsRefusal(err)
				require.True(t, ok, "want a refusal, got %v", err)
				assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
				assert.Contains(t, r.Detail, "refused by the target")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Outcome)
			assert.Equal(t, "0d9c7a4e-1111-4222-8333-444455556666", res.Receipt.MsgID)
		})
	}
}
