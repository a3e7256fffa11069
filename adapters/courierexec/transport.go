package courierexec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

var (
	_ ports.Transport = (*Transport)(nil)
	_ ports.Heeding   = (*Transport)(nil)
	_ ports.Starting  = (*Transport)(nil)
)

// DefaultNoticeWindow is how long Deliver listens for a delivery notice
// after the send. Measured on 2.1.332: a held or refused notice reaches the
// courier about 0.5 s after SendMessage answered.
const DefaultNoticeWindow = 3 * time.Second

// SendMessageLimit is the largest serialized message Claude Code's
// SendMessage sends, in characters (measured on 2.1.328: "Message too large
// for cross-session delivery: the serialized message is 2,097,514
// characters and the limit is 1,048,576"). domain.MaxMessageBytes (64 KiB)
// is far below it: every valid message fits, and arrives intact (the live
// test sends one of exactly 64 KiB).
const SendMessageLimit = 1 << 20

func checkTarget(target domain.Session, msg domain.Message) error {
	if !target.Addressable() {
		return domain.Refuse(domain.ReasonNotAddressable, "%s: %s", target.Label(), target.Unaddressable())
	}
	if !filepath.IsAbs(target.SocketPath()) {
		return domain.Refuse(domain.ReasonNotAddressable, "%s: its socket path %q is not absolute", target.Label(), target.SocketPath())
	}
	if msg.IsZero() {
		return domain.Refuse(domain.ReasonInvalidMessage, "message is empty")
	}
	return nil
}

// Call is the SendMessage input the endpoint answers a send with, as JSON.
func Call(socket, text string) string {
	b, _ := json.Marshal(struct {
		To      string `json:"to"`
		Message string `json:"message"`
		Summary string `json:"summary"`
	}{"uds:" + socket, text, Summary})
	return string(b)
}

// Plan describes the run: the program as Deliver would start it (resolved
// on PATH, made absolute), argv, the private folder's pattern, and the one
// SendMessage call the endpoint would answer with. A dry run sends
// nothing, so a program that cannot be found is no refusal: the plan names
// it as configured, with Plan.Warning saying a real send would fail.
func (t *Transport) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := checkTarget(target, msg); err != nil {
		return domain.Plan{}, err
	}
	var warning string
	program, err := t.lookProgram()
	if err != nil {
		program = t.cfg.Program
		warning = fmt.Sprintf("the courier program %q was not found (%v): a real send would fail with %s; install Claude Code, or set --claude or %s, or send --transport socket, which needs no claude",
			t.cfg.Program, unwrapExec(err), domain.ReasonDeliveryFailed, ProgramEnv)
	}
	return domain.Plan{Transport: Name, Program: program, Argv: append([]string{program}, t.Args()...),
		Dir: filepath.Join(os.TempDir(), PrivateDirPattern, "work"), Call: Call(target.SocketPath(), msg.Text()), Warning: warning}, nil
}

// Deliver runs one courier for msg to target: Start, one Send, then it
// listens for a delivery notice about the message for Config.NoticeWindow
// and closes the courier. The receipt's outcome is "queued" ("held" when a
// held notice came); a refused notice is a ReasonDeliveryFailed refusal.
func (t *Transport) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	rec, heed, err := t.DeliverHeeding(ctx, target, msg)
	if err != nil {
		return rec, err
	}
	wctx, cancel := context.WithTimeout(ctx, t.cfg.NoticeWindow)
	defer cancel()
	return heed(wctx)
}

// DeliverHeeding starts a courier bounded by Config.Timeout (or ctx's
// earlier deadline), sends msg to target's socket and returns the receipt
// (outcome "queued", Claude Code's msg_id and words) while the courier
// still runs; heed listens for a notice about that msg_id until its
// context ends, then closes the courier (see ports.Heeding). On error
// nothing is left running and heed is nil.
func (t *Transport) DeliverHeeding(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, ports.Heed, error) {
	if err := checkTarget(target, msg); err != nil {
		return domain.Receipt{}, nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	c, err := t.Start(lctx)
	if err != nil {
		cancel()
		return domain.Receipt{}, nil, err
	}
	res, err := c.Send(lctx, target.SocketPath(), msg.Text())
	if err != nil {
		_ = c.Close()
		if r, ok := domain.AsRefusal(err); ok && lctx.Err() != nil && ctx.Err() == nil {
			r.Detail = fmt.Sprintf("courier timed out after %s: %s", t.cfg.Timeout, r.Detail)
			if rest, ok := strings.CutPrefix(r.Short, shortTimedOut); ok {
				r.Short = fmt.Sprintf("courier timed out after %s%s", t.cfg.Timeout, rest)
			}
		}
		cancel()
		return domain.Receipt{}, nil, err
	}
	rec := queued(res)
	heed := func(hctx context.Context) (domain.Receipt, error) {
		defer cancel()
		defer func() { _ = c.Close() }()
		return heedNotice(hctx, c, rec)
	}
	return rec, heed, nil
}

// heedNotice waits for a delivery notice naming rec.MsgID on c's Inbound
// until ctx ends (or the courier ends), and returns rec turned by it
// (domain.Notice.Apply).
func heedNotice(ctx context.Context, c *Courier, rec domain.Receipt) (domain.Receipt, error) {
	for {
		select {
		case <-ctx.Done():
			return rec, nil
		case <-c.Done():
			return rec, nil
		case in, ok := <-c.Inbound():
			if !ok {
				return rec, nil
			}
			if in.Kind != InboundNotice {
				continue
			}
			n := domain.Notice{MsgID: in.MsgID, Verdict: in.Verdict, Text: in.Text, At: in.At}
			if out, ok, err := n.Apply(rec); ok {
				return out, err
			}
		}
	}
}

// queued is the receipt of a send Claude Code's SendMessage accepted.
func queued(res SendResult) domain.Receipt {
	return domain.Receipt{Transport: Name, Outcome: domain.OutcomeQueued.String(), MsgID: res.MsgID, ClaudeResult: res.Message,
		Detail: fmt.Sprintf("Claude Code's SendMessage put it in the session's inbox (msg_id %s)", res.MsgID)}
}
