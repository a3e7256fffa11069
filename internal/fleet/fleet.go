// Package fleet is the fleet's bus client (wiring.Bus over
// adapters/natsbus, docs/FLEET.md): a service's presence under its node's
// name (serve --nats), with its answers to other nodes' requests; every
// node's presence read at once (list --fleet); a node of the bus as a node
// of the use cases (--host nats:NODE); and the nodes' nkeys and the
// servers' permissions (policy nats-config). It is the bus's part of the composition root, linked only into
// peerctl-mcp (cmd/peerctl-mcp passes it to cli.Main): the NATS client's
// package initialisation (nats.go, jetstream, nkeys, encoding/gob) cost
// every command about a tenth of a `list` (docs/PERFORMANCE.md), so
// peerctl runs a command that needs the bus as peerctl-mcp.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// settingsOf is s as natsbus takes it.
func settingsOf(s wiring.BusSettings) natsbus.Settings {
	return natsbus.Settings{URLs: s.URLs, Creds: s.Creds, Name: s.Name, Node: s.Node, Timeout: s.Timeout}
}

// mailPoll is how often a service looks for changes of the messages it
// took from the bus, to publish their receipts (and at once after a take).
const mailPoll = time.Second

// Bus is the fleet's bus over NATS; the zero value is ready.
type Bus struct{}

var _ wiring.Bus = Bus{}

// Check refuses a bad comma-separated list of NATS servers
// (natsbus.SplitURLs) and a credentials file that cannot be used
// (natsbus.CheckCreds).
func (Bus) Check(s wiring.BusSettings) error {
	if _, err := natsbus.SplitURLs(s.URLs); err != nil {
		return err
	}
	if s.Creds == "" {
		return nil
	}
	return natsbus.CheckCreds(s.Creds)
}

// Listing is every node's presence on the bus, only's harnesses'
// sessions (all when none), as one node's listing: a bus that does not
// answer is host_unreachable.
func (Bus) Listing(ctx context.Context, settings wiring.BusSettings, only []domain.Harness) app.NodeListing {
	bus, err := natsbus.Connect(settingsOf(settings), false)
	if err != nil { // it names the servers
		return app.NodeListing{Err: domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus: %s", wire.Safe(err.Error()))}
	}
	defer bus.Close()
	l, err := bus.Fleet(ctx)
	if err != nil {
		return app.NodeListing{Err: domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus (%s): %s", wire.Safe(wire.RedactURLs(settings.URLs)), wire.Safe(err.Error()))}
	}
	return app.NodeListing{Listing: l.OfHarnesses(only)}
}

// Watch is every node's presence followed at once, from one watch of
// the whole bucket (natsbus.Bus.WatchFleet): a bus that does not answer
// is host_unreachable.
func (Bus) Watch(ctx context.Context, settings wiring.BusSettings, events func(wire.Event) bool, notes func(string)) error {
	bus, err := natsbus.Connect(settingsOf(settings), false)
	if err != nil { // it names the servers
		return domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus: %s", wire.Safe(err.Error()))
	}
	defer bus.Close()
	return bus.WatchFleet(ctx, events, notes)
}

// Join joins the bus as p.Node, under its name (refused when another
// live service holds it), and keeps its presence until life ends
// (app.Present), answering other nodes' requests meanwhile (p.Answer:
// natsbus.Bus.Answer) and taking their durable mail into its outbox,
// receipts published back (p.Mail: natsbus.Bus.TakeMail); wait waits for it to have left. A bus that does
// not answer yet is joined when it answers.
func (Bus) Join(life context.Context, p wiring.Presence) (wait func(), post wiring.PostMail, err error) {
	settings := settingsOf(p.Settings)
	settings.Name, settings.Node = "peerctl serve "+p.Node, p.Node
	bus, err := natsbus.Connect(settings, true)
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	me := natsbus.Member{Node: p.Node, Owner: owner(host, p.StateDir), Host: host, PID: os.Getpid(), Version: p.Version}
	logf := p.Logf
	// A bus that answers decides the name now: a taken one ends the
	// service before it serves. One that does not answer yet keeps no
	// service from its outbox: it joins when the bus answers.
	var pr *natsbus.Presence
	if bus.Connected() {
		if pr, err = bus.Join(life, me); errors.Is(err, natsbus.ErrNodeTaken) || errors.Is(err, domain.ErrBadNode) {
			bus.Close()
			return nil, nil, fmt.Errorf("join the fleet as node %s: %w", p.Node, err)
		}
	}
	if pr == nil {
		why := "no server answers"
		if err != nil {
			why = err.Error()
		} else if last := bus.Refusal(); last != nil {
			why = "the servers refuse this node's credentials: " + last.Error()
		}
		logf("the fleet's bus %s: %s; node %s joins when it answers", wire.Safe(wire.RedactURLs(settings.URLs)), wire.Safe(why), p.Node)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer bus.Close()
		for pr == nil {
			select {
			case <-life.Done():
				return
			case <-time.After(natsbus.Refresh):
			}
			var err error
			if pr, err = bus.Join(life, me); errors.Is(err, natsbus.ErrNodeTaken) {
				logf("presence stopped: %s", wire.Safe(err.Error()))
				return
			}
		}
		logf("node %s on the bus %s (presence in %s, refreshed every %s, gone %s after the service)", p.Node, wire.Safe(wire.RedactURLs(settings.URLs)),
			natsbus.PresenceBucket, natsbus.Refresh, natsbus.TTL)
		if p.Answer != nil {
			answer := func(sender string) natsbus.Answering { return p.Answer(sender) }
			stop, err := bus.Answer(life, p.Node, p.Version, answer, func(line string) { logf("%s", wire.Safe(line)) })
			if err != nil {
				logf("requests from other nodes are not answered: %s", wire.Safe(err.Error()))
			} else {
				defer stop()
				logf("node %s answers requests on %s", p.Node, natsbus.RequestSubject(p.Node, "*"))
			}
		}
		if p.View != nil {
			var view natsbus.FleetView
			p.View.Keep(view.Snapshot)
			wg.Go(func() { keepFleet(life, bus, &view, logf) })
		}
		if p.OnBus != nil {
			p.OnBus(bus.Carrier(p.Node))
			defer p.OnBus(nil)
		}
		if p.Mail != nil {
			wg.Go(func() {
				keepTaking(life, "durable mail from other nodes is not taken yet (it waits on the bus)", func() (func(), error) {
					stop, err := bus.TakeMail(life, p.Node, p.Mail, mailPoll, func(line string) { logf("%s", wire.Safe(line)) })
					if err == nil {
						logf("node %s takes its durable mail from %s (%s)", p.Node, natsbus.MailStream, natsbus.InboxSubject(p.Node, "*"))
					}
					return stop, err
				}, logf)
			})
			wg.Go(func() {
				keepTaking(life, "receipts of durable mail to other nodes are not read yet (they wait on the bus)", func() (func(), error) {
					return bus.TakeReceipts(life, p.Node, p.Mail.Receipt, func(line string) { logf("%s", wire.Safe(line)) })
				}, logf)
			})
		}
		err := app.Present(life, p.Local, pr, natsbus.Refresh, func(err error) bool { return errors.Is(err, natsbus.ErrNodeTaken) }, func(line string) {
			logf("%s", wire.Safe(line))
		})
		if err != nil {
			logf("presence stopped: %s", wire.Safe(err.Error()))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), natsbus.Refresh)
		defer cancel()
		if err := pr.Leave(ctx); err != nil {
			logf("leaving the fleet: %s (the node drops out %s after its last refresh)", wire.Safe(err.Error()), natsbus.TTL)
		}
	})
	post = func(ctx context.Context, to string, o wire.SendOrder, retry int) error {
		return bus.PostMail(ctx, to, p.Node, o, retry)
	}
	return wg.Wait, post, nil
}

