package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// cueTransport "delivers" by running a cue, as a session would react.
type cueTransport struct {
	outcome string
	cue     func(text string)
}

func (c *cueTransport) Name() string { return "cue" }

func (c *cueTransport) Deliver(_ context.Context, _ domain.Session, m domain.Message) (domain.Receipt, error) {
	if c.cue != nil {
		c.cue(m.Text())
	}
	return domain.Receipt{Transport: "cue", Outcome: c.outcome}, nil
}

func (c *cueTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{Transport: "cue"}, nil
}

// sendReacting sends text to "proj-89" (the fake session in cfg) through a
// transport whose Deliver runs now(text) at once and then react(text) in
// the background, as the session would react to the message; either may be
// nil. It returns when Send does (within 2×within); the test's end waits
// for react to finish.
func sendReacting(t *testing.T, cfg string, v variant, text string, opts app.ConfirmOptions, now, react func(text string)) (app.SendResult, error) {
	t.Helper()
	done := make(chan struct{})
	cued := false
	tr := &cueTransport{outcome: "posted", cue: func(s string) {
		cued = true
		if now != nil {
			now(s)
		}
		go func() {
			defer close(done)
			if react != nil {
				react(s)
			}
		}()
	}}
	t.Cleanup(func() {
		if cued {
			<-done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*within)
	defer cancel()
	return newService(cfg, tr, v).Send(ctx, app.SendRequest{Address: "proj-89", Text: text, ConfirmOptions: opts})
}

func TestSendConfirmation(t *testing.T) {
	const text = "rebase on main \"now\"\nplease"
	cases := []struct {
		name    string
		outcome string // the transport's word
		// before runs before the send (it may write lines "too early");
		// cue runs inside Deliver; later runs after Send has begun waiting.
		before  func(f *fakeSession)
		cue     func(f *fakeSession, text string)
		later   func(f *fakeSession)
		opts    app.ConfirmOptions
		want    domain.Outcome
		confirm bool
		refusal bool
		note    string
	}{
		{name: "seen at once", outcome: "posted",
			cue:  func(f *fakeSession, s string) { f.enqueue(s, time.Now()) },
			want: domain.OutcomeDelivered, confirm: true},
		{name: "seen a moment later", outcome: "posted",
			later: func(f *fakeSession) { time.Sleep(100 * time.Millisecond); f.enqueue(text, time.Now()) },
			want:  domain.OutcomeDelivered, confirm: true},
		{name: "courier queued then seen", outcome: "queued",
			cue:  func(f *fakeSession, s string) { f.enqueue(s, time.Now()) },
			want: domain.OutcomeDelivered, confirm: true},
		{name: "not seen", outcome: "posted", opts: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond},
			want: domain.OutcomePosted, note: "within 300ms"},
		{name: "courier, not seen", outcome: "queued", opts: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond},
			want: domain.OutcomeQueued, note: "within 300ms"},
		{name: "not seen, confirmation required", outcome: "posted",
			opts: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond, RequireConfirm: true},
			want: domain.OutcomePosted, refusal: true, note: "within 300ms"},
		{name: "seen too early: the same text queued before the send", outcome: "posted",
			before: func(f *fakeSession) { f.enqueue(text, time.Now().Add(-time.Second)) },
			opts:   app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond},
			want:   domain.OutcomePosted, note: "no enqueue line"},
		// The mark is taken before the transport runs: a line already in
		// the file never confirms, whatever its timestamp says.
		{name: "seen too early, stamped after the send (clock stepped back)", outcome: "posted",
			before: func(f *fakeSession) { f.enqueue(text, time.Now().Add(2*time.Second)) },
			opts:   app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond},
			want:   domain.OutcomePosted, note: "no enqueue line"},
		{name: "another session's line in the same file", outcome: "posted",
			cue: func(f *fakeSession, s string) {
				f.appendLines(map[string]any{"type": "queue-operation", "operation": "enqueue", "timestamp": stamp(time.Now()),
					"sessionId": "0c9f3f35-8d38-4d61-9a53-7a1c2a0e0d11", "content": s})
			},
			opts: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond},
			want: domain.OutcomePosted, note: "no enqueue line"},
		{name: "other text seen", outcome: "posted",
			cue:  func(f *fakeSession, s string) { f.enqueue(s+" (edited)", time.Now()) },
			opts: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond},
			want: domain.OutcomePosted},
		{name: "no confirm asked", outcome: "posted",
			cue:  func(f *fakeSession, s string) { f.enqueue(s, time.Now()) },
			opts: app.ConfirmOptions{NoConfirm: true},
			want: domain.OutcomePosted, note: "skipped"},
	}
	for _, v := range variants() {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cfg := t.TempDir()
				f := startFake(t, cfg, idA, "proj-89")
				if tc.before != nil {
					tc.before(f)
				}
				tr := &cueTransport{outcome: tc.outcome}
				if tc.cue != nil {
					tr.cue = func(s string) { tc.cue(f, s) }
				}
				if tc.later != nil {
					done := make(chan struct{})
					tr.cue = func(string) {
						go func() { defer close(done); tc.later(f) }()
					}
					t.Cleanup(func() { <-done })
				}
				svc := newService(cfg, tr, v)
				ctx, cancel := context.WithTimeout(context.Background(), within)
				defer cancel()
				res, err := svc.Send(ctx, app.SendRequest{Address: "proj-89", Text: text, ConfirmOptions: tc.opts})
				if tc.refusal {
					r, ok := domain.AsRefusal(err)
					require.True(t, ok, "want a refusal, got %v", err)
					assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
					assert.Contains(t, r.Detail, "posted by cue but not confirmed: no enqueue line")
					assert.Contains(t, r.Detail, "handed to the transport and may still arrive", "a script must not resend blindly")
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, tc.want, res.Outcome)
				assert.Equal(t, tc.confirm, res.Confirmed)
				assert.Equal(t, f.Transcript(), res.Transcript)
				if tc.confirm {
					assert.Empty(t, res.ConfirmNote)
					assert.False(t, res.Enqueued.At.Before(res.Started.Truncate(time.Millisecond)), "enqueued at %s, send began %s", res.Enqueued.At, res.Started)
					assert.Equal(t, idA, res.Enqueued.SessionID)
				} else {
					assert.NotEmpty(t, res.ConfirmNote)
					assert.Contains(t, res.ConfirmNote, tc.note)
				}
			})
		}
	}
}

