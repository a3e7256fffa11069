package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/internal/wiring"
)

// A host's settings are the harness plug-ins' flags, each reaching the far
// side's peerctl as the variable the flag falls back to: a harness added
// is a setting of every host too (a far side's Codex home, say).
func TestHostSettingsAreThePluginFlags(t *testing.T) {
	var keys []string
	env := map[string]string{}
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			keys = append(keys, f.Name)
			assert.NotEmpty(t, f.Env, "flag --%s names the variable it falls back to", f.Name)
			env[f.Name] = f.Env
		}
	}
	assert.Equal(t, keys, wiring.HostSchema.Keys())
	for k, v := range env {
		assert.Equal(t, v, wiring.HostSchema.Env(k), "setting %s", k)
	}
}
