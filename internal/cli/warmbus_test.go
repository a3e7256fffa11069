//go:build unix

package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// busService is a service of the state folder env names, on the bus
// servers as node, that answers every "bus" request saying the node has
// no service, and records the ops it was asked.
func busService(t *testing.T, env map[string]string, servers, node string) func() []string {
	t.Helper()
	p, err := serve.PathsFor(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.Socket), 0o700))
	ln, err := wiring.ListenServe(p.Socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var mu sync.Mutex
	var ops []string
	go func() {
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				var req serve.Request
				if serve.ReadLine(bufio.NewReader(conn), &req) != nil {
					return
				}
				mu.Lock()
				ops = append(ops, req.Op)
				mu.Unlock()
				a := serve.Answer{Done: true, Code: wire.ExitError, Error: []byte("nats: no responders available for request"), BusFault: serve.BusNoService}
				if req.Op == "ping" {
					a = serve.Answer{Done: true, PID: os.Getpid(), Status: &serve.Status{Running: true, PID: os.Getpid(), StateDir: p.StateDir,
						Bus: &serve.BusStatus{Node: node, Servers: servers, OnBus: true}}}
				}
				_ = serve.WriteLine(conn, a)
			}()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ops...)
	}
}

// A command of peerctl (no bus client) given --host nats:NODE looks once
// at this machine's service on the bus, then hands it the one request
// (before, a send asked the service whether it was on the bus three
// times, a list twice: a connection and a status each).
func TestCarriedCommandLooksAtTheServiceOnce(t *testing.T) {
	const servers = "nats://127.0.0.1:4222"
	env := map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(),
		"PEERCTL_NATS": servers, "PEERCTL_NODE": "alpha"}
	ops := busService(t, env, servers, "alpha")
	for _, args := range [][]string{
		{"send", "--json", "--host", "nats:beta", "inbox", "the API changed"},
		{"list", "--json", "--host", "nats:beta"},
	} {
		before := len(ops())
		r := evRun(t, env, func(c *factory) { c.store = nil }, args...)
		assert.Equal(t, wire.ExitHostUnreachable, r.code, "%s", r.stderr)
		assert.Contains(t, r.stderr, "node beta has no service on the fleet's bus")
		assert.Equal(t, []string{"ping", "bus"}, ops()[before:], "%s", args[0])
	}
}
