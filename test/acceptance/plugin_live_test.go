//go:build unix

package acceptance

// Live (PEERCTL_LIVE=1): this repository is a Claude Code plugin marketplace
// (.claude-plugin/marketplace.json) whose one plugin declares the MCP server
// `peerctl mcp` and carries the skill skills/peerctl. The pinned Claude Code
// validates it, adds the checkout as a marketplace, installs the plugin and
// health-checks the server, with a scratch config dir and HOME, offline.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

func TestLivePluginMarketplaceInstallsTheMCPServer(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(checkout, ".claude-plugin", "marketplace.json"))
	// The plugin's server is the command `peerctl mcp`: peerctl from PATH,
	// which runs the peerctl-mcp built beside it.
	programs := filepath.Dir(peerctlWithMCP(t))

	root := livecc.NewRoot(t)
	cfgDir, cwd := filepath.Join(root, "config"), filepath.Join(root, "proj")
	env := livecc.Env(cfgDir, "HOME="+filepath.Join(root, "home"), "TMPDIR="+filepath.Join(root, "tmp"),
		"DISABLE_AUTOUPDATER=1", "PATH="+programs+string(os.PathListSeparator)+os.Getenv("PATH"))
	claude := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = cwd, env, 5*time.Second
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "claude %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}

	out := claude("plugin", "validate", checkout)
	assert.Contains(t, out, "mcpServers: peerctl stdio peerctl [\"mcp\"]")
	assert.Contains(t, out, "skills: peerctl:peerctl")
	claude("plugin", "marketplace", "add", checkout)
	claude("plugin", "install", "peerctl@peerctl")
	out = claude("mcp", "list")
	assert.Regexp(t, `(?m)^plugin:peerctl:peerctl: peerctl mcp - ✔ Connected$`, out)
}
