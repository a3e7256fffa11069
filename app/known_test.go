package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

const knownThread = "01a234d3-852a-7530-a429-495bba85092c"

// knownRegistry has no live session and knows one, named "night".
type knownRegistry struct{}

func (knownRegistry) Read(context.Context) (ports.Snapshot, error) {
	return ports.Snapshot{Dir: "/home/.codex"}, nil
}

func (knownRegistry) Known(context.Context) ([]domain.Record, error) {
	return []domain.Record{{Harness: codex.Kind, File: knownThread, SessionID: knownThread, Name: "night"},
		{Harness: codex.Kind, File: glowThread, SessionID: glowThread, Name: "glow",
			Problem: "loaded by the daemon with no client: a queued text would run now", ProblemVerdict: domain.VerdictHeadless,
			ProblemShort: "just closed, so nothing was sent; open it and send"}}, nil
}

const glowThread = "01a234d5-a0aa-7921-99f9-ccf1a196ec64"

type durable struct{ named }

func (*durable) Durable() {}

// knownHarness is a plug-in with a default transport and a durable one.
type knownHarness struct {
	ports.Harness
	ts []ports.Transport
}

func (knownHarness) Kind() domain.Harness            { return codex.Kind }
func (knownHarness) Registry() ports.Registry        { return knownRegistry{} }
func (h knownHarness) Transports() []ports.Transport { return h.ts }
func (knownHarness) Confirm() ports.ConfirmRule      { return ports.ConfirmRule{ByReceipt: true} }
func (knownHarness) Transcript(domain.Record) string { return "" }
func (knownHarness) Home() ports.Home {
	return ports.Home{Dir: "/home/.codex", Flag: "codex-home", Env: "CODEX_HOME"}
}

type noLiveness struct{}

func (noLiveness) Check(domain.Record) domain.Liveness { return domain.Liveness{} }

// A durable transport reaches a session its harness knows but no process
// has open now, by id or exact name; any other transport is refused
// not_live as before, with the hint that the durable one would keep it.
func TestSendDurableToKnownSession(t *testing.T) {
	def, queue := &named{name: "app-server"}, &durable{named{name: "queue"}}
	hs := app.NewHarnesses([]ports.Harness{knownHarness{ts: []ports.Transport{def, queue}}})
	svc := func(chosen string) *app.Service {
		return app.New(hs.Registry(), noLiveness{}, hs.Router(chosen), "", app.WithHarnesses(hs))
	}
	for _, address := range []string{knownThread, "night"} {
		res, err := svc("queue").Send(context.Background(), app.SendRequest{Address: address, Text: "hi"})
		require.NoError(t, err, address)
		assert.Equal(t, knownThread, res.Target.ID())
		assert.True(t, res.Target.Dormant())
		assert.Len(t, queue.Received(), 1)
		queue.named = named{name: "queue"}
	}

	_, err := svc("").Send(context.Background(), app.SendRequest{Address: "night", Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
	assert.Contains(t, r.Detail, "--transport queue would keep the message durably")
	assert.Empty(t, def.Received(), "nothing ran")

	_, err = svc("queue").Send(context.Background(), app.SendRequest{Address: "nobody", Text: "hi"})
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)

	// A known session its harness says cannot take a message now is
	// refused with that, whichever transport is chosen; nothing runs.
	for _, chosen := range []string{"queue", ""} {
		_, err = svc(chosen).Send(context.Background(), app.SendRequest{Address: "glow", Text: "hi"})
		r, ok = domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonNotLive, r.Reason)
		assert.Contains(t, r.Detail, "codex session "+glowThread+": loaded by the daemon with no client")
		assert.NotContains(t, r.Detail, "would keep the message durably")
		assert.Equal(t, "just closed, so nothing was sent; open it and send", r.Short, "the harness's one line for people")
	}
	assert.Empty(t, def.Received())
	assert.Empty(t, queue.Received())
}

// missingRegistry is a Claude Code registry whose folder does not exist.
type missingRegistry struct{}

func (missingRegistry) Read(context.Context) (ports.Snapshot, error) {
	return ports.Snapshot{Dir: "/nowhere/sessions", Missing: true}, nil
}
func (missingRegistry) Harness() domain.Harness { return domain.HarnessClaudeCode }