// noTranscriptsTransport proves a Service without the Transcripts port keeps
// the transport's word and says why.
func TestSendWithoutTranscriptPort(t *testing.T) {
	cfg := t.TempDir()
	startFake(t, cfg, idA, "proj-89")
	svc := newService(cfg, &cueTransport{outcome: "posted"}, variant{"bare", func() []app.Option { return nil }})
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "hi"})
	require.NoError(t, err)
	assert.Equal(t, domain.OutcomePosted, res.Outcome)
	assert.False(t, res.Confirmed)
	assert.Contains(t, res.ConfirmNote, "no transcript reader")
}

func TestSendWait(t *testing.T) {
	cases := []struct {
		name string
		// now runs inside Deliver; cue runs in the background after it.
		now        func(f *fakeSession)
		cue        func(f *fakeSession)
		wait       time.Duration
		want       domain.WaitEnd
		wantStatus domain.Status
	}{
		{"busy then idle", nil, func(f *fakeSession) {
			time.Sleep(50 * time.Millisecond)
			f.setStatus("busy")
			time.Sleep(150 * time.Millisecond)
			f.setStatus("idle")
		}, within, domain.WaitIdle, domain.StatusIdle},
		{"busy and idle between two reads (updatedAt after the send)", nil, func(f *fakeSession) {
			f.setStatus("idle")
		}, within, domain.WaitIdle, domain.StatusIdle},
		{"stays busy", func(f *fakeSession) { f.setStatus("busy") }, nil, 400 * time.Millisecond, domain.WaitTimeout, domain.StatusBusy},
		{"never reacts", nil, nil, 400 * time.Millisecond, domain.WaitTimeout, domain.StatusIdle},
		// The wait must outlast the record's re-read on a loaded machine (it ends by running out).
		{"stops on a dialog", nil, func(f *fakeSession) { f.setStatus("waiting:dialog open") }, 3 * time.Second, domain.WaitTimeout, domain.StatusWaiting},
		{"crashes while busy", func(f *fakeSession) { f.setStatus("busy") }, func(f *fakeSession) {
			time.Sleep(100 * time.Millisecond)
			f.crash()
		}, within, domain.WaitExited, domain.StatusBusy},
		{"exits cleanly", nil, func(f *fakeSession) {
			time.Sleep(100 * time.Millisecond)
			f.exit()
		}, within, domain.WaitExited, domain.StatusIdle},
	}
	for _, v := range variants() {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cfg := t.TempDir()
				f := startFake(t, cfg, idA, "proj-89")
				// The record was last written well before the send.
				f.backdate(time.Minute)
				res, err := sendReacting(t, cfg, v, "go", app.ConfirmOptions{Wait: tc.wait}, func(s string) {
					f.enqueue(s, time.Now())
					if tc.now != nil {
						tc.now(f)
					}
				}, func(string) {
					if tc.cue != nil {
						tc.cue(f)
					}
				})
				require.NoError(t, err)
				assert.Equal(t, domain.OutcomeDelivered, res.Outcome)
				assert.Equal(t, tc.want, res.WaitEnd, "note: %s", res.WaitNote)
				assert.Equal(t, tc.wantStatus, res.WaitStatus)
				if tc.wantStatus == domain.StatusWaiting {
					assert.Equal(t, "dialog open", res.WaitingFor)
				}
				if tc.want == domain.WaitTimeout {
					assert.GreaterOrEqual(t, res.WaitElapsed, tc.wait)
				}
			})
		}
	}
}

