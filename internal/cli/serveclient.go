package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/servesock"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// serveStartWithin bounds an on-demand start of the service: from the
// program's start to its socket answering.
const serveStartWithin = 20 * time.Second

// serveLogName is the on-demand service's log, beside the outbox.
const serveLogName = "serve.log"

// serveOff reports whether PEERCTL_SERVE=off keeps this command from the
// service, or the platform has none.
func (c *cli) serveOff() bool { return c.getenv(serveEnv) == "off" || !serveSupported }

// dialServe connects to this user's service. With start, a service that
// does not answer is started in the background (peerctl serve, its stderr
// appended to serve.log in the state folder) and waited for, at most
// serveStartWithin; stderr says so once, with how to stop it.
func (c *cli) dialServe(ctx context.Context, start bool) (*net.UnixConn, error) {
	p, err := pathsFor(c.getenv)
	if err != nil {
		return nil, err
	}
	conn, err := dialUnix(p.socket)
	if err == nil || !start {
		return conn, err
	}
	exe, err := c.executable()
	if err != nil {
		return nil, fmt.Errorf("find peerctl to start its service: %w", err)
	}
	logPath := filepath.Join(p.stateDir, serveLogName)
	if err := servesock.PrivateDir(p.stateDir); err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	if err := servesock.PrivateFile(logPath); err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(exe, "serve")
	cmd.Env, cmd.Stdout, cmd.Stderr = c.environ(), log, log
	cmd.Dir = "/"
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(serveStartWithin)
	wait := 5 * time.Millisecond
	for {
		if conn, err := dialUnix(p.socket); err == nil {
			fmt.Fprintf(c.stderr, "peerctl: started peerctl serve in the background for %s (log: %s); it ends itself after %s with nothing to do; to stop it sooner: peerctl serve stop\n",
				safe(p.stateDir), safe(logPath), defaultQuiet)
			return conn, nil
		}
		select {
		case err := <-exited:
			// A service that lost the race to another one exits at once;
			// the other answers.
			if conn, derr := dialUnix(p.socket); derr == nil {
				return conn, nil
			}
			return nil, fmt.Errorf("peerctl serve ended at once (%v): see %s", err, logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("peerctl serve did not answer on %s within %s: see %s", p.socket, serveStartWithin, logPath)
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func dialUnix(path string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
}

// errForwardUnsent says the request never reached the service: the
// command may run here instead.
var errForwardUnsent = errors.New("the request did not reach the service")

// forward runs this command line in the service: the request is the
// command line, the environment and the text (stdin), the answer what the
// command printed and its exit code, which become this process's. A
// request that could not be written is errForwardUnsent (wrapped); an
// answer that does not come (the service died, Ctrl-C here) is an
// outcome_unknown refusal for a send (the service may have delivered it).
func (c *cli) forward(ctx context.Context, conn *net.UnixConn, stdin string) error {
	a, err := c.ask(ctx, conn, c.args, stdin)
	if err != nil {
		return err
	}
	_, _ = c.stdout.Write([]byte(a.Stdout))
	_, _ = c.stderr.Write([]byte(a.Stderr))
	if a.Code != wire.ExitOK {
		return silentError{a.Code}
	}
	return nil
}

// ask sends one run request (argv, this process's environment, stdin) on
// conn, closes it, and returns the service's answer; errors as forward's.
// A service that refused the connection (another uid's) answers before it
// hangs up: that answer is returned.
func (c *cli) ask(ctx context.Context, conn *net.UnixConn, argv []string, stdin string) (serveAnswer, error) {
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	r := bufio.NewReader(conn)
	var a serveAnswer
	if err := writeLine(conn, serveRequest{V: serveProtocol, Op: "run", Argv: argv, Env: c.environ(), Stdin: stdin}); err != nil {
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		if readLine(r, &a) == nil && a.Code != wire.ExitOK {
			return a, nil
		}
		return a, fmt.Errorf("%w: %v", errForwardUnsent, err)
	}
	if err := readLine(r, &a); err != nil {
		why := "the service's answer did not come"
		if ctx.Err() != nil {
			why = "interrupted while the service ran it"
		}
		return a, domain.Refuse(domain.ReasonOutcomeUnknown, "%s (%v): it may have been delivered; a durable message stays in the outbox (peerctl outbox)", why, err)
	}
	return a, nil
}

// outboxUnavailable is the refusal of a durable request that found no
// service to keep it.
func outboxUnavailable(err error) error {
	return &domain.Refusal{Reason: domain.ReasonOutboxUnavailable, Err: err,
		Detail: strings.TrimSuffix(err.Error(), ".") + "; nothing was stored (a send without --durable still works)"}
}
