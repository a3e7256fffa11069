package app

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// A wait that ran out says whether the message was taken up, in its wait
// object and in the wait_timeout refusal, a receipt with ok false and exit
// 11; other endings are no refusal.
func TestSentWaitTimeoutSaysTakenUp(t *testing.T) {
	res := SendResult{}
	res.Outcome, res.WaitEnd, res.WaitStatus = domain.OutcomeDelivered, domain.WaitTimeout, domain.StatusBusy
	res.WaitElapsed = time.Minute
	res.Confirmed = true
	res.TakenUpAt = time.Date(2026, 12, 2, 1, 2, 3, 456e6, time.UTC)
	sent, err := Sent(res, nil, false)
	require.NoError(t, err)
	assert.False(t, sent.Receipt.OK)
	assert.Equal(t, wire.ExitWaitTimeout, sent.Code)
	require.NotNil(t, sent.Receipt.Refusal)
	assert.Equal(t, "wait_timeout", sent.Receipt.Refusal.Reason)
	assert.Equal(t, 11, sent.Receipt.Refusal.ExitCode)
	assert.Equal(t, "delivered, taken up at 2026-12-02T01:02:03.456Z, but the turn on it had not ended after 1m0s (status busy); it may still end: do not resend it", sent.Receipt.Refusal.Detail)
	assert.Equal(t, []string{"peerctl: wait_timeout: " + sent.Receipt.Refusal.Detail}, sent.Notes)
	assert.Equal(t, "2026-12-02T01:02:03.456Z", sent.Receipt.Wait.TakenUpAt)

	res.TakenUpAt = time.Time{}
	sent, err = Sent(res, nil, false)
	require.NoError(t, err)
	assert.Contains(t, sent.Receipt.Refusal.Detail, "delivered, not taken up yet, but")

	res.WaitStatus, res.WaitingFor = domain.StatusWaiting, "permission prompt"
	sent, err = Sent(res, nil, false)
	require.NoError(t, err)
	assert.Contains(t, sent.Receipt.Refusal.Detail, "(status waiting (permission prompt): it waits on its user; answer it there)")
	assert.Equal(t, "permission prompt", sent.Receipt.Wait.WaitingFor)
	res.WaitStatus, res.WaitingFor = domain.StatusBusy, ""

	for _, end := range []domain.WaitEnd{domain.WaitNone, domain.WaitIdle, domain.WaitExited, domain.WaitInterrupted, domain.WaitFailed} {
		res.WaitEnd = end
		sent, err := Sent(res, nil, false)
		require.NoError(t, err)
		assert.True(t, sent.Receipt.OK, end.String())
		assert.Nil(t, sent.Receipt.Refusal, end.String())
		assert.Equal(t, wire.ExitOK, sent.Code, end.String())
	}
}

// An awaited send without a reply is a receipt with ok false, no_reply
// and exit 9, naming the other messages that came meanwhile; a refusal
// before the hand-over, or any refusal of a send that did not await, is
// the error itself.
func TestSentNoReplyIsAReceipt(t *testing.T) {
	res := SendResult{OtherInbound: []domain.Inbound{{From: "uds:/x", FromName: "other", Text: "hello"}}}
	res.Outcome, res.Confirmed = domain.OutcomeDelivered, true
	noReply := domain.Refuse(domain.ReasonNoReply, "no reply within 2m0s")
	sent, err := Sent(res, noReply, true)
	require.NoError(t, err)
	assert.False(t, sent.Receipt.OK)
	assert.Equal(t, wire.ExitNoReply, sent.Code)
	assert.Equal(t, "no_reply", sent.Receipt.Refusal.Reason)
	require.Len(t, sent.Receipt.OtherInbound, 1)
	assert.Equal(t, []string{`peerctl: note: a message from "other" (uds:/x) arrived meanwhile; it is not the reply: hello`, "peerctl: " + noReply.Error()}, sent.Notes)

	_, err = Sent(res, noReply, false)
	assert.Equal(t, noReply, err, "not awaited: the refusal is the error")
	notLive := domain.Refuse(domain.ReasonNotLive, "no live session")
	_, err = Sent(SendResult{}, notLive, true)
	assert.Equal(t, notLive, err)
	boom := errors.New("boom")
	_, err = Sent(SendResult{}, boom, true)
	assert.Equal(t, boom, err)

	res.Reply = &domain.Inbound{Text: "green", FromName: "proj"}
	sent, err = Sent(res, nil, true)
	require.NoError(t, err)
	assert.True(t, sent.Receipt.OK)
	assert.Equal(t, "green", sent.Receipt.Reply.Text)
	assert.Equal(t, wire.ExitOK, sent.Code)
}

// A send refused after it reached its target keeps what is known of the
// attempt in its receipt (ok false): the service's record of it (peerctl
// serve's Messages) names the session, the outcome and the transport.
func TestSentRefusedKeepsTheAttempt(t *testing.T) {
	res := SendResult{Receipt: domain.Receipt{Outcome: "posted", Transport: "socket"}}
	res.Outcome = domain.OutcomePosted
	refused := domain.Refuse(domain.ReasonDeliveryFailed, "not confirmed")
	sent, err := Sent(res, refused, false)
	assert.Equal(t, refused, err)
	assert.False(t, sent.Receipt.OK)
	assert.Equal(t, "posted", sent.Receipt.Outcome)
	assert.Equal(t, "socket", sent.Receipt.Transport)
	assert.Empty(t, sent.Notes)
}

