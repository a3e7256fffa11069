// Package natstest runs an embedded NATS server with JetStream for tests
// (github.com/nats-io/nats-server/v2: a test-only module, never linked by
// the programs).
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start runs a JetStream server on a free loopback port, its store in a
// temporary folder, until tb ends, and returns its URL (nats://...).
func Start(tb testing.TB) string {
	tb.Helper()
	return StartWith(tb, &server.Options{})
}

// StartWith is Start with opts (its Host, Port, JetStream and StoreDir are
// set here; users, accounts and limits are the caller's).
func StartWith(tb testing.TB, opts *server.Options) string {
	tb.Helper()
	opts.JetStream, opts.StoreDir = true, tb.TempDir()
	return start(tb, opts)
}

// StartPlain runs a server without JetStream (core NATS only) until tb
// ends, and returns its URL: a test answers the JetStream API itself.
func StartPlain(tb testing.TB) string {
	tb.Helper()
	return start(tb, &server.Options{})
}

func start(tb testing.TB, opts *server.Options) string {
	tb.Helper()
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("nats-server: %v", err)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		tb.Fatal("nats-server: not ready for connections within 30 s")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}
