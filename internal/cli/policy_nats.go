package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
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
		Short: "Print the fleet's NATS servers' configuration, a key per node",
		Long: helpLong(`Print a nats-server configuration (an authorization block) with one user per NODE, by nkey`, "policy-nats-config") + `

Each node may publish only its own presence and read everyone's, take only its own requests
(peerctl.v1.req.NODE.*), read only its own replies, and make requests to any node as itself
only: the sender another node's trust policy sees (node:NAME) is the one the servers let in.
Its durable mail: it may put mail and receipts in any node's inbox as itself only, and read
only its own inbox and receipts (the mail stream's consumers inbox_NODE and receipts_NODE,
with its own filter): no stream message read, purge or delete.

No node may make, change, purge or delete the mail stream or the presence bucket: whoever
makes a stream chooses where it copies what it holds. The operator's key, DIR/_admin.nk (made
like a node's), may do that and nothing else: keep it off the nodes, and run once, after the
servers have the printed block, peerctl policy nats-setup --nats URL --nats-creds DIR/_admin.nk.

Each node's key is DIR/NODE.nk: made (mode 0600) when it is not there, kept when it is. Copy
it to that machine only and give it there as --nats-creds or $PEERCTL_NATS_CREDS; the servers
keep only the public keys. A seed file that its group or others may read or write is refused
(exit 1), as ssh refuses such a private key: chmod 600 it, or make it anew. Include the printed block in every server's configuration, beside
jetstream {}; a node not named in it cannot connect.`,
		Example: `  peerctl policy nats-config --keys ./fleet-keys dev-box-1 dev-box-2 \
    > peerctl-fleet.conf
  peerctl policy nats-config --keys ./fleet-keys dev-box-1 dev-box-2 ci-7 \
    > peerctl-fleet.conf   # one node more
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
	admin, made, err := opts.bus.AdminKey(opts.keys)
	if err != nil {
		return err
	}
	if made {
		fmt.Fprintf(opts.io.errOut, "peerctl: made the operator's key: %s (for peerctl policy nats-setup; keep it off the nodes)\n", safe(filepath.Join(opts.keys, wire.AdminKeyFile)))
	}
	conf, err := opts.bus.Config(admin, users)
	if err != nil {
		return usageError{err} // a node named twice
	}
	_, err = fmt.Fprint(opts.io.out, conf)
	return err
}

// natsSetupOptions are `policy nats-setup`'s request.
type natsSetupOptions struct {
	io       *iostreams
	bus      wiring.Bus
	settings wiring.BusSettings
	json     bool
}

// newPolicyNATSSetupCmd is `peerctl policy nats-setup`: the operator's
// step that makes the fleet's mail stream and presence bucket (docs/FLEET.md).
func newPolicyNATSSetupCmd(f *factory) *cobra.Command {
	opts := &natsSetupOptions{io: f.io, bus: f.bus}
	var flags busFlags
	cmd := &cobra.Command{
		Use:   "nats-setup [--nats URL] [--nats-creds DIR/_admin.nk]",
		Short: "Make or check the fleet's mail stream and presence bucket",
		Long: helpLong(`Make the fleet's mail stream (peerctl_mail) and presence bucket (peerctl_presence) on the bus
when missing, with peerctl's configuration, and check them when there`, "policy-nats-setup") + `

Under policy nats-config's per-node credentials no node may make them (whoever makes a
stream chooses where it copies what it holds), so the operator runs this once, with the
operator's key policy nats-config made (DIR/_admin.nk), after the servers have its block. A
node's service that finds them missing says to run it. On an open bus (no credentials) a
service makes them itself; this makes them ahead, or checks them.

Run again, it makes nothing and checks what is there: a stream whose configuration is not
peerctl's (other subjects, a republish, a mirror or sources, a subject transform, weaker
limits) is refused (exit 1) naming what differs; delete it (nats stream rm) and run this again.
Every service refuses such a stream as well.`,
		Example: `  peerctl policy nats-config --keys ./fleet-keys dev-box-1 dev-box-2 \
    > peerctl-fleet.conf
  peerctl policy nats-setup --nats nats://bus-1:4222 \
    --nats-creds ./fleet-keys/_admin.nk --jq .made
  peerctl policy nats-setup --nats nats://127.0.0.1:4222   # an open bus`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, ok, err := busSettings(cmd, f.getenv, f.bus, flags, "peerctl policy nats-setup")
			if err != nil {
				return err
			}
			if !ok {
				return usageError{fmt.Errorf("no bus: give --nats URL[,URL...] (or set $%s) and --nats-creds DIR/%s", natsEnv, wire.AdminKeyFile)}
			}
			if f.bus == nil {
				return f.runWithBus("policy nats-setup")
			}
			f.io.jsonOut = opts.json
			f.started()
			opts.settings, opts.bus = s, f.bus
			return runPolicyNATSSetup(cmd.Context(), opts)
		},
	}
	addBusFlags(cmd, &flags, false)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object: {made, found} (docs/OUTPUT.md)")
	return cmd
}

// natsSetupOut is `policy nats-setup --json`'s object.
type natsSetupOut struct {
	Made  []string `json:"made"`
	Found []string `json:"found"`
}

// runPolicyNATSSetup makes or checks the fleet's streams and says which.
func runPolicyNATSSetup(ctx context.Context, opts *natsSetupOptions) error {
	made, found, err := opts.bus.Setup(ctx, opts.settings)
	if err != nil {
		return err
	}
	out := natsSetupOut{Made: made, Found: found}
	if out.Made == nil {
		out.Made = []string{}
	}
	if out.Found == nil {
		out.Found = []string{}
	}
	if opts.json {
		return opts.io.writeJSON(out)
	}
	for _, m := range made {
		fmt.Fprintf(opts.io.out, "made  %s\n", m)
	}
	for _, m := range found {
		fmt.Fprintf(opts.io.out, "ok    %s (peerctl's configuration)\n", m)
	}
	return nil
}
