// Package qweninbox delivers a message into a Qwen Code session through
// the inbox socket its record publishes (ipcPath), as Qwen Code's
// Cross-Session Protocol describes for outside programs (its docs:
// users/features/cross-session-protocol, frame v1; measured on 0.24.4,
// docs/QWEN-CODE-FACTS.md).
//
// One delivery: re-read the record for its ipcToken (checking that pid,
// session id and ipcPath have not moved), open a short-lived inbox of
// peerctl's own, connect to ipcPath and write, in one write, the auth line
// and one user frame:
//
//	{"msgV":1,"type":"auth","token":"<the record's ipcToken>"}
//	{"msgV":1,"msgId":"<fresh uuid>","type":"user","from":"<our inbox>","replyToken":"<fresh>",
//	 "fromName":"peerctl","fromMode":"prompting","toSessionId":"<record sessionId>",
//	 "priority":"next","message":{"role":"user","content":"<text>"}}
//
// then half-close and wait for the session to close (it never writes on
// that connection). The session answers on a new connection to our inbox
// with delivery_status receipts; the first one about our msgId decides the
// outcome: delivered or held succeed, refused, denied, misaddressed,
// expired and dropped are delivery_failed refusals carrying the status word
// and Qwen Code's reason. Unknown statuses are ignored. No receipt within
// the confirmation window is "posted".
//
// fromMode: peerctl claims "prompting", the review class of a sender whose
// actions a person approves: a send is a command someone ran. Qwen Code
// accepts a claim that matches its own class and holds the rest, so a
// session in 0.24.4's default approval mode (auto: "bypass") holds
// peerctl's messages for /peers accept, unless the session's setting
// agents.crossSessionInbound is "accept". peerctl never claims "bypass",
// which would skip that review on such sessions.
//
// The token is used for the auth line alone: it is never printed, logged,
// put in a plan or in an error.
package qweninbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Name is the transport's stable name.
const Name = "inbox"

// FromMode is the review class peerctl claims (see the package doc).
const FromMode = "prompting"

// FromName is the default sender name shown to the session's user
// (Config.FromName).
const FromName = "peerctl"

// DefaultTimeout bounds one delivery when Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// DefaultWindow is how long Deliver waits for a receipt when
// Config.Window is 0 (Qwen Code's own sender gives up after 5 s).
const DefaultWindow = 5 * time.Second

// Config shapes a Transport. The zero value is usable.
type Config struct {
	// Timeout bounds one delivery, the receipt wait included.
	Timeout time.Duration
	// Window is how long to wait for a receipt; negative: do not wait
	// (the outcome is "posted" once the session took the frame).
	Window time.Duration
	// InboxDir is where the reply inbox's folder is made ("":
	// $XDG_RUNTIME_DIR, else the temp folder).
	InboxDir string
	// FromName is the frame's fromName, the sender name the session's user
	// sees ("": FromName). Qwen Code flattens it to one line of at most
	// 200 characters.
	FromName string
	// Log hears each post to a session's inbox and each receipt at debug
	// level (never the token); nil: nothing is logged.
	Log *slog.Logger
}

// Transport is the Qwen Code inbox transport. Build it with New.
type Transport struct{ cfg Config }

var _ ports.Transport = (*Transport)(nil)

// New builds the transport.
func New(cfg Config) *Transport {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.FromName == "" {
		cfg.FromName = FromName
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Transport{cfg: cfg}
}

// Name returns "inbox".
func (t *Transport) Name() string { return Name }

func (t *Transport) check(target domain.Session) error {
	if target.Harness() != qwenregistry.Kind {
		return domain.Refuse(domain.ReasonHarnessUnsupported, "the inbox transport speaks Qwen Code's protocol; session %s is a %s session", target.ID(), target.Harness())
	}
	if !target.Addressable() {
		return domain.Refuse(domain.ReasonNotAddressable, "%s: %s", target.Label(), target.Unaddressable())
	}
	return nil
}

// Plan shows the user frame Deliver would write after the auth line (the
// reply token redacted; msgId and our inbox are drawn by a real run).
func (t *Transport) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := t.check(target); err != nil {
		return domain.Plan{}, err
	}
	f := t.frame(msg, target, "<fresh uuid>", "<peerctl's reply inbox>", "[redacted]")
	return domain.Plan{Transport: Name, Socket: target.SocketPath(), Frame: string(f)}, nil
}