// keepTaking starts a reader of this node's mail or receipts with take
// and stops it when life ends. Until take starts (the bus away, the mail
// stream's or JetStream's leader being elected after a server died), it
// is asked again after a wait doubled from a second to at most
// mailRetryMax, each failure a line to logf headed why.
func keepTaking(life context.Context, why string, take func() (stop func(), err error), logf func(string, ...any)) {
	wait := time.Second
	for {
		stop, err := take()
		if err == nil {
			<-life.Done()
			stop()
			return
		}
		logf("%s: %s; trying again in %s", why, wire.Safe(err.Error()), wait)
		select {
		case <-life.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, mailRetryMax)
	}
}

// mailRetryMax bounds the wait between two tries to read this node's mail.
const mailRetryMax = 30 * time.Second

// keepFleet keeps view, every node's presence from one watch of the
// whole bucket, until life ends, watching again a second after a watch
// ended (the bus away).
func keepFleet(life context.Context, bus *natsbus.Bus, view *natsbus.FleetView, logf func(string, ...any)) {
	for life.Err() == nil {
		if err := bus.KeepFleet(life, view, nil); err != nil {
			logf("the fleet's view: %s; watching again", wire.Safe(err.Error()))
		}
		select {
		case <-life.Done():
		case <-time.After(time.Second):
		}
	}
}

// Node is the node of the bus dest names (nats:NODE), reached with
// settings (settings.Node: this machine's name, the sender), each call
// bounded by timeout: natsbus.Node.
func (Bus) Node(settings wiring.BusSettings, dest domain.Dest, timeout time.Duration) (app.Node, error) {
	return natsbus.NewNode(settingsOf(settings), dest, timeout)
}

// NodeKey is node's nkey seed in dir, made when missing (natsbus.NodeKey).
func (Bus) NodeKey(dir, node string) (public string, made bool, err error) {
	return natsbus.NodeKey(dir, node)
}

// Config is the NATS servers' authorization block giving each of users
// its own permissions (natsbus.ServerConfig).
func (Bus) Config(admin string, users []wiring.NodeUser) (string, error) {
	us := make([]natsbus.NodeUser, len(users))
	for i, u := range users {
		us[i] = natsbus.NodeUser(u)
	}
	return natsbus.ServerConfig(admin, us)
}

// AdminKey is the operator's nkey seed in dir, made when missing
// (natsbus.AdminKey).
func (Bus) AdminKey(dir string) (public string, made bool, err error) {
	return natsbus.AdminKey(dir)
}

// Setup makes or checks the fleet's streams as the operator
// (natsbus.Bus.Setup); a bus that does not answer is host_unreachable.
func (Bus) Setup(ctx context.Context, settings wiring.BusSettings) (made, found []string, err error) {
	s := settingsOf(settings)
	s.Operator = true
	b, err := natsbus.Connect(s, false)
	if err != nil { // it names the servers
		return nil, nil, domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus: %s", wire.Safe(err.Error()))
	}
	defer b.Close()
	return b.Setup(ctx)
}
