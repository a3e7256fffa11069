package sshhost

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// Send runs `peerctl send --json` there with q's flags, then "--", the
// address and "-": the text goes on stdin, announced by --stdin-bytes, so
// that a text a broken connection cut is not sent there and a text that
// looks like a flag is never read as one. The call is bounded by the
// node's timeout plus q's own (its timeout, confirmation window, wait and
// reply wait). What it printed is read by wire.ReadSent; before the text
// was handed over, a host that could not be used is host_unreachable;
// after it, a lost connection is outcome_unknown, naming the host and how
// to look. Interrupted (ctx canceled), it takes what the far side says
// within InterruptGrace. A send that waits, under a ctx that asks for its
// events (wire.WithSendEvents), asks the far side for them
// (wire.SendEventsEnv) and tells each as it arrives; a far peerctl that
// prints none (an older one) gives its receipt at the end as before. A
// query for a settled target (q.Settled) asks with wire.SendSettledEnv.
func (n *Node) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout+q.Timeout+q.ConfirmTimeout+q.Wait+q.AwaitReply)
	defer cancel()
	call := ports.RemoteCall{Dest: n.dest, Args: sendArgs(q), Stdin: strings.NewReader(q.Text), Grace: InterruptGrace}
	if q.Settled {
		call.Env = append(call.Env, wire.SendSettledEnv+"=1")
	}
	var broken error
	if events := wire.SendEventsFrom(ctx); events != nil && (q.Wait > 0 || q.AwaitReply > 0) {
		call.Env = append(call.Env, wire.SendEventsEnv+"=1")
		call.Lines = func(line []byte) bool {
			ev, ok, err := wire.ReadSendEvent(n.dest, line)
			switch {
			case err != nil:
				broken = cmp.Or(broken, err)
			case ok && broken == nil:
				events(ev)
			}
			return ok
		}
	}
	res, err := n.remote.Call(ctx, call)
	if err == nil && broken != nil {
		// The receipt document still says what was done; the event that
		// could not be read is not told.
		res.Stderr = append(res.Stderr, []byte("\npeerctl: warning: "+wire.Safe(broken.Error())+"\n")...)
	}
	if err != nil {
		if errors.Is(err, ports.ErrConnectionLost) && !q.DryRun {
			r, _ := domain.AsRefusal(err)
			return wire.Sent{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown, Err: err,
				Detail: fmt.Sprintf("%s, after the text was handed over to it: it may have been delivered; look (%s) before sending it again", r.Detail, wire.Look(n.dest, q.Address))}
		}
		return wire.Sent{}, err
	}
	return wire.ReadSent(n.dest, res, q)
}

// InterruptGrace is how long an interrupted send (Ctrl-C) waits for the
// far side's peerctl, told that its caller is gone, to say what it did: a
// receipt it prints by then (delivered, and no_reply "interrupted before a
// reply came" for --await-reply) is the send's, as a send interrupted here
// reads; past it the send is outcome_unknown.
const InterruptGrace = 10 * time.Second

// sendArgs are the far side's `peerctl send` words for q.
func sendArgs(q wire.SendQuery) []string {
	a := []string{"send", "--stdin-bytes=" + strconv.Itoa(len(q.Text)), "--timeout=" + q.Timeout.String(), "--confirm-timeout=" + q.ConfirmTimeout.String(), "--json"}
	if q.Transport != "" {
		a = append(a, "--transport="+q.Transport)
	}
	if q.From != "" {
		a = append(a, "--from="+q.From)
	}
	for flag, on := range map[string]bool{"--dry-run": q.DryRun, "--no-confirm": q.NoConfirm, "--require-confirm": q.RequireConfirm} {
		if on {
			a = append(a, flag)
		}
	}
	if q.Wait > 0 {
		a = append(a, "--wait="+q.Wait.String())
	}
	if q.AwaitReply > 0 {
		a = append(a, "--await-reply="+q.AwaitReply.String())
	}
	return append(a, "--", q.Address, "-")
}