// userFrame is the user frame, fields in the protocol doc's order.
type userFrame struct {
	MsgV        int         `json:"msgV"`
	MsgID       string      `json:"msgId"`
	Type        string      `json:"type"`
	From        string      `json:"from"`
	ReplyToken  string      `json:"replyToken"`
	FromName    string      `json:"fromName"`
	FromMode    string      `json:"fromMode"`
	ToSessionID string      `json:"toSessionId"`
	Priority    string      `json:"priority"`
	Message     userMessage `json:"message"`
}

type userMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (t *Transport) frame(msg domain.Message, target domain.Session, msgID, from, replyToken string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // one line, newline-terminated
	enc.SetEscapeHTML(false)
	_ = enc.Encode(userFrame{MsgV: 1, MsgID: msgID, Type: "user", From: from, ReplyToken: replyToken,
		FromName: t.cfg.FromName, FromMode: FromMode, ToSessionID: target.ID(), Priority: "next",
		Message: userMessage{Role: "user", Content: msg.Text()}})
	return b.Bytes()
}

func authLine(tok qwenregistry.Token) []byte {
	b, _ := json.Marshal(struct {
		MsgV  int    `json:"msgV"`
		Type  string `json:"type"`
		Token string `json:"token"`
	}{1, "auth", tok.Reveal()})
	return append(b, '\n')
}

// NewMsgID returns a fresh random UUID (version 4), a valid msgId.
func NewMsgID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func failed(format string, args ...any) *domain.Refusal {
	return domain.Refuse(domain.ReasonDeliveryFailed, format, args...)
}

// Deliver sends msg to target and reads its receipt (see the package doc).
func (t *Transport) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := t.check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return domain.Receipt{}, failed("not sent: %v", err)
	}
	in, err := OpenSenderInbox(t.cfg.InboxDir)
	if err != nil {
		return domain.Receipt{}, failed("%v; nothing was sent", err)
	}
	defer in.Close()
	return t.DeliverVia(ctx, in, target, msg)
}

// DeliverVia is Deliver with a reply inbox the caller opened (OpenInbox or
// OpenSenderInbox) and closes: the frame's from is in.Path(), so that once
// the receipt has decided the outcome, the caller can go on reading
// in.Messages() for the session's reply (a user frame sent to that
// address). Receipts are consumed here.
func (t *Transport) DeliverVia(ctx context.Context, in *Inbox, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := t.check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return domain.Receipt{}, failed("not sent: %v", err)
	}
	return t.deliverAwaiting(ctx, in, target, msg, NewMsgID(), in.Receipts())
}