func TestSendWaitInterrupted(t *testing.T) {
	cfg := t.TempDir()
	f := startFake(t, cfg, idA, "proj-89")
	f.backdate(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	tr := &cueTransport{outcome: "posted", cue: func(string) {
		time.AfterFunc(100*time.Millisecond, cancel)
	}}
	svc := newService(cfg, tr, variants()[0])
	res, err := svc.Send(ctx, app.SendRequest{Address: "proj-89", Text: "go",
		ConfirmOptions: app.ConfirmOptions{NoConfirm: true, Wait: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, domain.WaitInterrupted, res.WaitEnd, "not a timeout: the deadline was an hour away")
	assert.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded))
}

// A record that goes missing while its pid lives and stays missing until
// the deadline: a timeout whose note says the status is as last read.
func TestSendWaitTimeoutWhileRecordMissing(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cfg := t.TempDir()
			f := startFake(t, cfg, idA, "proj-89")
			f.backdate(time.Minute)
			dir := filepath.Dir(f.path())
			res, err := sendReacting(t, cfg, v, "go", app.ConfirmOptions{NoConfirm: true, Wait: 800 * time.Millisecond}, nil, func(string) {
				time.Sleep(50 * time.Millisecond)
				require.NoError(t, os.Rename(dir, dir+".away"))
			})
			require.NoError(t, err)
			assert.Equal(t, domain.WaitTimeout, res.WaitEnd, "note: %s", res.WaitNote)
			assert.Contains(t, res.WaitNote, "missing or unreadable for the last")
		})
	}
}

// Ctrl-C while confirming, with a wait asked for: the wait is reported as
// interrupted, not left out.
func TestSendWaitInterruptedWhileConfirming(t *testing.T) {
	cfg := t.TempDir()
	startFake(t, cfg, idA, "proj-89")
	ctx, cancel := context.WithCancel(context.Background())
	tr := &cueTransport{outcome: "posted", cue: func(string) {
		time.AfterFunc(100*time.Millisecond, cancel) // the transcript never shows the text
	}}
	res, err := newService(cfg, tr, variants()[0]).Send(ctx, app.SendRequest{Address: "proj-89", Text: "go",
		ConfirmOptions: app.ConfirmOptions{ConfirmTimeout: time.Hour, Wait: time.Hour}})
	require.NoError(t, err)
	assert.Contains(t, res.ConfirmNote, "interrupted")
	assert.Equal(t, domain.WaitInterrupted, res.WaitEnd)
	assert.Equal(t, domain.StatusIdle, res.WaitStatus)
}

// A target busy with earlier messages when the send begins must not end
// the wait with the end of that earlier turn: the wait ends only after the
// turn on our message (measured on Claude Code 2.1.328: our dequeue can
// come before the previous turn's idle, the next busy after it).
func TestSendWaitTargetBusyWithEarlierWork(t *testing.T) {
	cases := []struct {
		name      string
		noConfirm bool
		note      string // in WaitNote
	}{
		{name: "take-up from the transcript"},
		{name: "no transcript: fallback on a transition into busy", noConfirm: true, note: "take-up not checked"},
	}
	for _, v := range variants() {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cfg := t.TempDir()
				f := startFake(t, cfg, idA, "proj-89")
				// An earlier turn, begun well before the send.
				f.mu.Lock()
				old := time.Now().Add(-time.Minute).UnixMilli()
				f.rec["status"], f.rec["updatedAt"], f.rec["statusUpdatedAt"] = "busy", old, old
				f.write()
				f.mu.Unlock()
				var ourTurnEnded atomic.Bool
				res, err := sendReacting(t, cfg, v, "third, long wait", app.ConfirmOptions{NoConfirm: tc.noConfirm, Wait: within},
					func(s string) { f.queue(s, time.Now()) }, // queued behind the running turn
					func(s string) {
						time.Sleep(100 * time.Millisecond)
						f.appendLines(map[string]any{"type": "queue-operation", "operation": "dequeue", "timestamp": stamp(time.Now()), "sessionId": f.ID()})
						time.Sleep(20 * time.Millisecond)
						f.setStatus("idle") // the earlier turn ends
						time.Sleep(400 * time.Millisecond)
						f.setStatus("busy") // the turn on our message
						time.Sleep(20 * time.Millisecond)
						f.takeUp(s, time.Now())
						time.Sleep(100 * time.Millisecond)
						ourTurnEnded.Store(true)
						f.setStatus("idle")
					})
				returnedAfterOurTurn := ourTurnEnded.Load()
				require.NoError(t, err)
				assert.Equal(t, domain.WaitIdle, res.WaitEnd, "note: %s", res.WaitNote)
				assert.True(t, returnedAfterOurTurn, "the wait ended before the turn on our message (at the earlier turn's end)")
				if tc.note != "" {
					assert.Contains(t, res.WaitNote, tc.note)
				} else {
					assert.Empty(t, res.WaitNote)
					assert.False(t, res.TakenUpAt.IsZero(), "take-up time not found")
				}
			})
		}
	}
}

