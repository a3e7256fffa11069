package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wire"
)

// defaultWait is the deadline of a bare --wait.
const defaultWait = 10 * time.Minute

// confirmFlags are send's confirmation and wait flags.
type confirmFlags struct {
	noConfirm bool
	require   bool
	timeout   time.Duration
	wait      time.Duration
}

func (f *confirmFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&f.noConfirm, "no-confirm", false, "do not read the target's transcript; the outcome is the transport's word")
	fs.BoolVar(&f.require, "require-confirm", false, "exit 5 (delivery_failed) unless the transcript shows the text")
	fs.DurationVar(&f.timeout, "confirm-timeout", app.DefaultConfirmTimeout, "how long to look for the text in the transcript")
	fs.DurationVar(&f.wait, "wait", 0, "then wait at most this long for the turn on it to end (alone: "+defaultWait.String()+"; --wait=5m)")
	fs.Lookup("wait").NoOptDefVal = defaultWait.String()
}

// bareWaitDuration returns the flag and the duration written apart from a
// bare --wait or --await-reply ("--wait 5m"), which the flag parser takes
// as SESSION or TEXT while the flag waits its default; "" when there is
// none. Tokens after "--" are arguments, not flags.
func bareWaitDuration(args []string) (flag, duration string) {
	for i, a := range args {
		if a == "--" {
			return "", ""
		}
		if (a == "--wait" || a == "--await-reply") && i+1 < len(args) {
			if _, err := time.ParseDuration(args[i+1]); err == nil {
				return a, args[i+1]
			}
		}
	}
	return "", ""
}

func (f *confirmFlags) validate() error {
	switch {
	case f.noConfirm && f.require:
		return usageError{fmt.Errorf("--no-confirm and --require-confirm contradict each other")}
	case f.timeout <= 0:
		return usageError{fmt.Errorf("--confirm-timeout %s: want a positive duration such as 5s", f.timeout)}
	case f.wait < 0:
		return usageError{fmt.Errorf("--wait %s: want a positive duration such as 2m", f.wait)}
	}
	return nil
}

func (f *confirmFlags) options() app.ConfirmOptions {
	return app.ConfirmOptions{NoConfirm: f.noConfirm, ConfirmTimeout: f.timeout, RequireConfirm: f.require, Wait: f.wait}
}

func fillConfirm(out *wire.Receipt, res app.SendResult) {
	if res.Outcome != domain.OutcomeUnknown {
		out.Outcome = res.Outcome.String()
	}
	out.Confirmed, out.Transcript, out.ConfirmNote = res.Confirmed, res.Transcript, res.ConfirmNote
	out.ConfirmMs = res.ConfirmElapsed.Milliseconds()
	if res.Confirmed {
		out.ConfirmedAt = wire.RFC3339(res.Enqueued.At)
	}
	out.Wait = waitOf(res)
}

// waitOf is the receipt's "wait" object of res (nil without --wait).
func waitOf(res app.SendResult) *wire.Wait {
	if res.WaitEnd == domain.WaitNone {
		return nil
	}
	w := &wire.Wait{End: res.WaitEnd.String(), Status: res.WaitStatus.String(), ElapsedMs: res.WaitElapsed.Milliseconds(), Note: res.WaitNote}
	if !res.TakenUpAt.IsZero() {
		w.TakenUp, w.TakenUpAt = true, wire.RFC3339(res.TakenUpAt)
	}
	return w
}

// warnUnconfirmed says on stderr that a send is not confirmed, and why;
// nothing with --no-confirm (the user asked for no confirmation; the JSON
// receipt still says confirmed false and why). The note names the
// transcript path, built from registry data: it goes through safe.
func (c *cli) warnUnconfirmed(res app.SendResult) {
	if res.ByReceipt {
		// The receipt is the confirmation; held and posted say why not.
		if !res.Confirmed && !res.ConfirmSkipped {
			fmt.Fprintf(c.stderr, "peerctl: warning: %s, not delivered yet: %s; check before sending it again\n", res.Outcome, safe(res.ConfirmNote))
		}
		if res.WaitNote != "" && res.WaitEnd == domain.WaitNone {
			fmt.Fprintf(c.stderr, "peerctl: note: %s\n", safe(res.WaitNote))
		}
		return
	}
	if !res.Confirmed && !res.ConfirmSkipped {
		fmt.Fprintf(c.stderr, "peerctl: warning: %s, not confirmed: %s; %s\n", res.Outcome, safe(res.ConfirmNote), app.UnconfirmedHint)
	}
}

// printWait prints how a --wait ended (nothing for nil), from the
// receipt's "wait" object: a send here and a far side's alike. Notes carry
// paths and errors built from registry data: every one goes through safe.
func printWait(w io.Writer, wt *wire.Wait) {
	if wt == nil {
		return
	}
	elapsed := (time.Duration(wt.ElapsedMs) * time.Millisecond).String()
	note := ""
	if wt.Note != "" {
		note = "; " + safe(wt.Note)
	}
	status := safe(wt.Status)
	switch wt.End {
	case domain.WaitIdle.String():
		fmt.Fprintf(w, "wait: idle: the turn on the message has ended (%s)%s\n", elapsed, note)
	case domain.WaitExited.String():
		fmt.Fprintf(w, "wait: exited: the session ended (%s) after %s\n", safe(wt.Note), elapsed)
	case domain.WaitTimeout.String():
		fmt.Fprintf(w, "wait: timeout: %s; still %s after %s%s\n", takenUpWords(wt.TakenUpAt), status, elapsed, note)
	case domain.WaitInterrupted.String():
		fmt.Fprintf(w, "wait: interrupted: still %s after %s\n", status, elapsed)
	case domain.WaitFailed.String():
		fmt.Fprintf(w, "wait: failed: still %s after %s%s\n", status, elapsed, note)
	default:
		fmt.Fprintf(w, "wait: %s: %s after %s%s\n", safe(wt.End), status, elapsed, note)
	}
}

// takenUpWords says whether the target had taken the message up (at, RFC
// 3339; "" when not).
func takenUpWords(at string) string {
	if at == "" {
		return "not taken up yet"
	}
	return "taken up at " + safe(at)
}

// waitTimeout is the wait_timeout refusal of a wait that ran out (nil for
// any other ending): the message was handed over, the turn had not ended.
func waitTimeout(res app.SendResult) *domain.Refusal {
	if res.WaitEnd != domain.WaitTimeout {
		return nil
	}
	return domain.Refuse(domain.ReasonWaitTimeout, "%s, %s, but the turn on it had not ended after %s (status %s); it may still end: do not resend it",
		res.Outcome, takenUpWords(waitOf(res).TakenUpAt), res.WaitElapsed.Round(time.Millisecond), res.WaitStatus)
}

// printWaited prints a send's receipt; a wait that ran out adds the
// wait_timeout refusal (stderr, and "refusal" with ok false in JSON) and
// exits 11.
func (c *cli) printWaited(res app.SendResult, transport string, asJSON bool) error {
	r := waitTimeout(res)
	if r == nil {
		return c.printReceipt(c.stdout, res, transport, asJSON)
	}
	if asJSON {
		c.warnUnconfirmed(res)
		out := receiptFor(res)
		out.Outbox = c.outbox
		out.OK = false
		out.Refusal = &wire.RefusalBody{Reason: r.Reason.String(), Detail: r.Detail, ExitCode: exitCode(r.Reason)}
		if err := c.writeJSON(out); err != nil {
			return err
		}
	} else if err := c.printReceipt(c.stdout, res, transport, false); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "peerctl: %s\n", safe(r.Error()))
	return silentError{exitCode(r.Reason)}
}
