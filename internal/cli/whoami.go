package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// whoamiJSON is `whoami --json` output: the session's fields as in
// `show --json`'s common part, plus how it was found (docs/OUTPUT.md).
type whoamiJSON struct {
	wire.Session
	Via      string `json:"via"`      // socket-env or ancestor
	PIDChain []int  `json:"pidChain"` // pids walked, ours first; empty for socket-env
}

// whoamiOptions are what whoami needs: the streams, the use cases with
// the process tree, and this process (its pid, its environment).
type whoamiOptions struct {
	io      *iostreams
	service func(options, ...any) (*app.Service, error)
	pid     int
	getenv  func(string) string
	json    bool
}

func newWhoamiCmd(f *factory) *cobra.Command {
	opts := &whoamiOptions{io: f.io, service: f.service, pid: f.pid, getenv: f.getenv}
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the session this shell runs inside",
		Long:  helpLong(`Show the live session this command runs inside (its id, name, pid, endpoint)`, "whoami"),
		Example: `  peerctl whoami
  peerctl whoami --jq .endpoint
  peerctl send other-session "review $(peerctl whoami --jq .name)'s branch"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.started()
			f.io.jsonOut = opts.json
			return runWhoami(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	return cmd
}

// runWhoami shows the live session this process runs inside.
func runWhoami(ctx context.Context, opts *whoamiOptions) error {
	var procs ports.Processes
	svc, err := opts.service(options{}, &procs)
	if err != nil {
		return err
	}
	self, err := svc.Whoami(ctx, procs, opts.pid, opts.getenv)
	if err != nil {
		return err
	}
	j := whoamiJSON{Session: wire.SessionOf(self.Entry), Via: self.Via.String(), PIDChain: self.Chain}
	if j.PIDChain == nil {
		j.PIDChain = []int{}
	}
	if opts.json {
		return opts.io.writeJSON(j)
	}
	fmt.Fprintf(opts.io.out, "session:  %s\nname:     %s\npid:      %d\ncwd:      %s\nendpoint: %s\nfound by: %s\n",
		cell(j.SessionID), cell(j.Name), j.PID, cell(j.Cwd), cell(j.Endpoint), j.Via)
	if !j.Addressable {
		fmt.Fprintf(opts.io.errOut, "peerctl: note: this session is not addressable: %s\n", j.Unaddressable)
	}
	return nil
}
