// Command listener stands in for a Claude Code session's inbox socket in
// scripts/bench.sh: it listens on a Unix socket, and for each connection
// reads what is posted (up to 1 MiB, until the poster half-closes) and
// closes, without replying, as Claude Code 2.1.328 does. It exits on
// SIGINT/SIGTERM or after -lifetime, removing its socket.
//
//	listener -socket PATH [-lifetime 15m]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	path := flag.String("socket", "", "Unix socket path to listen on")
	lifetime := flag.Duration("lifetime", 15*time.Minute, "exit after this long")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "listener: -socket PATH is required")
		os.Exit(2)
	}
	if err := run(*path, *lifetime); err != nil {
		fmt.Fprintf(os.Stderr, "listener: %v\n", err)
		os.Exit(1)
	}
}

func run(path string, lifetime time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, lifetime)
	defer cancel()
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close() // also removes the socket file
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		go serve(conn)
	}
}

// serve reads the post within 5 s and closes the connection.
func serve(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}
