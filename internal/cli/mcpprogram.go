package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// mcpProgram is the program `peerctl mcp` runs in a peerctl built without
// the MCP server (cmd/peerctl): peerctl-mcp, the same command line with the
// server linked in (cmd/peerctl-mcp). Linking the MCP SDK costs every
// command its package initialisation, about a fifth of a `list`
// (docs/PERFORMANCE.md), so only the program that serves MCP pays for it.
// The fleet's bus client (runWithBus), the outbox's store (runWithStore)
// and the jq filter (jqWithFilter) are linked there too, for the same
// reason.
const mcpProgram = "peerctl-mcp"

// mcpInstallHint says how to get peerctl-mcp.
const mcpInstallHint = "install both programs: make build (bin/peerctl and bin/peerctl-mcp), or go install ./cmd/... in a checkout"

// mcpLinked is what peerctl-mcp has that peerctl has not.
const mcpLinked = "(peerctl with the MCP server, the outbox's store, the bus client and jq linked in)"

// mcpNeeded names the commands that run peerctl-mcp, for doctor's row.
const mcpNeeded = "peerctl mcp (the Claude Code plugin's MCP server), watch, outbox, serve (send --durable), " +
	"the fleet's bus (serve --nats, list --fleet, --host nats:NODE) and --jq"

// errUnusableMCP is a peerctl-mcp that is there but cannot run (not
// executable, a folder, found through a relative PATH entry).
var errUnusableMCP = errors.New("fix or replace it")

// errNoMCPServer is a peerctl-mcp that is this very program: a build
// without the server under that name.
var errNoMCPServer = errors.New("has no MCP server linked in")

// findMCPProgram is the executable peerctl-mcp beside this executable
// (symlinks resolved), else the one on PATH. It refuses a peerctl-mcp that
// is this very file: a build without the server named peerctl-mcp, which
// would otherwise run itself forever. executable is this program's path
// (os.Executable); who, such as "peerctl mcp", is what runs it, for the
// errors.
func findMCPProgram(executable func() (string, error), who string) (string, error) {
	name := mcpProgram
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	self, err := executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
	}
	var found, beside string
	var unusable []string // candidates that are there but cannot run, with why
	if self != "" {
		beside = filepath.Join(filepath.Dir(self), name)
		path, err := exec.LookPath(beside)
		switch {
		case err == nil:
			found = path
		case !errors.Is(err, fs.ErrNotExist):
			unusable = append(unusable, err.Error())
		}
	}
	if found == "" {
		path, err := exec.LookPath(mcpProgram)
		switch {
		case err == nil:
			found = path
		case errors.Is(err, exec.ErrDot):
			unusable = append(unusable, err.Error())
		}
	}
	where := "on PATH"
	if beside != "" {
		where = "beside this peerctl (" + filepath.Dir(beside) + ") or on PATH"
	}
	switch {
	case found == "" && len(unusable) > 0:
		return "", fmt.Errorf("%s runs %s %s, and none %s can run: %s; %w; %s", who, mcpProgram, mcpLinked, where, strings.Join(unusable, "; "), errUnusableMCP, mcpInstallHint)
	case found == "":
		return "", fmt.Errorf("%s runs %s %s, and there is none %s; %s", who, mcpProgram, mcpLinked, where, mcpInstallHint)
	case self != "" && sameFile(self, found):
		return "", fmt.Errorf("%s %w (a build of cmd/peerctl, or a link to peerctl, under the name %s?); %s", found, errNoMCPServer, mcpProgram, mcpInstallHint)
	}
	return found, nil
}

// sameFile says whether paths a and b name one file.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// runMCPProgram runs peerctl-mcp with this command line (args) and env,
// on the streams: on Unix in place of this process (exec), on Windows as
// a child whose exit code becomes this one's. who is what runs it
// (findMCPProgram).
func runMCPProgram(ios *iostreams, executable func() (string, error), args, env []string, who string) error {
	path, err := findMCPProgram(executable, who)
	if err != nil {
		return err
	}
	return execMCP(ios, path, args, env)
}
