package codex

import (
	"errors"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp"
)

// silentError is a daemon that took a connection and did not answer in
// time, in words that name it (see daemonSilent); it unwraps to the
// *codexapp.NoAnswerError, so it matches context.DeadlineExceeded.
type silentError struct {
	words string
	err   error
}

func (e *silentError) Error() string { return e.words }
func (e *silentError) Unwrap() error { return e.err }

// daemonSilent says err, when it is a *codexapp.NoAnswerError, as
//
//	the Codex app-server daemon (pid N) does not answer: it took the
//	connection on <socket> but did not answer <step> within <bound>; …
//
// naming the daemon of home's daemon.pid and, when <procRoot>/<pid>/stat
// says the process is stopped (state T or t: SIGSTOP, Ctrl-Z, a
// debugger), saying so and how to resume it. Any other error comes back
// as it is.
func daemonSilent(home, procRoot string, bound time.Duration, err error) error {
	var na *codexapp.NoAnswerError
	if !errors.As(err, &na) {
		return err
	}
	var silent *silentError
	if errors.As(err, &silent) {
		return err
	}
	pid := readDaemonPID(home)
	who := "the Codex app-server daemon (pid unknown: no readable daemon.pid)"
	if pid > 0 {
		who = fmt.Sprintf("the Codex app-server daemon (pid %d)", pid)
	}
	words := fmt.Sprintf("%s does not answer: it took the connection on %s but did not answer %s within %s", who, na.Socket, na.Step, bound)
	if state, stopped := stoppedState(procRoot, pid); stopped {
		words += fmt.Sprintf("; the process is stopped (state %c: SIGSTOP, Ctrl-Z or a debugger): `kill -CONT %d` resumes it", state, pid)
	} else {
		words += "; it may be hung or overloaded"
	}
	return &silentError{words: words, err: err}
}
