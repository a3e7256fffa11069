// Command peerctl finds the live Claude Code sessions on this machine and
// delivers a message into one of them, safely. Run `peerctl --help`.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

// run executes one command line and returns the process exit code.
// SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed, the SSH
// connection dropped) cancel the command's context, so a running courier's
// whole process group is ended and the send ends as canceled (exit 5)
// instead of peerctl dying and leaving the courier behind.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cli := newCLI(stdin, stdout, stderr, getenv)
	return cli.execute(ctx, args)
}
