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

// args are the far side's `peerctl send` words: the flags, "--", the
// address and "-": the text goes on stdin, announced by --stdin-bytes so
// that a text cut by a broken connection is not sent there.
func (s hostSend) args() []string {
	a := []string{"send", intArg(stdinBytesFlag, len(s.text)), durationArg("timeout", s.timeout), durationArg("confirm-timeout", s.confirm.timeout)}
	if s.asJSON {
		a = append(a, "--json")
	}
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

// sendHost is send --host: the far side's peerctl sends, and its receipt
// (or refusal) is printed here. Its text output passes through, escaped;
// its JSON is read with exact keys and given the host.
func (c *cli) sendHost(ctx context.Context, dest domain.Dest, s hostSend) error {
	res, err := c.runHostSend(ctx, dest, s)
	if err != nil {
		return err
	}
	if !s.asJSON {
		c.passLines(res.Stderr)
		if _, err := fmt.Fprint(c.stdout, safeText(string(res.Stdout))); err != nil {
			return err
		}
		if code := remoteExitCode(res.Code); code != exitOK {
			return silentError{code: code}
		}
		return nil
	}
	out, err := hostReceipt(dest, res)
	if err != nil {
		return err
	}
	c.passLines(res.Stderr)
	if err := c.writeJSON(out); err != nil {
		return err
	}
	if code := remoteExitCode(res.Code); code != exitOK {
		return silentError{code: code}
	}
	return nil
}

// hostReceipt reads the far side's `send --json` output: a receipt (also
// one with ok false: no_reply, wait_timeout), given its host, or the
// refusal it printed as the error.
func hostReceipt(dest domain.Dest, res ports.RemoteResult) (receiptJSON, error) {
	var refused refusalJSON
	if res.Code != exitOK && jsonexact.Exact(bytes.TrimSpace(res.Stdout), &refused) == nil {
		return receiptJSON{}, remoteFailure(dest, res)
	}
	var out receiptJSON
	if err := jsonexact.Exact(bytes.TrimSpace(res.Stdout), &out); err != nil {
		if res.Code == exitOK {
			return receiptJSON{}, brokenRemote(dest, err)
		}
		return receiptJSON{}, remoteFailure(dest, res)
	}
	out.Host, out.Endpoint = dest.String(), hostEndpoint(dest, out.Endpoint)
	return out, nil
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
