package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// noPeerctlOnPath is doctor's warning when no peerctl is on PATH: the
// Claude Code plugin (and `claude mcp add peerctl -- peerctl mcp`) starts
// its MCP server as the command peerctl, and Claude Code then says only
// "spawn peerctl ENOENT" (failed to connect, in claude mcp list).
const noPeerctlOnPath = "no peerctl on PATH: the Claude Code plugin's MCP server (the command peerctl mcp) fails to start " +
	"with \"spawn peerctl ENOENT\"; put peerctl and peerctl-mcp in a folder on the PATH Claude Code starts with " +
	"(make build, then cp bin/peerctl bin/peerctl-mcp ~/.local/bin), then restart Claude Code"

// mcpDoctor is doctor's check of what `peerctl mcp` runs: the server
// linked into this program (serveMCP), else peerctl-mcp beside it or on
// PATH, which must be this very build.
type mcpDoctor struct {
	serveMCP   MCPServer
	executable func() (string, error)
	environ    func() []string
	version    func() versionJSON
}

// newMCPDoctor is c's mcpDoctor.
func newMCPDoctor(c *factory) mcpDoctor {
	return mcpDoctor{serveMCP: c.serveMCP, executable: c.executable, environ: c.environ, version: c.version}
}

// check checks what `peerctl mcp` would run, and that a peerctl is on
// PATH for an MCP client to start (noPeerctlOnPath). Never a problem:
// only peerctl mcp needs either; they are warnings.
func (c mcpDoctor) check(ctx context.Context) wire.DoctorMCP {
	d := c.program(ctx)
	if _, err := exec.LookPath("peerctl"); err != nil {
		d.Health = app.HealthWarn.String()
		d.Note = noPeerctlOnPath + "; " + d.Note
	}
	return d
}

// program checks what `peerctl mcp` would run. None, or a peerctl-mcp
// without the server, is a warning.
func (c mcpDoctor) program(ctx context.Context) wire.DoctorMCP {
	if c.serveMCP != nil {
		self, _ := c.executable()
		return wire.DoctorMCP{Health: app.HealthOK.String(), Path: self, Note: "the MCP server is linked into this program (peerctl mcp serves)"}
	}
	path, err := findMCPProgram(c.executable, "peerctl mcp")
	switch {
	case err == nil:
		if differs := c.buildDiffers(ctx, path); differs != "" {
			return wire.DoctorMCP{Health: app.HealthWarn.String(), Path: path, Note: differs}
		}
		return wire.DoctorMCP{Health: app.HealthOK.String(), Path: path, Note: path + " (peerctl mcp runs it)"}
	case errors.Is(err, errNoMCPServer), errors.Is(err, errUnusableMCP):
		return wire.DoctorMCP{Health: app.HealthWarn.String(), Note: err.Error()}
	default:
		// A warning, not a skip: the Claude Code plugin's MCP server is
		// peerctl mcp, which then cannot start.
		return wire.DoctorMCP{Health: app.HealthWarn.String(), Note: "no " + mcpProgram + " beside peerctl or on PATH: " + mcpNeeded + " need it; " + mcpInstallHint}
	}
}

// mcpVersionTimeout bounds doctor's "peerctl-mcp version --json".
var mcpVersionTimeout = 10 * time.Second

// buildDiffers runs "path version --json" (bounded by mcpVersionTimeout,
// its whole process group ended afterwards, at most 64 KiB of its output
// read; ctx ends it too, as Ctrl-C does) and says
// how that build differs from this one, or "" when it is the same build
// (module, version, revision, modified) or cannot say: peerctl mcp serves
// what peerctl-mcp was built from, so a peerctl-mcp left from an older
// install serves older tools.
func (c mcpDoctor) buildDiffers(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, mcpVersionTimeout)
	defer cancel()
	cmd := exec.Command(path, "version", "--json")
	cmd.Env = c.environ()
	out, err := wiring.RunBounded(ctx, cmd, 64<<10)
	if err != nil {
		return fmt.Sprintf("%s (peerctl mcp runs it) did not say its version: %v", path, err)
	}
	var them versionJSON
	if err := json.Unmarshal(out, &them); err != nil {
		return fmt.Sprintf("%s (peerctl mcp runs it) printed no version: %v", path, err)
	}
	if them.Version == "" {
		them.Version = "(no version)"
	}
	us := c.version()
	if them.Module == us.Module && them.Version == us.Version && them.Revision == us.Revision && them.Modified == us.Modified {
		return ""
	}
	return fmt.Sprintf("%s (peerctl mcp runs it) is another build: %s; this peerctl is %s; install both from one source (make build, or go install ./cmd/...)",
		path, them.short(), us.short())
}

