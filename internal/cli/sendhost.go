package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/jsonexact"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// hostSend is one send to a session on another machine: send's flags,
// which the far side's peerctl is given as they are.
type hostSend struct {
	address, text, transport, from string
	timeout, await                 time.Duration
	dryRun, asJSON                 bool
	confirm                        confirmFlags
}

// args are the far side's `peerctl send --json` words: the flags, "--", the
// address and "-": the text goes on stdin, announced by --stdin-bytes so
// that a text cut by a broken connection is not sent there.
func (s hostSend) args() []string {
	a := []string{"send", intArg(stdinBytesFlag, len(s.text)), durationArg("timeout", s.timeout), durationArg("confirm-timeout", s.confirm.timeout), "--json"}
	if s.transport != "" {
		a = append(a, "--transport="+s.transport)
	}
	if s.from != "" {
		a = append(a, "--from="+s.from)
	}
	for flag, on := range map[string]bool{"--dry-run": s.dryRun, "--no-confirm": s.confirm.noConfirm, "--require-confirm": s.confirm.require} {
		if on {
			a = append(a, flag)
		}
	}
	if s.confirm.wait > 0 {
		a = append(a, durationArg("wait", s.confirm.wait))
	}
	if s.await > 0 {
		a = append(a, durationArg("await-reply", s.await))
	}
	return append(a, "--", s.address, "-")
}

// run sends on dest's peerctl. A connection lost once the text was handed
// over is outcome_unknown: the far side may have delivered it.
func (c *cli) runHostSend(ctx context.Context, dest domain.Dest, s hostSend) (ports.RemoteResult, error) {
	res, err := c.callHost(ctx, dest, s.args(), strings.NewReader(s.text), s.timeout+s.confirm.timeout+s.confirm.wait+s.await)
	if err != nil && errors.Is(err, ports.ErrConnectionLost) && !s.dryRun {
		r, _ := domain.AsRefusal(err)
		return res, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown, Err: err,
			Detail: fmt.Sprintf("%s, after the text was handed over to it: it may have been delivered; look (%s) before sending it again", r.Detail, safe(domain.ShellCommand("peerctl", "show", "--host", dest.String(), s.address)))}
	}
	return res, err
}

// sendHost is send --host: the far side's peerctl sends and prints its
// receipt (or refusal) as JSON, always; it is read with exact keys, given
// its host, and printed here, as JSON or as text. Its stderr (warnings,
// the refusal of an ok:false receipt) passes through, escaped.
func (c *cli) sendHost(ctx context.Context, dest domain.Dest, s hostSend) error {
	res, err := c.runHostSend(ctx, dest, s)
	if err != nil {
		return err
	}
	out, err := hostReceipt(dest, res, s)
	if err != nil {
		return err
	}
	return c.printHostSend(dest, res, out, s)
}

// printHostSend prints a far side's receipt out (given c.outbox, for a
// durable send) and passes its stderr on; its exit code is this one's.
func (c *cli) printHostSend(dest domain.Dest, res ports.RemoteResult, out wire.Receipt, s hostSend) error {
	c.passLines(res.Stderr)
	out.Outbox = c.outbox
	var err error
	if s.asJSON {
		err = c.writeJSON(out)
	} else {
		err = c.printHostReceipt(out, s.await > 0)
	}
	if err != nil {
		return err
	}
	if code := remoteExitCode(res.Code); code != exitOK {
		return silentError{code: code}
	}
	return nil
}

// hostReceipt reads the far side's `send --json` output: a receipt (also
// one with ok false, and a failing exit code: no_reply, wait_timeout),
// given its host, or the refusal it printed as the error. A far side that
// exited 0 without a valid ok receipt, or failed without a receipt or a
// refusal (a crash after reading the text), is outcome_unknown (it had the
// text), host_unreachable or its own failure for a dry run.
func hostReceipt(dest domain.Dest, res ports.RemoteResult, s hostSend) (wire.Receipt, error) {
	var refused wire.RefusalDoc
	if res.Code != exitOK && jsonexact.Exact(bytes.TrimSpace(res.Stdout), &refused) == nil {
		return wire.Receipt{}, wire.Failure(dest, res)
	}
	var out wire.Receipt
	var ep string
	err := jsonexact.Exact(bytes.TrimSpace(res.Stdout), &out)
	if err == nil {
		ep, err = wire.HostEndpoint(dest, out.Endpoint)
	}
	switch {
	case err == nil && out.OK == (res.Code == exitOK):
	case res.Code != exitOK && s.dryRun:
		return wire.Receipt{}, wire.Failure(dest, res)
	case res.Code != exitOK:
		// It had the text: a crash (a panic is exit 2), a kill or any other
		// failing exit without a receipt may have come after the delivery.
		return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("peerctl on %s ended with exit %d and no receipt (%s); it had the text and may have delivered it: look (%s) before sending it again",
				dest, res.Code, lastStderrLine(res.Stderr), safe(domain.ShellCommand("peerctl", "show", "--host", dest.String(), s.address)))}
	case s.dryRun:
		return wire.Receipt{}, wire.Broken(dest, noReceipt(err))
	default:
		r, _ := domain.AsRefusal(wire.Broken(dest, noReceipt(err)))
		return wire.Receipt{}, &domain.Refusal{Reason: domain.ReasonOutcomeUnknown,
			Detail: fmt.Sprintf("%s; it had the text and may have delivered it: look (%s) before sending it again", r.Detail, safe(domain.ShellCommand("peerctl", "show", "--host", dest.String(), s.address)))}
	}
	out.Host, out.Endpoint = dest.String(), ep
	return out, nil
}

// lastStderrLine is the last line a far side printed on stderr, escaped
// and clipped, or "it said nothing".
func lastStderrLine(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return "its last words: " + safe(clipText(last, 300))
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

// printHostReceipt prints a far side's receipt as text (printReceiptText):
// on stdout, or on stderr when the reply takes stdout (--await-reply),
// then the reply on stdout.
func (c *cli) printHostReceipt(out wire.Receipt, awaited bool) error {
	w := c.stdout
	if awaited {
		w = c.stderr
	}
	printReceiptText(w, out)
	if out.Reply == nil || out.Plan != nil {
		return nil
	}
	return c.printReplyText(*out.Reply)
}

// passLines prints a far side's stderr as it is, line by line, escaped:
// its refusal word stays first ("peerctl: not_live: ...").
func (c *cli) passLines(stderr []byte) {
	for _, l := range strings.Split(strings.TrimRight(string(stderr), "\n"), "\n") {
		if l != "" {
			fmt.Fprintln(c.stderr, safe(clipText(l, 4000)))
		}
	}
}
