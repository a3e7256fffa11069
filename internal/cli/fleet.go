package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// The fleet: machines whose services meet on a NATS JetStream bus
// (docs/FLEET.md). A service given a bus publishes its live sessions
// under its node's name (`list --fleet` reads every node's at once) and
// answers the requests of other machines (`--host nats:NODE`), each from a
// node its trust policy decides on. The bus client (c.bus,
// internal/fleet) is linked into peerctl-mcp only: peerctl runs a command
// that needs it there (runWithBus).

const (
	natsEnv      = "PEERCTL_NATS"
	natsCredsEnv = "PEERCTL_NATS_CREDS"
	nodeEnv      = "PEERCTL_NODE"
)

// busFlags are --nats, --nats-creds and (serve) --node as given; "" for
// a flag not given, which its variable then fills.
type busFlags struct {
	urls, creds, node string
}

// addBusFlags adds --nats and --nats-creds to cmd, and --node with node.
func addBusFlags(cmd *cobra.Command, f *busFlags, node bool) {
	cmd.Flags().StringVar(&f.urls, "nats", "", "the fleet's NATS servers, comma-separated (default $"+natsEnv+")")
	cmd.Flags().StringVar(&f.creds, "nats-creds", "", "a NATS .creds or nkey seed file (default $"+natsCredsEnv+")")
	if node {
		cmd.Flags().StringVar(&f.node, "node", "", "this machine's name on the bus (default $"+nodeEnv+" or the host name)")
	}
}

// settings resolves f with the variables: ok is false when no bus is
// configured (no --nats, $PEERCTL_NATS unset or empty). A bad server list
// or credentials file is a usage error, told by bus (nil: not checked
// here, the program with the bus client checks it).
func busSettings(cmd *cobra.Command, getenv func(string) string, bus wiring.Bus, f busFlags, name string) (wiring.BusSettings, bool, error) {
	s := wiring.BusSettings{URLs: flagOrEnv(cmd, getenv, "nats", f.urls, natsEnv), Creds: flagOrEnv(cmd, getenv, "nats-creds", f.creds, natsCredsEnv), Name: name}
	if cmd.Flags().Changed("nats") && f.urls == "" {
		return s, false, usageError{errors.New("--nats: empty (want URL[,URL...], such as nats://127.0.0.1:4222)")}
	}
	if s.URLs == "" {
		return s, false, nil
	}
	if bus == nil {
		return s, true, nil
	}
	if err := bus.Check(s); err != nil {
		return s, false, usageError{err}
	}
	return s, true, nil
}

// runWithBus runs this command line as peerctl-mcp, the program with the
// fleet's bus client linked in (on Unix in place of this process); what
// names the bus's use for the errors, such as "list --fleet".
func (c *factory) runWithBus(what string) error {
	return runMCPProgram(c.io, c.executable, c.args, c.environ(), what)
}

// flagOrEnv is the flag's value when given, else the variable's.
func flagOrEnv(cmd *cobra.Command, getenv func(string) string, flag, value, env string) string {
	if cmd.Flags().Changed(flag) {
		return value
	}
	return getenv(env)
}

// nodeName is this machine's node name: --node (cmd nil or without the
// flag: none), else $PEERCTL_NODE, else the host name, as a valid node
// name (domain.ParseNode). A bad one, an empty --node and a
// $PEERCTL_NODE set empty are usage errors.
func (c *factory) nodeName(cmd *cobra.Command, f busFlags) (string, error) {
	name, from, fix := c.getenv(nodeEnv), "$"+nodeEnv, "set $"+nodeEnv
	set := slices.ContainsFunc(c.environ(), func(kv string) bool { return strings.HasPrefix(kv, nodeEnv+"=") })
	if cmd != nil && cmd.Flags().Lookup("node") != nil {
		fix = "give --node NAME"
		if cmd.Flags().Changed("node") {
			name, from, set = f.node, "--node", true
		}
	}
	if name == "" && set {
		return "", usageError{fmt.Errorf("%s: empty (want a node name, such as dev-box-3; leave it unset for the host name)", from)}
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", usageError{fmt.Errorf("no --node, no $%s, and no host name to take: %w", nodeEnv, err)}
		}
		name, from = h, "the host name"
	}
	if _, err := domain.ParseNode(name); err != nil {
		return "", usageError{fmt.Errorf("this machine's node name (%s): %w; %s", from, err, fix)}
	}
	return name, nil
}

