package cli

import (
	"fmt"

	"github.com/spf13/cobra"

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

func (c *cli) whoamiCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the session this shell runs inside",
		Long:  helpLong(`Show the live session this command runs inside (its id, name, pid, endpoint)`, "whoami"),
		Example: `  peerctl whoami
  peerctl whoami --json | jq -r .endpoint
  peerctl send other-session "review $(peerctl whoami --json | jq -r .name)'s branch"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.started()
			c.jsonOut = asJSON
			var procs ports.Processes
			svc, err := c.service(options{}, &procs)
			if err != nil {
				return err
			}
			self, err := svc.Whoami(cmd.Context(), procs, c.pid, c.getenv)
			if err != nil {
				return err
			}
			j := whoamiJSON{Session: wire.SessionOf(self.Entry), Via: self.Via.String(), PIDChain: self.Chain}
			if j.PIDChain == nil {
				j.PIDChain = []int{}
			}
			if asJSON {
				return c.writeJSON(j)
			}
			fmt.Fprintf(c.stdout, "session:  %s\nname:     %s\npid:      %d\ncwd:      %s\nendpoint: %s\nfound by: %s\n",
				cell(j.SessionID), cell(j.Name), j.PID, cell(j.Cwd), cell(j.Endpoint), j.Via)
			if !j.Addressable {
				fmt.Fprintf(c.stderr, "peerctl: note: this session is not addressable: %s\n", j.Unaddressable)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	return cmd
}
