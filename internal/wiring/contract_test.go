package wiring_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// The contract every harness plug-in keeps, run over the composition
// root's list: what the command line, the hosts file, the MCP schemas and
// the router make from a plug-in only holds when its description (flags,
// transport names) and the harness it builds agree.
func TestEveryPluginKeepsTheContract(t *testing.T) {
	plugins := wiring.Plugins()
	require.NotEmpty(t, plugins)

	kinds := map[domain.Harness]bool{}
	flags, envs, transports := map[string]string{}, map[string]string{}, map[string]string{}
	for _, p := range plugins {
		word := p.Kind.String()
		assert.False(t, kinds[p.Kind], "%s is listed twice", word)
		kinds[p.Kind] = true
		assert.Contains(t, domain.Harnesses(), p.Kind, "%s is not in the domain's set", word)
		_, ok := p.Kind.Spec()
		assert.True(t, ok, "%s has no HarnessSpec", word)
		assert.NotEmpty(t, p.Kind.EndpointPrefix(), "%s has no endpoint prefix", word)
		require.NotNil(t, p.New, "%s has no constructor", word)
		require.NotEmpty(t, p.Transports, "%s has no transport", word)

		for _, f := range p.Flags {
			assert.NotEmpty(t, f.Name, "%s: a flag without a name", word)
			assert.NotEmpty(t, f.Usage, "%s --%s: no usage", word, f.Name)
			assert.NotEmpty(t, f.Otherwise, "%s --%s: says nothing of leaving it out", word, f.Name)
			assert.NotEmpty(t, f.Env, "%s --%s: no variable, so a host's setting cannot reach the far side", word, f.Name)
			if o, taken := flags[f.Name]; taken {
				t.Errorf("--%s is both %s's and %s's", f.Name, o, word)
			}
			flags[f.Name] = word
			if o, taken := envs[f.Env]; taken {
				t.Errorf("$%s is both %s's and %s's", f.Env, o, word)
			}
			envs[f.Env] = word
		}
		for _, tn := range p.Transports {
			assert.NotEmpty(t, tn.Name, "%s: a transport without a name", word)
			if o, taken := transports[tn.Name]; taken {
				t.Errorf("transport %q is both %s's and %s's", tn.Name, o, word)
			}
			transports[tn.Name] = word
		}
	}
	// Every harness of the domain's set is served: a HarnessSpec without
	// a plug-in would parse endpoints that nothing delivers to.
	for _, h := range domain.Harnesses() {
		assert.True(t, kinds[h], "%s is in the domain's set but no plug-in serves it", h)
	}

	// A string that is no endpoint is refused naming every form.
	_, err := domain.ParseEndpoint("codex:v1:xyz")
	require.ErrorIs(t, err, domain.ErrBadEndpoint)
	for _, p := range plugins {
		assert.Contains(t, err.Error(), p.Kind.EndpointPrefix()+"…", "the refusal names %s's form", p.Kind)
	}
	// Help texts name every harness, in plug-in order.
	titles := plugins.Titles("or")
	last := -1
	for _, p := range plugins {
		i := strings.Index(titles, p.Kind.Title())
		assert.Greater(t, i, last, "%s is missing from %q or out of order", p.Kind.Title(), titles)
		last = i
	}

	for _, p := range plugins {
		t.Run(p.Kind.String(), func(t *testing.T) { pluginContract(t, p) })
	}
}

// pluginContract builds p over empty homes and checks that the harness it
// builds is the one it describes.
func pluginContract(t *testing.T, p ports.HarnessPlugin) {
	home := t.TempDir()
	values := map[string]string{}
	for _, f := range p.Flags {
		// A home folder of its own, or a program that is not there: the
		// checks below read nothing of this machine's sessions.
		values[f.Name] = filepath.Join(home, f.Name)
		require.NoError(t, os.MkdirAll(values[f.Name], 0o700))
	}
	h, err := p.New(ports.HarnessSettings{Flags: values, Getenv: func(string) string { return "" }, Env: []string{}})
	require.NoError(t, err)
	assert.Equal(t, p.Kind, h.Kind(), "the plug-in builds another harness")

	names := make([]string, len(h.Transports()))
	for i, tr := range h.Transports() {
		names[i] = tr.Name()
	}
	want := make([]string, len(p.Transports))
	for i, tn := range p.Transports {
		want[i] = tn.Name
	}
	assert.Equal(t, want, names, "the transports built are not the ones described, in order")

	replies := slices.ContainsFunc(p.Transports, func(tn ports.TransportName) bool { return tn.Replies })
	assert.Equal(t, replies, h.Couriers() != nil, "a transport a reply comes back on needs the harness's couriers, and only then")

	hm := h.Home()
	assert.NotEmpty(t, hm.Env, "no variable names the home")
	if hm.Flag != "" || len(p.Flags) > 0 {
		i := slices.IndexFunc(p.Flags, func(f ports.HarnessFlag) bool { return f.Name == hm.Flag })
		require.GreaterOrEqual(t, i, 0, "the home's flag --%s is not one of the plug-in's flags", hm.Flag)
		assert.Equal(t, p.Flags[i].Env, hm.Env, "the home's variable is not its flag's")
		assert.Equal(t, values[hm.Flag], hm.Dir, "the home is not the folder its flag named")
	}

	require.NotNil(t, h.Registry())
	require.NotNil(t, h.Liveness())
	t.Run("liveness", func(t *testing.T) { livenessContract(t, h) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := h.Registry().Read(ctx)
	require.NoError(t, err, "an empty home is no error")
	for _, r := range snap.Records {
		assert.Equal(t, p.Kind, r.Harness, "the registry read a record of another harness: %+v", r)
	}

	env := h.SessionEnv()
	if env.Var != "" {
		assert.NotNil(t, env.Names, "a session variable that names no session")
	}
	for _, m := range env.Markers {
		assert.NotEmpty(t, strings.TrimSpace(m))
	}

	rows := h.Doctor(ctx, nil)
	require.NotEmpty(t, rows, "doctor has no row for the harness")
	for _, r := range rows {
		assert.NotEmpty(t, r.Key, "a doctor row without its --json key")
		assert.NotEmpty(t, r.Lines, "a doctor row with nothing for people")
	}
}

// The composition root's graph builds with every plug-in, and the Service
// it gives holds each of them.
func TestModuleHoldsEveryPlugin(t *testing.T) {
	values := map[string]string{}
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			values[f.Name] = filepath.Join(t.TempDir(), f.Name)
		}
	}
	cfg := app.Config{Flags: values, Getenv: func(string) string { return "" }}
	for _, module := range []fx.Option{wiring.Module, wiring.ReadModule} {
		var hs app.Harnesses
		require.NoError(t, fx.New(module, fx.Supply(cfg), fx.Populate(&hs), fx.NopLogger).Err())
		for _, p := range wiring.Plugins() {
			_, ok := hs.Of(p.Kind)
			assert.True(t, ok, "%s is not in the graph", p.Kind)
		}
		assert.Len(t, hs, len(wiring.Plugins()))
	}
}
