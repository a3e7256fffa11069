package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/portsmock"
	"github.com/peerctl/peerctl/ports/wire"
)

// rules is a ports.Policy of fixed rules (or a fixed error).
type rules struct {
	rules []domain.Rule
	err   error
}

func (r rules) Rules() ([]domain.Rule, error) { return r.rules, r.err }
func (rules) Save([]domain.Rule) error        { return errors.New("read-only") }
func (rules) Path() string                    { return "/cfg/peerctl/policy" }

// parents is a process tree: pid to parent pid.
type parents map[int]int

func (p parents) Parent(pid int) (int, error) { return p[pid], nil }

func mustRule(t *testing.T, action, from, to string) domain.Rule {
	r, err := domain.NewRule(action, from, to, "", "", "")
	require.NoError(t, err)
	return r
}

func policyWorld(t *testing.T, p rules, from app.Sending) world {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	w.svc = app.New(w.reg, w.live, w.trans, "/cfg", app.WithPolicy(p, from))
	w.registry([]domain.Record{record(4652, idA, "prod-api"), record(5031, idB, "reviewer-1")})
	return w
}

// A deny or hold rule refuses with not_allowed, naming the rule, and no
// transport runs (w.trans has no expectations); the sending session of an
// mcp entrance is the live session its process runs under.
func TestSendAsksThePolicy(t *testing.T) {
	p := rules{rules: []domain.Rule{mustRule(t, "allow", "mcp:reviewer-*", "prod-*"), mustRule(t, "deny", "mcp", "prod-*"), mustRule(t, "hold", "relay", "*")}}
	for name, tc := range map[string]struct {
		from app.Sending
		want string
	}{
		"an mcp of another session":   {app.Sending{Entrance: domain.EntranceMCP, PID: 900, Procs: parents{900: 800, 800: 1}}, "deny by rule 2 (deny from=mcp to=prod-*): mcp (its session not known) to \"prod-api\""},
		"a relay is held":             {app.Sending{Entrance: domain.EntranceRelay}, "hold by rule 3"},
		"a node, held by the default": {app.Sending{Entrance: domain.EntranceNode, Where: "box"}, "hold by default rule 1"},
	} {
		t.Run(name, func(t *testing.T) {
			w := policyWorld(t, p, tc.from)
			for _, dry := range []bool{false, true} {
				_, err := w.svc.Send(context.Background(), app.SendRequest{Address: "prod-api", Text: "rm -rf", DryRun: dry})
				r, ok := domain.AsRefusal(err)
				require.True(t, ok, "want a refusal, got %v", err)
				assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
				assert.Contains(t, r.Detail, tc.want)
			}
		})
	}
}

func TestSendAllowedByThePolicy(t *testing.T) {
	p := rules{rules: []domain.Rule{mustRule(t, "allow", "mcp:reviewer-*", "prod-*"), mustRule(t, "deny", "mcp", "prod-*")}}
	// pid 900 (peerctl mcp) runs under 5031, the reviewer-1 session.
	w := policyWorld(t, p, app.Sending{Entrance: domain.EntranceMCP, PID: 900, Procs: parents{900: 5031, 5031: 1}})
	w.trans.EXPECT().Deliver(gomock.Any(), gomock.Any(), gomock.Any()).Return(domain.Receipt{Transport: "fake", Outcome: "posted"}, nil).Times(1)
	_, err := w.svc.Send(context.Background(), app.SendRequest{Address: "prod-api", Text: "review done"})
	require.NoError(t, err)
}

