package sshhost

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strconv"

	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

var _ ports.HostExec = (*Channel)(nil)

// Exec runs words, a fixed command of peerctl's own that is not peerctl
// (`uname -sm`, the install script), on dest through the same ssh as
// Call: each word quoted (CommandLine), stdin handed over as it is read,
// stdout bounded by maxOutput (more: host_unreachable), the whole ssh
// group ended with the call. ssh's exit 255 (it could not connect or log
// in, the host key is unknown or changed, the connection dropped) is a
// host_unreachable refusal with ssh's last words; any other exit is the
// result's Code.
func (c *Channel) Exec(ctx context.Context, dest domain.Dest, words []string, stdin io.Reader, maxOutput int) (ports.RemoteResult, error) {
	if dest.IsLocal() {
		return ports.RemoteResult{}, errors.New("sshhost: no destination")
	}
	c.prepare(ctx, dest)
	argv := append(c.sshFor(dest), "--", dest.String(), CommandLine(words))
	c.opts.Log.Debug("ssh", "argv", argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	stdout, stderr := &procgroup.Output{Max: maxOutput + 1}, &procgroup.Output{Max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Stdin = stdin
	cmd.WaitDelay = waitDelay
	err := procgroup.Run(ctx, cmd)
	res := ports.RemoteResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Code: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	switch {
	case len(res.Stdout) > maxOutput:
		return res, c.unreachable(dest, nil, "%s printed more than %d bytes on %s", words[0], maxOutput, dest)
	case ctx.Err() != nil:
		return res, c.unreachable(dest, ctx.Err(), "no answer from %s before the call ended (%v)", dest, ctx.Err())
	case err != nil && !errors.As(err, &ee):
		return res, c.unreachable(dest, err, "cannot run %s: %v", argv[0], err)
	case res.Code == 255 || res.Code < 0:
		return res, c.unreachable(dest, nil, "ssh %s failed (exit %s): %s", dest, strconv.Itoa(res.Code), orNothing(lastLines(res.Stderr, 3)))
	}
	return res, nil
}
