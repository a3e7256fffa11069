package domain_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func rule(t testing.TB, action, from, to string, narrow ...string) domain.Rule {
	t.Helper()
	n := append(narrow, "", "", "")
	r, err := domain.NewRule(action, from, to, n[0], n[1], n[2])
	require.NoError(t, err)
	return r
}

// policyTarget is a live session named name working in cwd.
func policyTarget(t testing.TB, name, cwd string) domain.Target {
	t.Helper()
	r := rec(4652, idA, name)
	r.Cwd = cwd
	s, err := domain.Resolve([]domain.Entry{domain.Classify(r, alive)}, name)
	require.NoError(t, err)
	return domain.TargetOf(s, "")
}

func TestDecideFirstRuleThatMatches(t *testing.T) {
	prod := policyTarget(t, "prod-api", "/srv/prod/api")
	dev := policyTarget(t, "dev-1", "/home/dev/src/shop")
	cli := domain.NewSender(domain.EntranceCLI, "")
	reviewer := domain.NewSender(domain.EntranceMCP, "").WithSession("reviewer-2", idB)
	unknownMCP := domain.NewSender(domain.EntranceMCP, "")
	rules := []domain.Rule{
		rule(t, "allow", "mcp:reviewer-*", "prod-*"),
		rule(t, "deny", "mcp", "*", "", "", "/srv/prod"),
		rule(t, "hold", "relay", "dev-?"),
	}
	for name, tc := range map[string]struct {
		from       domain.Sender
		to         domain.Target
		want       domain.Action
		number     int
		def        int
		wantUnsure bool
	}{
		"narrowed sender allowed first":        {reviewer, prod, domain.ActionAllow, 1, 0, false},
		"any other mcp denied by cwd prefix":   {unknownMCP, prod, domain.ActionDeny, 2, 0, false},
		"cwd prefix is a folder, not a string": {unknownMCP, policyTarget(t, "p", "/srv/production"), domain.ActionAllow, 0, 2, false},
		"cli falls to the defaults":            {cli, prod, domain.ActionAllow, 0, 2, false},
		"relay held by a glob":                 {domain.NewSender(domain.EntranceRelay, ""), dev, domain.ActionHold, 3, 0, false},
		"a node is held by default":            {domain.NewSender(domain.EntranceNode, "far-box"), dev, domain.ActionHold, 0, 1, false},
		"an unknown entrance: only * rules":    {domain.Sender{}, prod, domain.ActionAllow, 0, 2, false},
		"a far target known by its address":    {unknownMCP, domain.AddressTarget("prod-api", "far"), domain.ActionDeny, 2, 0, true},
	} {
		t.Run(name, func(t *testing.T) {
			d := domain.Decide(rules, tc.from, tc.to)
			assert.Equal(t, tc.want, d.Action, d.Why())
			assert.Equal(t, tc.number, d.Number, d.Why())
			assert.Equal(t, tc.def, d.Default, d.Why())
			assert.Equal(t, tc.wantUnsure, d.Unsure, d.Why())
		})
	}
}

// An allow rule that needs the sending session does not match a sender
// whose session peerctl could not tell; a deny rule that does applies.
func TestDecideUnknownFactsReadTheSafeWay(t *testing.T) {
	to := policyTarget(t, "prod-api", "/srv/prod")
	anon := domain.NewSender(domain.EntranceMCP, "")
	d := domain.Decide([]domain.Rule{rule(t, "allow", "mcp:reviewer-*", "*"), rule(t, "deny", "mcp", "*")}, anon, to)
	assert.Equal(t, domain.ActionDeny, d.Action)
	assert.Equal(t, 2, d.Number)
	d = domain.Decide([]domain.Rule{rule(t, "deny", "mcp:reviewer-*", "*")}, anon, to)
	assert.Equal(t, domain.ActionDeny, d.Action)
	assert.True(t, d.Unsure)
	assert.Contains(t, d.Why(), "read the safe way")

	far := domain.AddressTarget("build", "far")
	d = domain.Decide([]domain.Rule{rule(t, "allow", "cli", "*", "claude-code")}, domain.NewSender(domain.EntranceCLI, ""), far)
	assert.Equal(t, 2, d.Default, "an allow narrowed by a harness the far send does not know is passed over")
	d = domain.Decide([]domain.Rule{rule(t, "deny", "cli", "*", "", "near")}, domain.NewSender(domain.EntranceCLI, ""), far)
	assert.Equal(t, 2, d.Default, "a rule for another host does not match")
	d = domain.Decide([]domain.Rule{rule(t, "deny", "cli", "*", "", "far")}, domain.NewSender(domain.EntranceCLI, ""), far)
	assert.Equal(t, domain.ActionDeny, d.Action)
	assert.False(t, d.Unsure)
}

