package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

// Send runs `peerctl send --json` there with q's flags, then "--", the
// address and "-": the text goes on stdin, announced by --stdin-bytes, so
// that a text a broken connection cut is not sent there and a text that
// looks like a flag is never read as one. The call is bounded by the
// node's timeout plus q's own (its timeout, confirmation window, wait and
// reply wait). A refusal the far side printed is the error (a
// *domain.Refusal with its reason); before the text was handed over, a
// host that could not be used is host_unreachable; after it, a lost
// connection, a crash (a panic, a kill), any output but a valid receipt,
// or a receipt for another session than the address names (wire.Agrees:
// naming both) is outcome_unknown, naming the host and how to look.
// Interrupted (ctx canceled), it takes what the far side says within
// InterruptGrace. A dry run sent nothing: its failures are the far side's
// own.
func (n *Node) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout+q.Timeout+q.ConfirmTimeout+q.Wait+q.AwaitReply)
	defer cancel()
	res, err := n.remote.Call(ctx, ports.RemoteCall{Dest: n.dest, Args: sendArgs(q), Stdin: strings.NewReader(q.Text), Grace: InterruptGrace})
	if err != nil {
		if errors.Is(err, ports.ErrConnectionLost) && !q.DryRun {
			r, _ := domain.AsRefusal(err)
			return wire.Sent{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown, Err: err,
				Detail: fmt.Sprintf("%s, after the text was handed over to it: it may have been delivered; look (%s) before sending it again", r.Detail, n.look(q))}
		}
		return wire.Sent{}, err
	}
	out, err := n.receipt(res, q)
	if err != nil {
		return wire.Sent{}, err
	}
	return wire.Sent{Receipt: out, Notes: wire.StderrLines(res.Stderr), Code: wire.KnownExit(res.Code)}, nil
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

// look is the command that shows the target there, quoted for a shell.
func (n *Node) look(q wire.SendQuery) string {
	return wire.Safe(domain.ShellCommand("peerctl", "show", "--host", n.dest.String(), q.Address))
}

// receipt reads the far side's `send --json` output: a receipt (also one
// with ok false beside a failing exit code: no_reply, wait_timeout), given
// its host, or the refusal it printed as the error; otherwise as Send says.
// A receipt must be whole (jsonexact.Complete) and agree with the call
// (checkReceipt) and be for the session the call named (wire.Agrees,
// else another says why not); a refusal whose reason this build does not know came
// after the text was handed over, so it is outcome_unknown.
func (n *Node) receipt(res ports.RemoteResult, q wire.SendQuery) (wire.Receipt, error) {
	dest := n.dest
	stdout := bytes.TrimSpace(res.Stdout)
	var refused wire.RefusalDoc
	if res.Code != 0 && jsonexact.Exact(stdout, &refused) == nil && jsonexact.Complete(stdout, refused) == nil {
		err := wire.Failure(dest, res)
		if r, ok := domain.AsRefusal(err); ok && r.Reason == domain.ReasonHostUnreachable && !q.DryRun {
			return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
				Detail: fmt.Sprintf("peerctl on %s refused after it had the text, in words this build cannot read (%s); it may have delivered it: look (%s) before sending it again",
					dest, r.Detail, n.look(q))}
		}
		return wire.Receipt{}, err
	}
	var out wire.Receipt
	var ep string
	err := errors.New("nothing on its stdout")
	if len(stdout) > 0 {
		err = jsonexact.Exact(stdout, &out)
	}
	if err == nil {
		err = jsonexact.Complete(stdout, out)
	}
	if err == nil {
		err = checkReceipt(out, res.Code, q)
	}
	if err == nil {
		ep, err = wire.HostEndpoint(dest, out.Endpoint)
	}
	if err == nil {
		named := wire.Named{Harness: out.Harness, Endpoint: out.Endpoint, PID: out.PID, SessionID: out.SessionID, Name: out.Name}
		if why := wire.Agrees(q.Address, named); why != nil {
			return wire.Receipt{}, n.another(why, q)
		}
	}
	switch {
	case err == nil:
	case res.Code != 0 && q.DryRun:
		return wire.Receipt{}, wire.Failure(dest, res)
	case res.Code != 0:
		// It had the text: a crash (a panic is exit 2), a kill or any other
		// failing exit without a receipt may have come after the delivery.
		return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("peerctl on %s ended with exit %d and no valid receipt (%s; %s); it had the text and may have delivered it: look (%s) before sending it again",
				dest, res.Code, wire.Safe(wire.Clip(err.Error(), 200)), lastWords(res.Stderr), n.look(q))}
	case q.DryRun:
		return wire.Receipt{}, wire.Broken(dest, err)
	default:
		r, _ := domain.AsRefusal(wire.Broken(dest, err))
		return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("%s; it had the text and may have delivered it: look (%s) before sending it again", r.Detail, n.look(q))}
	}
	out.Host, out.Endpoint = dest.String(), ep
	return out, nil
}

// another is the refusal of a whole receipt for another session than q
// named (why, wire.Agrees): after the hand-over, outcome_unknown (the far
// side had the text, and a session has it, or none); for a dry run, which
// sent nothing, a far side this build cannot trust (host_unreachable).
func (n *Node) another(why error, q wire.SendQuery) error {
	if q.DryRun {
		return domain.Refuse(domain.ReasonHostUnreachable, "peerctl on %s gave a dry run's receipt for another session: %v; it is not the answer of this build's peerctl; fix: %s",
			n.dest, why, wire.Safe(wire.InstallFix(n.dest)))
	}
	return domain.Refuse(domain.ReasonOutcomeUnknown, "peerctl on %s gave a receipt for another session: %v; it had the text and may have delivered it, to either: look (%s) before sending it again",
		n.dest, why, n.look(q))
}

// checkReceipt is why out, which the far side ended with exit code, is no
// receipt of q: its ok disagrees with the exit; an ok false that is not
// no_reply's or wait_timeout's with that very exit code; a plan for a send
// that was not a dry run (or none for one); a reply no one awaited; no
// session, outcome or transport.
func checkReceipt(out wire.Receipt, code int, q wire.SendQuery) error {
	switch r := out.Refusal; {
	case out.OK != (code == 0):
		return fmt.Errorf("a receipt with ok %t, and exit code %d", out.OK, code)
	case !out.OK && (r == nil || r.ExitCode != code ||
		(r.Reason != domain.ReasonNoReply.String() && r.Reason != domain.ReasonWaitTimeout.String())):
		return fmt.Errorf("a receipt with ok false that is not no_reply's or wait_timeout's with exit code %d", code)
	case out.OK && r != nil:
		return errors.New("a receipt with ok true and a refusal")
	case (out.Plan != nil) != q.DryRun:
		return fmt.Errorf("a receipt whose plan (%t) is not the dry run's (%t)", out.Plan != nil, q.DryRun)
	case out.Reply != nil && q.AwaitReply <= 0:
		return errors.New("a receipt with a reply no one awaited")
	case out.SessionID == "" || out.Outcome == "" || out.Transport == "":
		return errors.New("a receipt without its session, outcome or transport")
	}
	return nil
}

// lastWords is the last line a far side printed on stderr (a Go panic's
// own line, when it panicked), escaped and clipped, or "it said nothing".
func lastWords(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			return "its last words: " + wire.Safe(wire.Clip(strings.TrimSpace(l), 300))
		}
	}
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return "its last words: " + wire.Safe(wire.Clip(last, 300))
	}
	return "it said nothing"
}