// joinBus is how the service of state folder stateDir joins the bus
// (serve.Options.Join), nil when no bus is configured, and the live view
// of every node's presence it keeps (serve.Options.Fleet). A bad --nats or
// --node is a usage error now, before the service starts. A program
// without the bus client runs the service as peerctl-mcp (runWithBus).
func (c *factory) joinBus(cmd *cobra.Command, f busFlags, stateDir string) (func(context.Context, serve.Answerer, wiring.Mailbox) (func(), wiring.PostMail, error), *wiring.FleetView, error) {
	settings, ok, err := busSettings(cmd, c.getenv, c.bus, f, "")
	if err != nil || !ok {
		return nil, nil, err
	}
	if c.bus == nil {
		return nil, nil, c.runWithBus("serve with a bus (--nats, $" + natsEnv + ")")
	}
	node, err := c.nodeName(cmd, f)
	if err != nil {
		return nil, nil, err
	}
	// The service's own requests to other nodes (its dashboard's nats:
	// hosts) go on its bus, as its node.
	requests := settings
	requests.Node = node
	c.listNATS = &requests
	view := &wiring.FleetView{URLs: settings.URLs}
	c.busLink = serve.NewBusLink(node, settings.URLs)
	return func(life context.Context, answering serve.Answerer, mail wiring.Mailbox) (func(), wiring.PostMail, error) {
		return c.present(life, settings, node, stateDir, answering, mail, view)
	}, view, nil
}

// present joins the bus as node for the service of stateDir, publishing
// this machine's live sessions (wiring.Bus.Join), answering other
// nodes' requests (on the nodes answering makes) and keeping view; mail
// takes other nodes' durable sends (nil: none) and the receipts of this
// one's; wait waits for it to have left; post puts a durable send in
// another's mail.
func (c *factory) present(life context.Context, settings wiring.BusSettings, node, stateDir string, answering serve.Answerer, mail wiring.Mailbox, view *wiring.FleetView) (wait func(), post wiring.PostMail, err error) {
	logf := func(format string, args ...any) { fmt.Fprintf(c.io.errOut, "peerctl serve: "+format+"\n", args...) }
	answer := func(sender string) app.Node { return c.answering(sender, answering) }
	return c.bus.Join(life, wiring.Presence{Settings: settings, Node: node, StateDir: stateDir, Version: c.version().Version,
		Local: c.localNode(nil), Answer: answer, OnBus: c.busLink.Set, Mail: mail, Logf: logf, View: view})
}

// answering is what this machine's service answers a request of node
// sender with: its own use cases, every send run by the service
// (serve.Answerer: on its warm couriers, decided by its trust policy as
// a message from entrance node:SENDER, docs/POLICY.md, one it holds kept
// awaiting approval).
func (c *factory) answering(sender string, answering serve.Answerer) app.Node {
	n := answering(c.localNode(&app.Sending{Entrance: domain.EntranceNode, Where: sender}), sender)
	if c.busActivity == nil {
		return n
	}
	return busy{n, c.busActivity}
}

// busy is a node whose every use case counts as the service's activity
// while it runs (serve --idle-exit waits for other nodes' requests).
type busy struct {
	app.Node
	a *serve.Activity
}

func (b busy) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	defer b.a.Begin()()
	return b.Node.List(ctx, q)
}

func (b busy) Show(ctx context.Context, address string) (wire.Show, error) {
	defer b.a.Begin()()
	return b.Node.Show(ctx, address)
}

func (b busy) Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error) {
	defer b.a.Begin()()
	return b.Node.Enrich(ctx, ids)
}

func (b busy) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	defer b.a.Begin()()
	return b.Node.Send(ctx, q)
}

func (b busy) Doctor(ctx context.Context) (wire.Doctor, error) {
	defer b.a.Begin()()
	return b.Node.Doctor(ctx)
}

// requestSettings are how this command reaches the bus for --host
// nats:NODE: list's --nats and --nats-creds when given, or serve's own
// bus (c.listNATS, set by joinBus), else $PEERCTL_NATS and
// $PEERCTL_NATS_CREDS; this machine's node name (the sender) is serve's
// node, else nodeName's. No bus is a usage error; the servers' list and
// the credentials file are checked by the bus client (c.bus), when linked
// in.
func (c *factory) requestSettings() (wiring.BusSettings, error) {
	s := wiring.BusSettings{URLs: c.getenv(natsEnv), Creds: c.getenv(natsCredsEnv)}
	if c.listNATS != nil {
		s = *c.listNATS
	}
	if s.URLs == "" {
		return s, usageError{fmt.Errorf("--host nats:NODE: no bus: set $%s (list: or give --nats URL[,URL...])", natsEnv)}
	}
	if c.bus != nil {
		if err := c.bus.Check(s); err != nil {
			return s, usageError{fmt.Errorf("--host nats:NODE: %w", err)}
		}
	}
	if s.Node != "" { // serve's --node, checked
		return s, nil
	}
	node, err := c.nodeName(nil, busFlags{})
	if err != nil {
		return s, err
	}
	s.Node = node
	return s, nil
}

// busNode is the node of the fleet's bus dest names, each call bounded by
// limit: its requests carried by this machine's service when carried
// (checkReach looked: it is on that bus; never for presence, a watch's),
// else by the bus client's own connection.
func (c *factory) busNode(dest domain.Dest, limit time.Duration, carried bool) (app.Node, error) {
	s, err := c.requestSettings()
	if err != nil {
		return nil, err
	}
	if carried || c.bus == nil {
		return wiring.NewBusNode(serviceCarrier{c.serveClient(), s.URLs}, dest, limit)
	}
	return c.bus.Node(s, dest, limit)
}
