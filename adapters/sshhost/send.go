package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/jsonexact"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// Send runs `peerctl send --json` there with q's flags, then "--", the
// address and "-": the text goes on stdin, announced by --stdin-bytes, so
// that a text a broken connection cut is not sent there and a text that
// looks like a flag is never read as one. The call is bounded by the
// node's timeout plus q's own (its timeout, confirmation window, wait and
// reply wait). A refusal the far side printed is the error (a
// *domain.Refusal with its reason); before the text was handed over, a
// host that could not be used is host_unreachable; after it, a lost
// connection, a crash (a panic, a kill) or any output but a valid receipt
// is outcome_unknown, naming the host and how to look. A dry run sent
// nothing: its failures are the far side's own.
func (n *Node) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout+q.Timeout+q.ConfirmTimeout+q.Wait+q.AwaitReply)
	defer cancel()
	res, err := n.remote.Call(ctx, ports.RemoteCall{Dest: n.dest, Args: sendArgs(q), Stdin: strings.NewReader(q.Text)})
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
func (n *Node) receipt(res ports.RemoteResult, q wire.SendQuery) (wire.Receipt, error) {
	dest := n.dest
	var refused wire.RefusalDoc
	if res.Code != 0 && jsonexact.Exact(bytes.TrimSpace(res.Stdout), &refused) == nil {
		return wire.Receipt{}, wire.Failure(dest, res)
	}
	var out wire.Receipt
	var ep string
	err := jsonexact.Exact(bytes.TrimSpace(res.Stdout), &out)
	if err == nil {
		ep, err = wire.HostEndpoint(dest, out.Endpoint)
	}
	switch {
	case err == nil && out.OK == (res.Code == 0):
	case res.Code != 0 && q.DryRun:
		return wire.Receipt{}, wire.Failure(dest, res)
	case res.Code != 0:
		// It had the text: a crash (a panic is exit 2), a kill or any other
		// failing exit without a receipt may have come after the delivery.
		return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("peerctl on %s ended with exit %d and no receipt (%s); it had the text and may have delivered it: look (%s) before sending it again",
				dest, res.Code, lastWords(res.Stderr), n.look(q))}
	case q.DryRun:
		return wire.Receipt{}, wire.Broken(dest, noReceipt(err))
	default:
		r, _ := domain.AsRefusal(wire.Broken(dest, noReceipt(err)))
		return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("%s; it had the text and may have delivered it: look (%s) before sending it again", r.Detail, n.look(q))}
	}
	out.Host, out.Endpoint = dest.String(), ep
	return out, nil
}

// lastWords is the last line a far side printed on stderr, escaped and
// clipped, or "it said nothing".
func lastWords(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return "its last words: " + wire.Safe(wire.Clip(last, 300))
	}
	return "it said nothing"
}

// noReceipt is why a far side's successful output is no receipt.
func noReceipt(err error) error {
	if err == nil {
		return errors.New("a receipt with ok false, and exit code 0")
	}
	return err
}
