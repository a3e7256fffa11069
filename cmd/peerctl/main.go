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
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cli := newCLI(stdin, stdout, stderr, getenv)
	return cli.execute(ctx, args)
}
