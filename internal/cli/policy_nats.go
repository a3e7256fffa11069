package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
)

// natsConfigOptions are `policy nats-config`'s request: the streams, the
// keys' folder and the nodes.
type natsConfigOptions struct {
	io    *iostreams
	bus   wiring.Bus
	keys  string
	nodes []string
}

// newPolicyNATSConfigCmd is `peerctl policy nats-config`: who may do what
// on the fleet's bus, as the NATS servers' permissions (docs/FLEET.md).
func newPolicyNATSConfigCmd(f *factory) *cobra.Command {
	opts := &natsConfigOptions{io: f.io, bus: f.bus}
	cmd := &cobra.Command{
		Use:   "nats-config --keys DIR NODE...",
		Short: "Print the fleet's NATS servers' configuration: each node its own credentials",
		Long: helpLong(`Print a nats-server configuration (an authorization block) with one user per NODE, by nkey`, "policy-nats-config") + `

Each node may publish only its own presence and read everyone's, take only its own requests
(peerctl.v1.req.NODE.*), read only its own replies, and make requests to any node as itself
only: the sender another node's trust policy sees (node:NAME) is the one the servers let in.

Each node's key is DIR/NODE.nk: made (mode 0600) when it is not there, kept when it is. Copy
it to that machine only and give it there as --nats-creds or $PEERCTL_NATS_CREDS; the servers
keep only the public keys. A seed file that its group or others may read or write is refused
(exit 1), as ssh refuses such a private key: chmod 600 it, or make it anew. Include the printed block in every server's configuration, beside
jetstream {}; a node not named in it cannot connect.`,
		Example: `  peerctl policy nats-config --keys ./fleet-keys dev-box-1 dev-box-2 > peerctl-fleet.conf
  peerctl policy nats-config --keys ./fleet-keys dev-box-1 dev-box-2 ci-7 > peerctl-fleet.conf   # one more
  scp ./fleet-keys/dev-box-1.nk dev-box-1:.config/peerctl/nats.nk`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.keys == "":
				return usageError{errors.New("--keys DIR: the folder of the nodes' keys (made when missing)")}
			case len(args) == 0:
				return usageError{errors.New("name the nodes: peerctl policy nats-config --keys DIR NODE [NODE...]")}
			}
			// Every name is checked before a key is made.
			for i, node := range args {
				if _, err := domain.ParseNode(node); err != nil {
					return usageError{err}
				}
				if slices.Contains(args[:i], node) {
					return usageError{fmt.Errorf("node %s named twice", node)}
				}
			}
			opts.nodes = args
			if f.bus == nil {
				return f.runWithBus("policy nats-config") // its keys are nkeys
			}
			f.started()
			return runPolicyNATSConfig(opts)
		},
	}
	cmd.Flags().StringVar(&opts.keys, "keys", "", "the folder of the nodes' nkey seeds, DIR/NODE.nk (made when missing)")
	return cmd
}

// runPolicyNATSConfig makes the nodes' keys that are missing (saying so
// on stderr) and prints the servers' configuration for them.
func runPolicyNATSConfig(opts *natsConfigOptions) error {
	var users []wiring.NodeUser
	for _, node := range opts.nodes {
		pub, made, err := opts.bus.NodeKey(opts.keys, node)
		if err != nil {
			return err
		}
		if made {
			fmt.Fprintf(opts.io.errOut, "peerctl: made node %s's key: %s (give it to that machine only)\n", node, safe(filepath.Join(opts.keys, node+".nk")))
		}
		users = append(users, wiring.NodeUser{Node: node, PublicKey: pub})
	}
	conf, err := opts.bus.Config(users)
	if err != nil {
		return usageError{err} // a node named twice
	}
	_, err = fmt.Fprint(opts.io.out, conf)
	return err
}