// deliverAwaiting posts msg under msgID with in as its reply address and
// waits on receipts for the first one about msgID (see the package doc).
func (t *Transport) deliverAwaiting(ctx context.Context, in *Inbox, target domain.Session, msg domain.Message, msgID string, receipts <-chan Receipt) (domain.Receipt, error) {
	rec := target.Record()
	tok, err := qwenregistry.ReadToken(rec.Path, rec.PID, rec.SessionID, rec.SocketPath)
	if err != nil {
		return domain.Receipt{}, &domain.Refusal{Reason: domain.ReasonIdentityMismatch, Detail: err.Error() + "; nothing was sent", Err: err}
	}
	auth := authLine(tok)
	payload := append(auth, t.frame(msg, target, msgID, in.Path(), in.replyToken())...)
	err = post(ctx, target.SocketPath(), payload, len(auth))
	t.cfg.Log.Debug("inbox post", "socket", target.SocketPath(), "msgId", msgID, "replyInbox", in.Path(), "err", err)
	if err != nil {
		return domain.Receipt{}, err
	}
	if t.cfg.Window < 0 {
		return domain.Receipt{Transport: Name, Outcome: domain.OutcomePosted.String(), MsgID: msgID, Detail: "receipt not awaited"}, nil
	}
	wctx, wcancel := context.WithTimeout(ctx, t.cfg.Window)
	defer wcancel()
	for {
		select {
		case r := <-receipts:
			if !r.About(msgID) {
				continue
			}
			t.cfg.Log.Debug("inbox receipt", "msgId", msgID, "status", r.Status)
			switch r.Status {
			case "delivered", "held":
				return domain.Receipt{Transport: Name, Outcome: r.Status, MsgID: msgID, Detail: oneLine(statusReason(r))}, nil
			case "refused", "denied", "misaddressed", "expired", "dropped":
				ref := failed("Qwen Code answered %s: %s", r.Status, receiptDetail(msgID, r))
				ref.Status, ref.StatusReason = r.Status, statusReason(r)
				return domain.Receipt{}, ref
			}
			// An unknown status: a later Qwen Code's word; keep waiting.
		case <-wctx.Done():
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return domain.Receipt{Transport: Name, Outcome: domain.OutcomePosted.String(), MsgID: msgID,
					Detail: "interrupted before a receipt came"}, nil
			}
			return domain.Receipt{Transport: Name, Outcome: domain.OutcomePosted.String(), MsgID: msgID,
				Detail: fmt.Sprintf("no receipt within %s (receipts are best effort)", t.cfg.Window)}, nil
		}
	}
}

func statusReason(r Receipt) string {
	reason := r.Reason
	if r.DropReason != "" {
		if reason != "" {
			reason = r.DropReason + ": " + reason
		} else {
			reason = r.DropReason
		}
	}
	return reason
}

func receiptDetail(msgID string, r Receipt) string {
	d := "msgId " + msgID
	if why := statusReason(r); why != "" {
		d += "; " + oneLine(why)
	}
	return d
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// post connects to the session's inbox, writes payload in one write,
// half-closes and waits for the session to close (it reads the frame,
// then closes; it never writes). Bounded by ctx alone (the delivery's
// Timeout): a session on a loaded machine accepts and reads late — measured
// 4.5 s from connect to accept on a busy 2-core machine with 0.24.4 — and a
// frame it took late is not a failure. The text is in payload after its
// first auth bytes (the auth line): a failure before any of those left is
// delivery_failed (nothing was sent), one after is outcome_unknown (the
// session may have the frame).
func post(ctx context.Context, socket string, payload []byte, auth int) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return failed("connect to inbox %s: %v; nothing was sent", socket, err)
	}
	uc := c.(*net.UnixConn)
	defer uc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = uc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	unknown := func(format string, args ...any) error {
		return domain.Refuse(domain.ReasonOutcomeUnknown, format+"; the session may or may not have the message: look before sending again", args...)
	}
	if n, err := uc.Write(payload); err != nil {
		if n > auth {
			return unknown("write to inbox %s broke off after part of the frame: %v", socket, err)
		}
		return failed("write to inbox %s: %v; nothing was sent", socket, err)
	}
	if err := uc.CloseWrite(); err != nil {
		return unknown("the frame was written to inbox %s, then the half-close failed: %v", socket, err)
	}
	n, err := io.Copy(io.Discard, uc)
	switch {
	case err != nil && ctx.Err() != nil:
		return unknown("the frame was written to inbox %s, which had not closed the connection when the send ended: %v", socket, ctx.Err())
	case err != nil:
		return unknown("the frame was written to inbox %s, which did not close the connection: %v", socket, err)
	case n > 0:
		return unknown("the frame was written to inbox %s, which answered %d bytes on the sending connection, as Qwen Code never does", socket, n)
	}
	return nil
}
