package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// The fleet: machines whose services meet on a NATS JetStream bus
// (adapters/natsbus, docs/FLEET.md). This step carries presence: a service
// given a bus publishes its live sessions under its node's name, and
// `list --fleet` reads every node's at once.

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
	cmd.Flags().StringVar(&f.urls, "nats", "", "the fleet's NATS servers, comma-separated (default $"+natsEnv+"; docs/FLEET.md)")
	cmd.Flags().StringVar(&f.creds, "nats-creds", "", "a NATS .creds or nkey seed file (default $"+natsCredsEnv+")")
	if node {
		cmd.Flags().StringVar(&f.node, "node", "", "this machine's unique name on the bus (default $"+nodeEnv+", else the host name)")
	}
}

// settings resolves f with the variables: ok is false when no bus is
// configured (no --nats, $PEERCTL_NATS unset or empty). A bad server list
// is a usage error.
func (c *cli) busSettings(cmd *cobra.Command, f busFlags, name string) (natsbus.Settings, bool, error) {
	s := natsbus.Settings{URLs: c.flagOrEnv(cmd, "nats", f.urls, natsEnv), Creds: c.flagOrEnv(cmd, "nats-creds", f.creds, natsCredsEnv), Name: name}
	if cmd.Flags().Changed("nats") && f.urls == "" {
		return s, false, usageError{errors.New("--nats: empty (want URL[,URL...], such as nats://127.0.0.1:4222)")}
	}
	if s.URLs == "" {
		return s, false, nil
	}
	if _, err := natsbus.SplitURLs(s.URLs); err != nil {
		return s, false, usageError{err}
	}
	return s, true, nil
}

// flagOrEnv is the flag's value when given, else the variable's.
func (c *cli) flagOrEnv(cmd *cobra.Command, flag, value, env string) string {
	if cmd.Flags().Changed(flag) {
		return value
	}
	return c.getenv(env)
}

// nodeName is --node, else $PEERCTL_NODE, else the host name, as a valid
// node name (natsbus.ParseNode); a bad one is a usage error.
func (c *cli) nodeName(cmd *cobra.Command, f busFlags) (string, error) {
	name := c.flagOrEnv(cmd, "node", f.node, nodeEnv)
	from := "--node"
	if !cmd.Flags().Changed("node") {
		from = "$" + nodeEnv
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", usageError{fmt.Errorf("no --node, no $%s, and no host name to take: %w", nodeEnv, err)}
		}
		name, from = h, "the host name"
	}
	if _, err := natsbus.ParseNode(name); err != nil {
		return "", usageError{fmt.Errorf("%s: %w; give --node NAME", from, err)}
	}
	return name, nil
}

// joinBus is how the service of state folder stateDir joins the bus
// (serve.Options.Join), nil when no bus is configured. A bad --nats or
// --node is a usage error now, before the service starts.
func (c *cli) joinBus(cmd *cobra.Command, f busFlags, stateDir string) (func(context.Context) (func(), error), error) {
	settings, ok, err := c.busSettings(cmd, f, "")
	if err != nil || !ok {
		return nil, err
	}
	node, err := c.nodeName(cmd, f)
	if err != nil {
		return nil, err
	}
	return func(life context.Context) (func(), error) { return c.present(life, settings, node, stateDir) }, nil
}

// present joins the bus as node, under its name (refused when another
// live service holds it), and keeps its presence until life ends
// (app.Present); wait waits for it to have left.
func (c *cli) present(life context.Context, settings natsbus.Settings, node, stateDir string) (wait func(), err error) {
	settings.Name = "peerctl serve " + node
	bus, err := natsbus.Connect(settings, true)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	owner := sha256.Sum256([]byte(host + "\x00" + stateDir))
	me := natsbus.Member{Node: node, Owner: hex.EncodeToString(owner[:16]), Host: host, PID: os.Getpid(), Version: c.version().Version}
	logf := func(format string, args ...any) { fmt.Fprintf(c.stderr, "peerctl serve: "+format+"\n", args...) }
	// A bus that answers decides the name now: a taken one ends the
	// service before it serves. One that does not answer yet keeps no
	// service from its outbox: it joins when the bus answers.
	var p *natsbus.Presence
	if bus.Connected() {
		if p, err = bus.Join(life, me); errors.Is(err, natsbus.ErrNodeTaken) || errors.Is(err, natsbus.ErrBadNode) {
			bus.Close()
			return nil, fmt.Errorf("join the fleet as node %s: %w", node, err)
		}
	}
	if p == nil {
		why := "no server answers"
		if err != nil {
			why = err.Error()
		}
		logf("the fleet's bus %s: %s; node %s joins when it answers", safe(settings.URLs), safe(why), node)
	}
	local, err := c.node(domain.Dest{})
	if err != nil {
		bus.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer bus.Close()
		for p == nil {
			select {
			case <-life.Done():
				return
			case <-time.After(natsbus.Refresh):
			}
			var err error
			if p, err = bus.Join(life, me); errors.Is(err, natsbus.ErrNodeTaken) {
				logf("presence stopped: %s", safe(err.Error()))
				return
			}
		}
		logf("node %s on the bus %s (presence in %s, refreshed every %s, gone %s after the service)", node, safe(settings.URLs),
			natsbus.PresenceBucket, natsbus.Refresh, natsbus.TTL)
		err := app.Present(life, local, p, natsbus.Refresh, func(err error) bool { return errors.Is(err, natsbus.ErrNodeTaken) }, func(line string) {
			logf("%s", safe(line))
		})
		if err != nil {
			logf("presence stopped: %s", safe(err.Error()))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), natsbus.Refresh)
		defer cancel()
		if err := p.Leave(ctx); err != nil {
			logf("leaving the fleet: %s (the node drops out %s after its last refresh)", safe(err.Error()), natsbus.TTL)
		}
	})
	return wg.Wait, nil
}

// fleetListing is every node's presence on the bus (natsbus.Bus.Fleet),
// only's harnesses' sessions (all when none), as one node's listing: a bus
// that does not answer is host_unreachable.
func (c *cli) fleetListing(ctx context.Context, settings natsbus.Settings, only []domain.Harness) app.NodeListing {
	bus, err := natsbus.Connect(settings, false)
	if err != nil { // it names the servers
		return app.NodeListing{Err: domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus: %s", safe(err.Error()))}
	}
	defer bus.Close()
	l, err := bus.Fleet(ctx)
	if err != nil {
		return app.NodeListing{Err: domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus (%s): %s", safe(settings.URLs), safe(err.Error()))}
	}
	l.Sessions = slices.DeleteFunc(l.Sessions, func(s wire.Session) bool {
		return len(only) > 0 && !slices.ContainsFunc(only, func(h domain.Harness) bool { return h.String() == s.Harness })
	})
	return app.NodeListing{Listing: l}
}
