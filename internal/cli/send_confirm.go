package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
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
	fs.BoolVar(&f.noConfirm, "no-confirm", false, "do not read the transcript: the outcome is the transport's word")
	fs.BoolVar(&f.require, "require-confirm", false, "exit 5 unless the transcript has the text")
	fs.DurationVar(&f.timeout, "confirm-timeout", app.DefaultConfirmTimeout, "how long to look for the text in the transcript")
	fs.DurationVar(&f.wait, "wait", 0, "then wait this long for its turn to end")
	fs.Lookup("wait").NoOptDefVal = shortDuration(defaultWait)
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
	status := safe(domain.StatusText(wt.Status, wt.WaitingFor))
	switch wt.End {
	case domain.WaitIdle.String():
		fmt.Fprintf(w, "wait: idle: the turn on the message has ended (%s)%s\n", elapsed, note)
	case domain.WaitExited.String():
		fmt.Fprintf(w, "wait: exited: the session ended (%s) after %s\n", safe(wt.Note), elapsed)
	case domain.WaitTimeout.String():
		fmt.Fprintf(w, "wait: timeout: %s; still %s after %s%s\n", wire.TakenUp(wt.TakenUpAt), status, elapsed, note)
	case domain.WaitInterrupted.String():
		fmt.Fprintf(w, "wait: interrupted: still %s after %s\n", status, elapsed)
	case domain.WaitFailed.String():
		fmt.Fprintf(w, "wait: failed: still %s after %s%s\n", status, elapsed, note)
	default:
		fmt.Fprintf(w, "wait: %s: %s after %s%s\n", safe(wt.End), status, elapsed, note)
	}
}