type missingHarness struct{ ports.Harness }

func (missingHarness) Kind() domain.Harness     { return domain.HarnessClaudeCode }
func (missingHarness) Registry() ports.Registry { return missingRegistry{} }
func (missingHarness) Transports() []ports.Transport {
	return []ports.Transport{&named{name: "courier"}}
}
func (missingHarness) Home() ports.Home {
	return ports.Home{Dir: "/nowhere", Flag: "claude-config-dir", Env: "CLAUDE_CONFIG_DIR"}
}

// A not_live refusal speaks of every harness searched, and names the
// missing folder as its harness's, not as the only place looked.
func TestNotLiveNamesTheHarnessesSearched(t *testing.T) {
	detail := notLiveDetail(t, knownHarness{ts: []ports.Transport{&named{name: "app-server"}}}, missingHarness{})
	assert.Contains(t, detail, "searched the claude-code and codex sessions")
	assert.Contains(t, detail, "the claude-code registry folder /nowhere/sessions does not exist (check --claude-config-dir or CLAUDE_CONFIG_DIR)")
}

// notLiveDetail is the detail of the not_live refusal of a send to a
// session no harness of hs has.
func notLiveDetail(t *testing.T, hs ...ports.Harness) string {
	t.Helper()
	set := app.NewHarnesses(hs)
	svc := app.New(set.Registry(), noLiveness{}, set.Router(""), "", app.WithHarnesses(set))
	_, err := svc.Send(context.Background(), app.SendRequest{Address: "01a234d7-3e0a-7d41-86b7-5c81381f3c25", Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, domain.ReasonNotLive, r.Reason)
	return r.Detail
}

// homelessRegistry is a registry whose folder does not exist, of harness of.
type homelessRegistry struct{ of domain.Harness }

func (r homelessRegistry) Read(context.Context) (ports.Snapshot, error) {
	return ports.Snapshot{Dir: "/nowhere/" + r.of.String(), Missing: true}, nil
}
func (r homelessRegistry) Harness() domain.Harness { return r.of }

// homelessHarness is a plug-in with no registry folder, installed or not
// (ports.Presence).
type homelessHarness struct {
	ports.Harness
	of      domain.Harness
	present bool
}

func (h homelessHarness) Kind() domain.Harness          { return h.of }
func (h homelessHarness) Registry() ports.Registry      { return homelessRegistry{h.of} }
func (h homelessHarness) Transports() []ports.Transport { return nil }
func (h homelessHarness) Home() ports.Home {
	return ports.Home{Dir: "/nowhere", Flag: "x-home", Env: "X_HOME"}
}
func (h homelessHarness) Present() bool { return h.present }

// A not_live refusal names only the harnesses that could have had the
// session: a harness that is not installed and has no state is left to
// doctor, its missing folder unsaid (issue 44); one that is installed is
// named with its missing folder, as the primary always is.
func TestNotLiveNamesOnlyHarnessesThatArePresent(t *testing.T) {
	codexHere := knownHarness{ts: []ports.Transport{&named{name: "app-server"}}}
	detail := notLiveDetail(t, missingHarness{}, codexHere, homelessHarness{of: qwenregistry.Kind, present: false})
	assert.Contains(t, detail, "searched the claude-code and codex sessions;")
	assert.Contains(t, detail, "the claude-code registry folder /nowhere/sessions does not exist")
	assert.NotContains(t, detail, "qwen", "not installed, no state: doctor's to say")

	detail = notLiveDetail(t, missingHarness{}, codexHere, homelessHarness{of: qwenregistry.Kind, present: true})
	assert.Contains(t, detail, "searched the claude-code, qwen-code and codex sessions;")
	assert.Contains(t, detail, "the qwen-code registry folder /nowhere/qwen-code does not exist (check --x-home or X_HOME)")
}

// canceledRegistry fails as a read does when the command was interrupted.
type canceledRegistry struct{}

func (canceledRegistry) Read(ctx context.Context) (ports.Snapshot, error) {
	return ports.Snapshot{}, ctx.Err()
}

// Ctrl-C or SIGTERM while the target is resolved is delivery_failed saying
// it was interrupted before anything was sent, not a bare "context
// canceled" (issue 28).
func TestSendInterruptedWhileResolving(t *testing.T) {
	def := &named{name: "app-server"}
	hs := app.NewHarnesses([]ports.Harness{knownHarness{ts: []ports.Transport{def}}})
	svc := app.New(canceledRegistry{}, noLiveness{}, hs.Router(""), "", app.WithHarnesses(hs))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.Send(ctx, app.SendRequest{Address: knownThread, Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "interrupted before anything was sent")
	assert.Empty(t, def.Received())
}

// ambiguousRegistry lists glowThread ambiguous (the daemon holds it and
// which of two clients has it open cannot be told), as Codex's registry
// does, and knows it loaded; cancel, when set, ends the command while
// Known runs.
type ambiguousRegistry struct {
	knownRegistry
	cancel context.CancelFunc
}

func (ambiguousRegistry) Read(context.Context) (ports.Snapshot, error) {
	return ports.Snapshot{Dir: "/home/.codex", Records: []domain.Record{{Harness: codex.Kind, File: glowThread, SessionID: glowThread,
		Name: "glow", PID: 100, Kind: codex.KindClient, SocketPath: "/s.sock",
		Problem: "the daemon (pid 100) holds 2 threads loaded in /w/a and 1 Codex client(s) run there (pids 200): which of them have this one open cannot be told", ProblemVerdict: domain.VerdictAmbiguous}}}, nil
}

func (r ambiguousRegistry) Known(ctx context.Context) ([]domain.Record, error) {
	if r.cancel != nil {
		r.cancel()
		return nil, ctx.Err()
	}
	return r.knownRegistry.Known(ctx)
}

type ambiguousHarness struct {
	knownHarness
	reg ambiguousRegistry
}

func (h ambiguousHarness) Registry() ports.Registry { return h.reg }

// A send to an ambiguous thread that the harness also knows (loaded, so
// with its own problem) keeps the live read's refusal: the verdict and
// the pids, with the harness's hint after (issue 28).
func TestSendToAnAmbiguousKnownThreadSaysAmbiguous(t *testing.T) {
	def, queue := &named{name: "app-server"}, &durable{named{name: "queue"}}
	hs := app.NewHarnesses([]ports.Harness{ambiguousHarness{knownHarness: knownHarness{ts: []ports.Transport{def, queue}}}})
	for _, chosen := range []string{"queue", ""} {
		svc := app.New(hs.Registry(), noLiveness{}, hs.Router(chosen), "", app.WithHarnesses(hs))
		for _, address := range []string{glowThread, "glow"} {
			_, err := svc.Send(context.Background(), app.SendRequest{Address: address, Text: "hi"})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonNotLive, r.Reason)
			assert.Contains(t, r.Detail, "is ambiguous", chosen)
			assert.Contains(t, r.Detail, "pids 200", chosen)
			assert.Contains(t, r.Detail, "loaded by the daemon with no client", "the harness's hint is kept too")
			assert.Empty(t, r.Short, "its one line for a headless thread would hide that it is ambiguous")
		}
	}
	assert.Empty(t, def.Received())
	assert.Empty(t, queue.Received())
}

// Ctrl-C or SIGTERM while the known sessions are read is the interrupt
// (delivery_failed, nothing sent), not a not_live refusal with the
// context's error appended.
func TestSendInterruptedWhileReadingKnownSessions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queue := &durable{named{name: "queue"}}
	hs := app.NewHarnesses([]ports.Harness{ambiguousHarness{knownHarness: knownHarness{ts: []ports.Transport{&named{name: "app-server"}, queue}},
		reg: ambiguousRegistry{cancel: cancel}}})
	svc := app.New(hs.Registry(), noLiveness{}, hs.Router("queue"), "", app.WithHarnesses(hs))
	_, err := svc.Send(ctx, app.SendRequest{Address: knownThread, Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason, r.Detail)
	assert.Contains(t, r.Detail, "interrupted before anything was sent")
	assert.Empty(t, queue.Received())
}