// A policy file that cannot be used refuses every send: nothing is sent
// on rules peerctl could not read.
func TestSendRefusedWhenThePolicyCannotBeRead(t *testing.T) {
	w := policyWorld(t, rules{err: errors.New("/cfg/peerctl/policy: malformed policy file: line 3: holds a control character")}, app.Sending{Entrance: domain.EntranceCLI})
	_, err := w.svc.Send(context.Background(), app.SendRequest{Address: "prod-api", Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
	assert.Contains(t, r.Detail, "line 3")
}

// A far target is decided on its address and host (AllowedTo) before
// anything leaves; one here, as the session it resolves to.
func TestAllowedTo(t *testing.T) {
	deny, err := domain.NewRule("deny", "cli", "*", "", "far", "")
	require.NoError(t, err)
	w := policyWorld(t, rules{rules: []domain.Rule{deny}}, app.Sending{Entrance: domain.EntranceCLI})
	far, err := domain.ParseDest("far")
	require.NoError(t, err)
	near, err := domain.ParseDest("near")
	require.NoError(t, err)
	err = w.svc.AllowedTo(context.Background(), "prod-api", far)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Contains(t, r.Detail, "deny by rule 1 (deny from=cli to=* host=far)")
	assert.NoError(t, w.svc.AllowedTo(context.Background(), "prod-api", near))

	cwd, err := domain.NewRule("deny", "cli", "*", "", "", "/home/dev/src")
	require.NoError(t, err)
	w = policyWorld(t, rules{rules: []domain.Rule{cwd}}, app.Sending{Entrance: domain.EntranceCLI})
	err = w.svc.AllowedTo(context.Background(), "reviewer-1", domain.Dest{})
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.NotContains(t, r.Detail, "read the safe way", "a session here is decided on what its record says")
}

// A send that leaves this process (to peerctl serve) is decided without
// reading the registry when the rules allow every target here for its
// sender (no policy file: the command line); a rule that depends on the
// target reads it, and decides on the session.
func TestAllowedToReadsOnlyWhenTheTargetMatters(t *testing.T) {
	ctrl := gomock.NewController(t)
	reg := portsmock.NewMockRegistry(ctrl) // no Read expected
	svc := app.New(reg, portsmock.NewMockLiveness(ctrl), portsmock.NewMockTransport(ctrl), "/cfg", app.WithPolicy(rules{}, app.Sending{Entrance: domain.EntranceCLI}))
	require.NoError(t, svc.AllowedTo(context.Background(), "prod-api", domain.Dest{}))
	svc = app.New(reg, portsmock.NewMockLiveness(ctrl), portsmock.NewMockTransport(ctrl), "/cfg",
		app.WithPolicy(rules{rules: []domain.Rule{mustRule(t, "deny", "mcp", "*")}}, app.Sending{Entrance: domain.EntranceCLI}))
	require.NoError(t, svc.AllowedTo(context.Background(), "prod-api", domain.Dest{}), "another entrance's rule")

	w := policyWorld(t, rules{rules: []domain.Rule{mustRule(t, "deny", "cli", "prod-*")}}, app.Sending{Entrance: domain.EntranceCLI})
	err := w.svc.AllowedTo(context.Background(), idA, domain.Dest{})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "a deny by name, the target given by its id: want a refusal, got %v", err)
	assert.Contains(t, r.Detail, "deny by rule 1")
}

// A node's send the trust policy holds goes to Held (peerctl serve's hold
// use case: kept awaiting approval), with the query and the hold, and
// what Held answers is the send's; a deny is refused, never Held's; with
// no Held a hold is its refusal. No transport runs.
func TestLocalNodeSendHeldGoesToHeld(t *testing.T) {
	p := rules{rules: []domain.Rule{mustRule(t, "deny", "node:mallory", "*")}}
	for name, tc := range map[string]struct {
		node   string
		held   bool
		reason domain.Reason
	}{
		"held by the default":  {node: "alpha", held: true},
		"denied by a rule":     {node: "mallory", reason: domain.ReasonNotAllowed},
		"held, no one to keep": {node: "alpha", reason: domain.ReasonNotAllowed},
	} {
		t.Run(name, func(t *testing.T) {
			w := policyWorld(t, p, app.Sending{Entrance: domain.EntranceNode, Where: tc.node})
			var got []wire.SendQuery
			n := app.LocalNode{Sending: func(wire.SendQuery) (*app.Service, error) { return w.svc, nil }}
			if tc.held || name == "denied by a rule" {
				n.Held = func(_ context.Context, q wire.SendQuery, err error) (wire.Sent, error) {
					d, ok := domain.AsHeld(err)
					require.True(t, ok, "Held hears the hold: %v", err)
					assert.Contains(t, d.Why(), "hold by default rule 1 (hold from=node:* to=*): node:alpha")
					got = append(got, q)
					return wire.Sent{Receipt: wire.Receipt{OK: true, Outcome: "awaiting_approval", Outbox: &wire.OutboxRef{ID: 7, State: "awaiting_approval"}}}, nil
				}
			}
			q := wire.SendQuery{Address: "prod-api", Text: "deploy"}
			sent, err := n.Send(context.Background(), q)
			if !tc.held {
				r, ok := domain.AsRefusal(err)
				require.True(t, ok, "want a refusal, got %v", err)
				assert.Equal(t, tc.reason, r.Reason)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []wire.SendQuery{q}, got)
			assert.Equal(t, "awaiting_approval", sent.Receipt.Outcome)
			assert.Equal(t, int64(7), sent.Receipt.Outbox.ID)
		})
	}
}

// The decision the entrance made (Sending.Decided) is never weakened by
// the Service's own reading of the policy: with no rules here (allow), an
// entrance's hold holds, at AllowedTo and at Send, and a person's
// approval passes it; a deny here stands over an entrance's hold.
func TestEntrancesDecisionIsNeverWeakened(t *testing.T) {
	from := app.Sending{Entrance: domain.EntranceMCP}
	held := domain.Decide([]domain.Rule{mustRule(t, "hold", "mcp", "prod-*")}, domain.NewSender(domain.EntranceMCP, ""), domain.AddressTarget("prod-api", ""))
	from.Decided = &held
	w := policyWorld(t, rules{}, from)
	err := w.svc.AllowedTo(context.Background(), "prod-api", domain.Dest{})
	d, ok := domain.AsHeld(err)
	require.True(t, ok, "want a hold, got %v", err)
	assert.Equal(t, 1, d.Number)
	assert.Contains(t, d.Why(), "stricter than peerctl serve's own (allow by default rule 2 (allow from=* to=*))")
	_, err = w.svc.Send(context.Background(), app.SendRequest{Address: "prod-api", Text: "hi"})
	assert.ErrorIs(t, err, domain.ErrHeld, "no transport runs")

	from.Approved = true
	w = policyWorld(t, rules{}, from)
	assert.NoError(t, w.svc.AllowedTo(context.Background(), "prod-api", domain.Dest{}), "approved: the hold passes")

	from.Approved = false
	w = policyWorld(t, rules{rules: []domain.Rule{mustRule(t, "deny", "mcp", "*")}}, from)
	err = w.svc.AllowedTo(context.Background(), "prod-api", domain.Dest{})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.NotErrorIs(t, err, domain.ErrHeld)
	assert.Contains(t, r.Detail, "deny by rule 1")
}
