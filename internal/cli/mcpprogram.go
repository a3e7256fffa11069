package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// mcpProgram is the program `peerctl mcp` runs in a peerctl built without
// the MCP server (cmd/peerctl): peerctl-mcp, the same command line with the
// server linked in (cmd/peerctl-mcp). Linking the MCP SDK costs every
// command about a fifth of its start-up (docs/PERFORMANCE.md), so only the
// one command that serves MCP pays for it.
const mcpProgram = "peerctl-mcp"

// mcpChildEnv marks a peerctl-mcp started by `peerctl mcp`: one that cannot
// serve either (a copy of peerctl under that name) says so instead of
// starting itself again.
const mcpChildEnv = "PEERCTL_MCP_CHILD"

// mcpInstallHint says how to get peerctl-mcp.
const mcpInstallHint = "install it beside peerctl (make build writes bin/peerctl and bin/peerctl-mcp; " +
	"go install github.com/peerctl/peerctl/cmd/...@latest installs both), or have the MCP client run \"peerctl-mcp mcp\""

// findMCPProgram is peerctl-mcp beside this executable, else on PATH.
func (c *cli) findMCPProgram() (string, error) {
	name := mcpProgram
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	var beside string
	if self, err := c.executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		beside = filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
			return beside, nil
		}
	}
	if path, err := exec.LookPath(mcpProgram); err == nil {
		return path, nil
	}
	where := "on PATH"
	if beside != "" {
		where = "at " + beside + " or on PATH"
	}
	return "", fmt.Errorf("peerctl mcp runs %s (peerctl with the MCP server linked in), and there is none %s: %s", mcpProgram, where, mcpInstallHint)
}

// runMCPProgram runs peerctl-mcp with this command line (c.args), on this
// process's standard streams: on Unix in place of this process (exec), on
// Windows as a child whose exit code becomes this one's.
func (c *cli) runMCPProgram() error {
	if c.getenv(mcpChildEnv) != "" {
		self, _ := c.executable()
		return errors.New("peerctl mcp was started as " + mcpProgram + " (" + self + "), but this build serves no MCP either (a copy of peerctl?): " + mcpInstallHint)
	}
	path, err := c.findMCPProgram()
	if err != nil {
		return err
	}
	return c.execMCP(path, append(c.environ(), mcpChildEnv+"=1"))
}
