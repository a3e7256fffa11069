package cli

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/ports/wire"
)

// answerOnce listens on a Unix socket at path and hands the first
// connection and the request read from it (ok: read whole) to answer.
func answerOnce(t *testing.T, path string, answer func(conn *net.UnixConn, req serve.Request, ok bool)) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer conn.Close()
		var req serve.Request
		ok := serve.ReadLine(bufio.NewReader(conn), &req) == nil
		answer(conn, req, ok)
	}()
}

// dyingService reads one request, says the message is stored when stored
// is not nil, and goes away without an answer (as a service killed with
// kill -9 between reading a request and answering it does).
func dyingService(t *testing.T, stored *serve.Ref) *net.UnixConn {
	path := filepath.Join(t.TempDir(), "s.sock")
	answerOnce(t, path, func(conn *net.UnixConn, _ serve.Request, ok bool) {
		if ok && stored != nil {
			_ = serve.WriteLine(conn, serve.Answer{Stored: stored})
		}
	})
	conn, err := dialUnix(path)
	require.NoError(t, err)
	return conn
}

// A client whose service goes away after the request was written says
// outcome_unknown with what to look at: the message's id when the service
// said it stored it, else the address and the key (exact, escaped); never
// that nothing was stored.
func TestClientOfADyingServiceSaysOutcomeUnknown(t *testing.T) {
	c := newFactory(strings.NewReader(""), nil, nil, func(string) string { return "" })
	order := &wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "hi"}, Durable: time.Hour, Key: "k\xff1"}
	for _, tc := range []struct {
		name   string
		stored *serve.Ref
		order  *wire.SendOrder
		want   []string
	}{
		{"stored", &serve.Ref{ID: 7}, order, []string{"stored the message as 7", "peerctl outbox show 7"}},
		{"not yet stored", nil, order, []string{"peerctl outbox --target reviewer", `key "k\xff1"`}},
		{"plain", nil, &wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "hi"}}, []string{"sending again may deliver it twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.serveClient().ask(context.Background(), dyingService(t, tc.stored), serve.Request{Op: "send", Send: tc.order})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
			for _, w := range tc.want {
				assert.Contains(t, r.Detail, w)
			}
			assert.NotContains(t, r.Detail, "nothing was stored")
		})
	}
}

// fleetService answers one "fleet" request with answer as written (a
// line, then a document), on the socket the environment getenv names.
func fleetService(t *testing.T, answer []byte) func(string) string {
	run, err := os.MkdirTemp("", "pc") // short: a socket's path is at most 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(run) })
	env := map[string]string{"XDG_RUNTIME_DIR": run, "XDG_STATE_HOME": t.TempDir(), "HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	p, err := serve.PathsFor(getenv)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.Socket), 0o700))
	answerOnce(t, p.Socket, func(conn *net.UnixConn, req serve.Request, ok bool) {
		if ok && req.Op == "fleet" && req.Doc {
			_, _ = conn.Write(answer)
		}
	})
	return getenv
}

// list --fleet's client of the service: a document as peerctl prints
// them is taken as it is (asDoc); one with a character a terminal acts
// on, or asked without asDoc, is read into sessions (and printed escaped,
// as list prints any listing); an older service's whole listing is read;
// a document over its bound, cut short or not JSON is no answer (the
// fleet is read from the bus instead).
func TestClientReadsTheServicesFleetDocument(t *testing.T) {
	s := wire.Session{Host: "nats:alpha", Harness: "claude-code", PID: 7, Name: "api\x1b[2J"}
	line := func(a serve.Answer) []byte {
		var b bytes.Buffer
		require.NoError(t, serve.WriteLine(&b, a))
		return b.Bytes()
	}
	var printed bytes.Buffer
	require.NoError(t, wire.EncodeJSON(&printed, []wire.Session{s}, "  ", false))
	head := serve.Answer{Done: true, Fleet: &wire.Listing{Partial: true, Notes: []string{"n"}}}
	withDoc := func(doc string) []byte {
		h := head
		h.FleetDoc = len(doc)
		return append(line(h), doc...)
	}
	raw := strings.Replace(printed.String(), `\u001b`, "\u202e", 1) // valid JSON, not as peerctl prints it
	for _, tc := range []struct {
		name   string
		answer []byte
		asDoc  bool
		ok     bool
		doc    string
		want   []wire.Session
	}{
		{"printed, as a document", withDoc(printed.String()), true, true, printed.String(), nil},
		{"printed, read", withDoc(printed.String()), false, true, "", []wire.Session{s}},
		{"not printed: read", withDoc(raw), true, true, "", []wire.Session{{Host: "nats:alpha", Harness: "claude-code", PID: 7, Name: "api\u202e[2J"}}},
		{"an older service's listing", line(serve.Answer{Done: true, Fleet: &wire.Listing{Sessions: []wire.Session{s}, Partial: true, Notes: []string{"n"}}}), true, true, "", []wire.Session{s}},
		{"over the bound", append(line(serve.Answer{Done: true, Fleet: &wire.Listing{}, FleetDoc: serve.MaxFleetDoc + 1}), "[]\n"...), true, false, "", nil},
		{"cut short", withDoc(printed.String())[:len(withDoc(printed.String()))-5], true, false, "", nil},
		{"not JSON", withDoc("{{\n"), false, false, "", nil},
		{"no fleet", line(serve.Answer{Done: true}), true, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFactory(strings.NewReader(""), nil, nil, fleetService(t, tc.answer))
			l, doc, ok := c.serveClient().fleet(context.Background(), "nats://a:4222", tc.asDoc)
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tc.doc, string(doc))
			assert.Equal(t, tc.want, l.Sessions)
			assert.True(t, l.Partial)
			assert.Equal(t, []string{"n"}, l.Notes)
		})
	}
}