// Notes name what other senders and the registry wrote: each part is
// escaped where the note is made, so the note's own quotes stay quotes.
func TestSentNotesEscapeTheirParts(t *testing.T) {
	res := SendResult{OtherInbound: []domain.Inbound{{From: "uds:/x", FromName: "rev\x1b[2J", Text: "two\nlines"}}}
	res.Outcome = domain.OutcomePosted
	res.ConfirmNote = "no enqueue line in /cfg/x\u202e.jsonl"
	sent, err := Sent(res, nil, true)
	require.NoError(t, err)
	require.Len(t, sent.Notes, 2)
	assert.Equal(t, `peerctl: note: a message from "rev\x1b[2J" (uds:/x) arrived meanwhile; it is not the reply: two\nlines`, sent.Notes[0])
	assert.Contains(t, sent.Notes[1], `peerctl: warning: posted, not confirmed: no enqueue line in /cfg/x\u202e.jsonl; `)
}

// A receipt is one line: what happened and how it is known, for each way
// a harness's receipt can come, never "delivered" beside "not yet read".
func TestReceiptLine(t *testing.T) {
	target := wire.Receipt{Name: "proj-89", SessionID: "26df9a5b", PID: 4652, TransportMs: 712}
	courier := target
	courier.Transport, courier.MsgID = "courier", "0d9c"
	courier.ClaudeResult = "“peerctl” → uds:/tmp/cc-socks/4652.sock; in that session's inbox, not yet read by its Claude"
	cases := map[string]struct {
		edit func(*wire.Receipt)
		want string
	}{
		"courier, seen in the transcript": {func(r *wire.Receipt) {
			*r = courier
			r.Outcome, r.Confirmed, r.ConfirmedAt, r.ConfirmMs = "delivered", true, "2026-12-06T18:00:00Z", 120
		}, `delivered: "proj-89" (session 26df9a5b, pid 4652) by courier in 712ms (msg_id 0d9c): its transcript shows the text in the session's queue (seen in 120ms)`},
		"courier, not seen": {func(r *wire.Receipt) {
			*r = courier
			r.Outcome = "queued"
		}, `queued: "proj-89" (session 26df9a5b, pid 4652) by courier in 712ms (msg_id 0d9c): in Claude Code's words: “peerctl” → uds:/tmp/cc-socks/4652.sock; in that session's inbox, not yet read by its Claude`},
		"a harness's own receipt": {func(r *wire.Receipt) {
			*r = target
			r.Outcome, r.Transport, r.Confirmed, r.MsgID, r.Detail = "delivered", "inbox", true, "7f1e", "accepted"
		}, `delivered: "proj-89" (session 26df9a5b, pid 4652) by inbox in 712ms (msg_id 7f1e): the session's own receipt said so (accepted)`},
		"the transport's note, on another machine": {func(r *wire.Receipt) {
			*r = target
			r.Outcome, r.Transport, r.Host, r.Detail = "posted", "socket", "dev-box", "frame written; the socket gives no acknowledgement"
		}, `posted: "proj-89" (session 26df9a5b, pid 4652) on dev-box by socket in 712ms: frame written; the socket gives no acknowledgement`},
		// A held courier message: peerctl's words, not Claude Code's
		// notice written for a model (it stays in --json's claudeResult).
		"courier, held by a notice": {func(r *wire.Receipt) {
			*r = courier
			r.Outcome, r.ClaudeResult = "held", "[Cross-session delivery notice] ... Do not report it as delivered, do not wait for a reply ..."
			r.Detail = "the session holds it (a delivery notice said so); it may release it later"
		}, `held: "proj-89" (session 26df9a5b, pid 4652) by courier in 712ms (msg_id 0d9c): the session holds it (a delivery notice said so); it may release it later`},
		// One line for one message: the outbox's own word for its state
		// ("delivered": handed over) never stands beside the receipt's.
		"a durable send, not seen": {func(r *wire.Receipt) {
			*r = courier
			r.Outcome, r.Outbox = "queued", &wire.OutboxRef{ID: 3, State: "delivered"}
		}, `queued: "proj-89" (session 26df9a5b, pid 4652, outbox message 3) by courier in 712ms (msg_id 0d9c): in Claude Code's words: “peerctl” → uds:/tmp/cc-socks/4652.sock; in that session's inbox, not yet read by its Claude`},
	}
	for name, tc := range cases {
		var r wire.Receipt
		tc.edit(&r)
		assert.Equal(t, tc.want, ReceiptLine(r), name)
	}
}

// At the hand-over a courier's queued receipt, not yet judged by its
// confirmation, reads "handed over" without Claude Code's words (the
// confirmation's line follows); a judged or other receipt reads as
// ReceiptLine.
func TestHandedLine(t *testing.T) {
	r := wire.Receipt{Name: "proj-89", SessionID: "26df9a5b", PID: 4652, TransportMs: 712, Transport: "courier", MsgID: "0d9c",
		Outcome: "queued", ClaudeResult: "in that session's inbox, not yet read by its Claude"}
	assert.Equal(t, `handed over: "proj-89" (session 26df9a5b, pid 4652) by courier in 712ms (msg_id 0d9c)`, HandedLine(r))
	for _, edit := range []func(*wire.Receipt){
		func(r *wire.Receipt) {
			r.Outcome, r.Confirmed, r.ConfirmedAt = "delivered", true, "2026-12-06T18:00:00Z"
		},
		func(r *wire.Receipt) { r.Outcome, r.ClaudeResult, r.Transport = "held", "", "inbox" },
	} {
		o := r
		edit(&o)
		assert.Equal(t, ReceiptLine(o), HandedLine(o))
	}
}
