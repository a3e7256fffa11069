package qwenregistry_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/domain"
)

func TestQwenEndpoint(t *testing.T) {
	ep, err := qwenregistry.NewEndpoint(4242, "4981b98e-44f1-439d-abfe-247a52f5e39d", "/tmp/q:x/50%/4242.sock")
	require.NoError(t, err)
	s := ep.String()
	assert.Equal(t, "qwen-peer:v1:4242:4981b98e-44f1-439d-abfe-247a52f5e39d:/tmp/q%3Ax/50%25/4242.sock", s)
	back, err := domain.ParseEndpoint(s)
	require.NoError(t, err)
	assert.Equal(t, ep, back)
	assert.Equal(t, qwenregistry.Kind, back.Harness())
	other, err := domain.ParseEndpoint("other-peer:v1:4242:4981b98e-44f1-439d-abfe-247a52f5e39d:/tmp/q%3Ax/50%25/4242.sock")
	require.NoError(t, err)
	assert.NotEqual(t, ep, other, "the prefix is part of the identity")
	for _, bad := range []string{"qwen-peer:v2:1:s:/x", "qwen-peer:v1:01:s:/x", "qwen-peer:v1:1:s", "qwen-peer:v1:1::/x", "qwen-peer:v1:1:s:/x%2"} {
		_, err := domain.ParseEndpoint(bad)
		assert.ErrorIs(t, err, domain.ErrBadEndpoint, bad)
	}
}

// A second harness, for the endpoints of another prefix:
// this package imports no other harness's.
var _ = domain.RegisterHarness(domain.HarnessSpec{
	Word: "other", Title: "Other", Prefix: "other-peer:v1:", Pins: "session id",
	Unaddressable: func(domain.Record) string { return "" },
})

func qwenEntry(pid int, id, name string) domain.Entry {
	r := domain.Record{Harness: qwenregistry.Kind, File: itoa(pid) + ".json", PID: pid, SessionID: id, Name: name,
		SocketPath: "/run/q/" + itoa(pid) + ".sock", Kind: "tui"}
	return domain.Classify(r, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes})
}

func itoa(i int) string {
	b := []byte{}
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestResolveQwenEndpointPinsTheSessionID(t *testing.T) {
	before := qwenEntry(4242, "aaaaaaaa-1111-4111-8111-111111111111", "a-09")
	ep := before.Endpoint().String()
	require.Contains(t, ep, "qwen-peer:v1:4242:aaaaaaaa-")
	s, err := domain.Resolve([]domain.Entry{before}, ep)
	require.NoError(t, err)
	assert.Equal(t, qwenregistry.Kind, s.Harness())

	// /clear: same pid, same socket, new session id.
	after := qwenEntry(4242, "bbbbbbbb-2222-4222-8222-222222222222", "a-5c")
	_, err = domain.Resolve([]domain.Entry{after}, ep)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
	assert.Contains(t, r.Detail, "/clear and /resume")

	// A cc-peer endpoint with that pid does not reach the Qwen Code session.
	_, err = domain.Resolve([]domain.Entry{before}, "cc-peer:v1:4242:a-09:/run/q/4242.sock")
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
}

func TestQwenNamesAreNotTheIdentity(t *testing.T) {
	// Two Qwen Code sessions in one folder may share a name (2 hex digits
	// of the id): each is still sendable by id, the name alone is ambiguous.
	a := qwenEntry(100, "aaaaaaaa-1111-4111-8111-111111111111", "proj-3b")
	b := qwenEntry(200, "bbbbbbbb-2222-4222-8222-222222222222", "proj-3b")
	s, err := domain.Resolve([]domain.Entry{a, b}, "aaaaaaaa-1111-4111-8111-111111111111")
	require.NoError(t, err)
	assert.Equal(t, 100, s.PID())
	_, err = domain.Resolve([]domain.Entry{a, b}, "proj-3b")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok)
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
	assert.Len(t, r.Candidates, 2)

	// A Claude Code session named like a Qwen Code one: the name is
	// ambiguous, but each stays sendable by id (the courier cannot see the
	// Qwen Code session, so it does not count against the Claude one's name).
	c := domain.Classify(domain.Record{File: "300.json", PID: 300, SessionID: "cccccccc-3333-4333-8333-333333333333", Name: "proj-3b",
		SocketPath: "/tmp/cc-socks/300.sock", Kind: domain.KindInteractive}, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes})
	s, err = domain.Resolve([]domain.Entry{a, c}, "cccccccc-3333-4333-8333-333333333333")
	require.NoError(t, err)
	assert.Equal(t, domain.HarnessClaudeCode, s.Harness())
	_, err = domain.Resolve([]domain.Entry{a, c}, "proj-3b")
	r, ok = domain.AsRefusal(err)
	require.True(t, ok)
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
}

// A message over Qwen Code's cap is refused invalid_message before
// anything is sent, with the version the record publishes; one of the
// cap's size fits, and another harness keeps the 64 KiB cap.
func TestQwenMessageCap(t *testing.T) {
	e := qwenEntry(4242, "aaaaaaaa-1111-4111-8111-111111111111", "a-09")
	e.Record.Version = "0.24.4"
	s, err := domain.NewSession(e)
	require.NoError(t, err)
	atCap, err := domain.NewMessage(strings.Repeat("é", qwenregistry.MaxMessage/2))
	require.NoError(t, err)
	require.NoError(t, atCap.FitsFor(s))
	over, err := domain.NewMessage(atCap.Text() + "x")
	require.NoError(t, err)
	err = over.FitsFor(s)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonInvalidMessage, r.Reason)
	assert.Contains(t, r.Detail, "Qwen Code 0.24.4 takes at most 16384 bytes in one message")
	assert.Contains(t, r.Detail, "this one is 16385 bytes")

	other := e
	other.Record.Harness = domain.Harnesses()[len(domain.Harnesses())-1]
	require.Equal(t, "other", other.Record.Harness.String())
	o, err := domain.NewSession(other)
	require.NoError(t, err)
	big, err := domain.NewMessage(strings.Repeat("x", domain.MaxMessageBytes))
	require.NoError(t, err)
	assert.NoError(t, big.FitsFor(o))
}