// A record that is missing or torn for a moment while its pid lives does
// not end the wait as exited: the record rewritten in place as a torn
// file, or the sessions folder moved away, then restored.
func TestSendWaitRecordBrieflyUnreadable(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(f *fakeSession) (restore func())
	}{
		{"record torn in place", func(f *fakeSession) func() {
			f.mu.Lock()
			require.NoError(t, os.WriteFile(f.path(), []byte(`{"pid": `), 0o600))
			return func() { f.write(); f.mu.Unlock() }
		}},
		{"record removed", func(f *fakeSession) func() {
			f.mu.Lock()
			require.NoError(t, os.Remove(f.path()))
			return func() { f.write(); f.mu.Unlock() }
		}},
		{"sessions folder moved away", func(f *fakeSession) func() {
			dir := filepath.Dir(f.path())
			require.NoError(t, os.Rename(dir, dir+".away"))
			return func() { require.NoError(t, os.Rename(dir+".away", dir)) }
		}},
	}
	for _, v := range variants() {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cfg := t.TempDir()
				f := startFake(t, cfg, idA, "proj-89")
				f.backdate(time.Minute)
				res, err := sendReacting(t, cfg, v, "go", app.ConfirmOptions{Wait: within}, func(s string) {
					f.queue(s, time.Now())
					f.setStatus("busy")
				}, func(s string) {
					time.Sleep(50 * time.Millisecond)
					restore := tc.spoil(f)
					time.Sleep(150 * time.Millisecond)
					restore()
					f.takeUp(s, time.Now())
					time.Sleep(20 * time.Millisecond)
					f.setStatus("idle")
				})
				require.NoError(t, err)
				assert.Equal(t, domain.WaitIdle, res.WaitEnd, "note: %s", res.WaitNote)
			})
		}
	}
}

// The take-up line can reach the transcript after the record already says
// idle: Claude Code writes its transcript in batches, behind the record
// (measured on 2.1.328 under load: the peer "user" line reached the file
// 200 ms after the record said idle, the enqueue line 5 s after the post).
// The wait still ends idle once the line is there, not at its deadline,
// although no record changes any more: it watches the transcript too. So
// when the whole transcript comes after the confirmation window: the send
// is not confirmed, and the wait still ends on the take-up line.
func TestSendWaitTranscriptWrittenAfterIdle(t *testing.T) {
	cases := []struct {
		name    string
		confirm time.Duration // the confirmation window (0: the default)
		late    bool          // the enqueue line comes late too
	}{
		{name: "take-up late"},
		{name: "whole transcript late", confirm: 50 * time.Millisecond, late: true},
	}
	for _, tc := range cases {
		for _, v := range variants() {
			t.Run(tc.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				cfg := t.TempDir()
				f := startFake(t, cfg, idA, "proj-89")
				f.backdate(time.Minute)
				var queued time.Time // when the session got the post (set before react runs)
				res, err := sendReacting(t, cfg, v, "a late line", app.ConfirmOptions{Wait: within, ConfirmTimeout: tc.confirm},
					func(s string) {
						queued = time.Now()
						if !tc.late {
							f.queue(s, queued)
						}
					},
					func(s string) {
						time.Sleep(20 * time.Millisecond)
						f.setStatus("busy")
						taken := time.Now()
						time.Sleep(20 * time.Millisecond)
						f.setStatus("idle")
						time.Sleep(300 * time.Millisecond)
						if tc.late {
							f.queue(s, queued)
						}
						f.takeUp(s, taken)
					})
				require.NoError(t, err)
				assert.Equal(t, !tc.late, res.Confirmed)
				assert.Equal(t, domain.WaitIdle, res.WaitEnd, "note: %s", res.WaitNote)
				assert.False(t, res.TakenUpAt.IsZero())
			})
		}
	}
}