// A glob that can never match a session's name or id is a rule that
// never decides: the next one does.
func TestDecideGlobThatNeverMatches(t *testing.T) {
	to := policyTarget(t, "prod-api", "/srv/prod")
	for _, glob := range []string{"a[b-a]c", "prod-api?", "*/*", `\*`, strings.Repeat("?", 300)} {
		d := domain.Decide([]domain.Rule{rule(t, "deny", "*", glob)}, domain.NewSender(domain.EntranceCLI, ""), to)
		assert.Equal(t, domain.ActionAllow, d.Action, glob)
		assert.Equal(t, 0, d.Number, glob)
	}
}

func TestNewRuleRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ action, from, to, harness, host, cwd, want string }{
		"unknown action":      {"permit", "cli", "*", "", "", "", "want allow, hold or deny"},
		"unknown entrance":    {"allow", "web", "*", "", "", "", "want *, cli, mcp"},
		"cli narrowed":        {"allow", "cli:x", "*", "", "", "", "not narrowed"},
		"bad glob":            {"allow", "cli", "[", "", "", "", "is not a glob"},
		"bad sender glob":     {"allow", "mcp:[", "*", "", "", "", "is not a glob"},
		"control character":   {"allow", "cli", "a\x1b[31m", "", "", "", "control character"},
		"control in cwd":      {"allow", "cli", "*", "", "", "/srv/\nx", "control character"},
		"space in target":     {"allow", "cli", "a b", "", "", "", "holds a space"},
		"not UTF-8":           {"allow", "cli", "\xff", "", "", "", "not UTF-8"},
		"empty target":        {"allow", "cli", "", "", "", "", "to is empty"},
		"unknown harness":     {"allow", "cli", "*", "emacs", "", "", "unknown harness"},
		"option as host":      {"allow", "cli", "*", "", "-oProxyCommand=x", "", "host"},
		"relative cwd":        {"allow", "cli", "*", "", "", "src", "absolute"},
		"over long":           {"allow", "cli", strings.Repeat("a", domain.MaxRuleWord+1), "", "", "", "at most"},
		"host without a name": {"allow", "host:", "*", "", "", "", "from is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := domain.NewRule(tc.action, tc.from, tc.to, tc.harness, tc.host, tc.cwd)
			require.ErrorIs(t, err, domain.ErrBadRule)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRuleString(t *testing.T) {
	r := rule(t, "hold", "mcp:rev-*", "prod-*", "claude-code", "far", "/srv/prod/")
	assert.Equal(t, "hold from=mcp:rev-* to=prod-* harness=claude-code host=far cwd=/srv/prod", r.String())
	assert.Equal(t, "allow from=node:* to=*", fmt.Sprint(rule(t, "allow", "node", "*")))
}

func TestNotAllowedNamesTheRule(t *testing.T) {
	to := policyTarget(t, "prod-api", "/srv/prod")
	d := domain.Decide([]domain.Rule{rule(t, "allow", "cli", "dev-*"), rule(t, "deny", "mcp", "prod-*")}, domain.NewSender(domain.EntranceMCP, "").WithSession("rev", idB), to)
	r := d.NotAllowed()
	assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
	assert.Contains(t, r.Error(), "not_allowed: deny by rule 2 (deny from=mcp to=prod-*): mcp:rev to \"prod-api\"")
	d = domain.Decide(nil, domain.NewSender(domain.EntranceNode, "box"), to)
	assert.Contains(t, d.NotAllowed().Detail, "hold by default rule 1 (hold from=node:* to=*)")
	held, ok := domain.AsHeld(d.NotAllowed())
	require.True(t, ok, "a hold's refusal carries its decision, for an entrance that can keep it")
	assert.Equal(t, domain.ActionHold, held.Action)
	assert.ErrorIs(t, d.NotAllowed(), domain.ErrHeld)
	deny := domain.Decide([]domain.Rule{rule(t, "deny", "mcp", "prod-*")}, domain.NewSender(domain.EntranceMCP, ""), to)
	_, ok = domain.AsHeld(deny.NotAllowed())
	assert.False(t, ok, "a deny is never held")
	assert.NotErrorIs(t, deny.NotAllowed(), domain.ErrHeld)
}

func TestParseEntrance(t *testing.T) {
	for _, e := range []domain.Entrance{domain.EntranceCLI, domain.EntranceMCP, domain.EntranceRelay, domain.EntranceDashboard, domain.EntranceHost, domain.EntranceNode} {
		got, err := domain.ParseEntrance(e.String())
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}
	got, err := domain.ParseEntrance("")
	require.NoError(t, err)
	assert.Equal(t, domain.EntranceUnknown, got)
	_, err = domain.ParseEntrance("ssh")
	assert.Error(t, err)
	f := domain.NewSender(domain.EntranceHost, "far").WithSession("a", "b")
	assert.Equal(t, "far", f.Where())
	assert.Equal(t, "a", f.SessionName())
	assert.Equal(t, "b", f.SessionID())
}

// BenchmarkDecide10000Rules is one decision over 10,000 rules none of
// which match (the defaults decide): the worst case of a long policy.
func BenchmarkDecide10000Rules(b *testing.B) {
	rules := make([]domain.Rule, 10000)
	for i := range rules {
		rules[i] = rule(b, "deny", "mcp:reviewer-*", fmt.Sprintf("prod-%d-*", i), "", "", "/srv/prod")
	}
	to := policyTarget(b, "dev-api", "/home/dev/src")
	from := domain.NewSender(domain.EntranceMCP, "").WithSession("writer-1", idB)
	b.ResetTimer()
	for b.Loop() {
		if d := domain.Decide(rules, from, to); d.Default != 2 {
			b.Fatal(d.Why())
		}
	}
}

// AllowsEvery is true only when Decide allows every target here, for the
// sender with or without its session found.
func TestAllowsEveryAgreesWithDecide(t *testing.T) {
	targets := []domain.Target{policyTarget(t, "prod-api", "/srv/prod/api"), policyTarget(t, "dev-1", "/home/dev"), policyTarget(t, "reviewer-2", "/srv")}
	cli := domain.NewSender(domain.EntranceCLI, "")
	anon := domain.NewSender(domain.EntranceMCP, "")
	for name, tc := range map[string]struct {
		rules []domain.Rule
		from  domain.Sender
		want  bool
	}{
		"no file, the command line":           {nil, cli, true},
		"no file, a node is held":             {nil, domain.NewSender(domain.EntranceNode, "far"), false},
		"a deny by name":                      {[]domain.Rule{rule(t, "deny", "cli", "prod-*")}, cli, false},
		"a hold by cwd":                       {[]domain.Rule{rule(t, "hold", "*", "*", "", "", "/srv")}, cli, false},
		"an allow by harness first":           {[]domain.Rule{rule(t, "allow", "cli", "*", "claude-code")}, cli, false},
		"another entrance's deny":             {[]domain.Rule{rule(t, "deny", "mcp", "*")}, cli, true},
		"a rule for another host":             {[]domain.Rule{rule(t, "deny", "cli", "*", "", "far")}, cli, true},
		"a deny on a session not known":       {[]domain.Rule{rule(t, "deny", "mcp:reviewer-*", "*")}, anon, false},
		"an allow on a session not known":     {[]domain.Rule{rule(t, "allow", "mcp:reviewer-*", "prod-*")}, anon, true},
		"a deny of every target":              {[]domain.Rule{rule(t, "deny", "cli", "*")}, cli, false},
		"an allow of every target, then deny": {[]domain.Rule{rule(t, "allow", "cli", "*"), rule(t, "deny", "*", "*")}, cli, true},
	} {
		t.Run(name, func(t *testing.T) {
			got := domain.AllowsEvery(tc.rules, tc.from)
			assert.Equal(t, tc.want, got)
			if !got {
				return
			}
			for _, from := range []domain.Sender{tc.from, tc.from.WithSession("reviewer-2", idB), tc.from.WithSession("other", idA)} {
				for _, to := range targets {
					assert.Equal(t, domain.ActionAllow, domain.Decide(tc.rules, from, to).Action, "%s to %s", from, to)
				}
			}
		})
	}
}

// The stricter of two decisions wins, deny over hold over allow, whichever
// reader made it; on a tie the own one stands. One that stands over a
// weaker own says so.
func TestStricter(t *testing.T) {
	to := domain.AddressTarget("reviewer", "")
	from := domain.NewSender(domain.EntranceMCP, "")
	of := func(action string) domain.Decision {
		return domain.Decide([]domain.Rule{rule(t, action, "mcp", "reviewer")}, from, to)
	}
	allow := domain.Decide(nil, from, to)
	for _, tc := range []struct {
		own, entrance domain.Decision
		want          domain.Action
		over          bool
	}{
		{allow, of("hold"), domain.ActionHold, true},
		{allow, of("deny"), domain.ActionDeny, true},
		{of("hold"), of("deny"), domain.ActionDeny, true},
		{of("hold"), allow, domain.ActionHold, false},
		{of("deny"), of("hold"), domain.ActionDeny, false},
		{of("deny"), allow, domain.ActionDeny, false},
		{of("hold"), of("hold"), domain.ActionHold, false},
		{allow, allow, domain.ActionAllow, false},
	} {
		t.Run(tc.own.Action.String()+"/"+tc.entrance.Action.String(), func(t *testing.T) {
			d := domain.Stricter(tc.own, tc.entrance)
			assert.Equal(t, tc.want, d.Action)
			if !tc.over {
				assert.Equal(t, tc.own, d, "the own decision stands, unchanged")
				return
			}
			assert.Equal(t, tc.entrance.Rule, d.Rule)
			assert.Contains(t, d.Why(), "stricter than peerctl serve's own ("+tc.own.Action.String()+" by "+tc.own.RuleName())
		})
	}
}
