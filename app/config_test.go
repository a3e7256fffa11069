package app_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/adapters/opencode"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/wiring"
)

// testConfig is a Config that reads every harness's state under
// configDir: Claude Code's registry there, Qwen Code's home
// configDir/qwen, Codex's configDir/codex and opencode's database
// configDir/opencode/opencode.db (absent unless a test makes them), so
// that no test reads this machine's homes: a Codex or opencode process of
// this user (an installer's `opencode --version`, say) would otherwise
// show up in a test's listing or watch.
func testConfig(configDir, transport string) app.Config {
	return app.Config{Transport: transport, Flags: testHomes(configDir)}
}

// testHomes are the harness flags of testConfig.
func testHomes(configDir string) map[string]string {
	return map[string]string{
		claudecode.FlagConfigDir: configDir,
		qwencode.FlagHome:        filepath.Join(configDir, "qwen"),
		codex.FlagHome:           filepath.Join(configDir, "codex"),
		opencode.SettingDB:       filepath.Join(configDir, "opencode", "opencode.db"),
	}
}

// Every harness of the graph testConfig builds has its home under the
// test's folder, a harness added to the plug-ins included.
func TestTestConfigReadsNoHomeOfThisMachine(t *testing.T) {
	cfg := t.TempDir()
	var hs app.Harnesses
	fxtest.New(t, wiring.Module, fx.Supply(testConfig(cfg, "")), fx.Populate(&hs))
	assert.Len(t, hs, len(wiring.Plugins()))
	for _, h := range hs {
		dir := h.Home().Dir
		assert.True(t, dir == cfg || strings.HasPrefix(dir, cfg+string(filepath.Separator)),
			"%s reads %s, outside the test's folder %s", h.Kind(), dir, cfg)
	}
}