// doctorOptions are doctor's request and what it needs.
type doctorOptions struct {
	io   *iostreams
	node func(domain.Dest) (app.Node, error)
	dest domain.Dest
	json bool
}

func newDoctorCmd(f *factory) *cobra.Command {
	opts := &doctorOptions{io: f.io, node: f.node}
	var hosts []string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that peerctl can work here (it never sends anything)",
		Long:  helpLong(`Check the setup of `+wiring.Plugins().Titles("and")+` (each one's program, registry and sessions) and of peerctl-mcp, without sending`, "doctor"),
		Example: `  peerctl doctor
  peerctl doctor --jq '.problems[]'
  peerctl doctor --claude ~/bin/claude
  peerctl doctor --host dev-box`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dests, err := parseHosts(hosts, false)
			if err != nil {
				return err
			}
			f.started()
			f.io.jsonOut = opts.json // a refusal prints as JSON too
			if len(dests) == 1 {
				opts.dest = dests[0]
			}
			return runDoctor(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	f.flags.add(cmd)
	addHostFlag(cmd, &hosts, false)
	return cmd
}

// runDoctor checks the setup of opts.dest's node and prints its report.
func runDoctor(ctx context.Context, opts *doctorOptions) error {
	n, err := opts.node(opts.dest)
	if err != nil {
		return err
	}
	doc, err := n.Doctor(ctx)
	if err != nil {
		return err
	}
	return printDoctor(opts.io, doc, opts.json)
}

// doctorSetup is what this machine's doctor checks with.
func (c *factory) doctorSetup() (app.DoctorSetup, error) {
	var procs ports.Processes
	svc, err := c.service(options{}, &procs)
	return app.DoctorSetup{Service: svc, Procs: procs, Env: app.DoctorEnv{Self: c.pid, Environ: c.environ(), UID: c.uid}, MCP: newMCPDoctor(c).check}, err
}

// printDoctor prints a doctor's report, made here or on another machine:
// its notes on stderr (passLines), the document as JSON or its table for people (each
// cell escaped; on a terminal a long text, such as the mcp row's warning,
// wrapped in lines under its column) and summary on stdout, then each
// problem on stderr ("peerctl: problem: ..."); a problem exits 1.
func printDoctor(ios *iostreams, doc wire.Doctor, asJSON bool) error {
	passLines(ios.errOut, doc.Notes)
	if asJSON {
		if err := ios.writeJSON(doc); err != nil {
			return err
		}
	} else {
		on := ios.colourOn(ios.out)
		var t table
		for _, r := range doc.Rows {
			t.add(safe(r.Check), paint(on, stateColour(r.Health), safe(r.Health)), cell(r.Text))
		}
		t.wrapLast(terminalColumns(ios.out))
		if err := t.write(ios.out); err != nil {
			return err
		}
		fmt.Fprintln(ios.out, safe(doc.Summary))
	}
	problem := paint(ios.colourOn(ios.errOut), colourRed, "problem")
	for _, p := range doc.Problems {
		fmt.Fprintf(ios.errOut, "peerctl: %s: %s\n", problem, safe(p))
	}
	if !doc.OK {
		return errDoctor
	}
	return nil
}

// errDoctor ends `peerctl doctor` with exit code 1 after it printed its
// problems (execute prints nothing more for it).
var errDoctor = silentError{code: wire.ExitError}

// silentError carries an exit code for a command that already reported.
type silentError struct{ code int }

func (s silentError) Error() string { return fmt.Sprintf("exit %d", s.code) }
