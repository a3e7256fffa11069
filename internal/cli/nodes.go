package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// Where a command runs: its --host words, and the node (app.Node) of each:
// this machine's use cases, or another machine's peerctl reached through
// ports.Remote (the ssh channel, wiring.NewSSHChannel), which prints the same --json documents
// this build prints, read back with exact keys and given their host. A
// command asks its node and prints what it gives; it never knows which
// one it holds.

// localHost is the --host word for this machine (no ssh).
const localHost = domain.LocalDest

// hostTimeoutEnv bounds a --host call that has no --timeout of its own
// (list, show, enrich, doctor; watch and relay until the far side answers).
const hostTimeoutEnv = "PEERCTL_HOST_TIMEOUT"

const defaultHostTimeout = time.Minute

// hostUsage is --host's help.
const hostUsage = "run on `DEST`: an ssh host, nats:NODE (a node's service) or " + localHost + " (here)"

// addHostFlag adds --host to cmd: repeatable when many.
func addHostFlag(cmd *cobra.Command, hosts *[]string, many bool) {
	usage := hostUsage
	if many {
		usage += "; repeat it to merge several"
	}
	cmd.Flags().StringArrayVar(hosts, "host", nil, usage)
}

// parseHosts validates --host values (domain.ParseDest; "." is this
// machine, the zero Dest), dropping repeats. A bad one is a usage error
// before anything runs.
func parseHosts(values []string, many bool) ([]domain.Dest, error) {
	if !many && len(values) > 1 {
		return nil, usageError{fmt.Errorf("--host given %d times: this command runs on one host", len(values))}
	}
	var out []domain.Dest
	for _, v := range values {
		d := domain.Dest{}
		if v != localHost {
			var err error
			if d, err = domain.ParseDest(v); err != nil {
				return nil, usageError{fmt.Errorf("--host: %w", err)}
			}
		}
		dup := false
		for _, o := range out {
			dup = dup || o == d
		}
		if !dup {
			out = append(out, d)
		}
	}
	return out, nil
}

// oneHost is the host a command with one target runs on: --host's, or the
// one an ssh:v1: endpoint names (then address becomes the endpoint on it);
// both given must agree.
func oneHost(values []string, address string) (domain.Dest, string, error) {
	hosts, err := parseHosts(values, false)
	if err != nil {
		return domain.Dest{}, "", err
	}
	var flag domain.Dest
	if len(hosts) == 1 {
		flag = hosts[0]
	}
	dest, inner, ok, err := domain.SplitHostEndpoint(address)
	switch {
	case err != nil:
		return domain.Dest{}, "", usageError{err}
	case !ok:
		return flag, address, nil
	case len(hosts) == 1 && flag != dest:
		return domain.Dest{}, "", usageError{fmt.Errorf("the endpoint names host %q, --host %q", dest, flag)}
	}
	return dest, inner, nil
}

// remote is the channel to other machines, built once per run.
func (c *factory) remote() (ports.Remote, error) {
	c.remoteMu.Lock() // hosts are listed and watched at once
	defer c.remoteMu.Unlock()
	if c.remoteCh == nil {
		ch, err := c.sshChannel(nil)
		if err != nil {
			return nil, err
		}
		c.remoteCh = ch
	}
	return c.remoteCh, nil
}

// sshChannel is a channel to other machines ($PEERCTL_SSH, else ssh) that
// takes each host's settings from the hosts file; with atProgram, every
// host's peerctl is that program instead ("": the one on the remote PATH).
func (c *factory) sshChannel(atProgram *string) (wiring.SSHChannel, error) {
	book := c.hostBook
	if atProgram != nil {
		book = programBook{book, *atProgram}
	}
	log := slog.New(slog.DiscardHandler)
	if c.debug.send {
		log = debugLogger(c.io.errOut)
	}
	warn := func(why string) {
		fmt.Fprintf(c.io.errOut, "peerctl: warning: ssh: %s; its calls connect on their own\n", safe(why))
	}
	ch, err := wiring.NewSSHChannel(wiring.SSHOptions{Getenv: c.getenv, Book: book, Version: c.version().Version, Log: log, Warn: warn})
	if err != nil {
		return nil, usageError{err}
	}
	if why := ch.SharingOff(); why != "" && wiring.SSHSharesConnections {
		c.sharingOnce.Do(func() {
			fmt.Fprintf(c.io.errOut, "peerctl: warning: ssh: %s; every call connects on its own\n", safe(why))
		})
	}
	return ch, nil
}

// checkHosts settles the channel, the bus and the host timeout when dests
// name another machine: a bad $PEERCTL_SSH, bus or $PEERCTL_HOST_TIMEOUT
// is a usage error before any host is reached (never one host's failure).
// A node of the bus in a program without the bus client runs this command
// line as peerctl-mcp (runWithBus), unless this machine's service is on
// the bus to carry its requests (serviceOnBus).
func (c *factory) checkHosts(dests []domain.Dest) error {
	_, err := c.checkReach(dests, false)
	return err
}

// checkReach is checkHosts; presence says the command follows the nodes'
// presence (watch), which the bus client reads itself: no service
// carries it. carried says this machine's service carries the requests
// to dests' nodes of the bus (serviceOnBus, looked at once here).
func (c *factory) checkReach(dests []domain.Dest, presence bool) (carried bool, err error) {
	if !slices.ContainsFunc(dests, func(d domain.Dest) bool { return !d.IsLocal() }) {
		return false, nil
	}
	if slices.ContainsFunc(dests, isSSH) {
		if _, err := c.remote(); err != nil {
			return false, err
		}
	}
	nodes := slices.ContainsFunc(dests, isNode)
	if nodes {
		if _, err := c.requestSettings(); err != nil {
			return false, err
		}
	}
	if _, err := c.hostTimeout(); err != nil {
		return false, err
	}
	carried = nodes && !presence && c.carried()
	if c.bus == nil && nodes && !carried {
		return false, c.runWithBus("--host nats:NODE")
	}
	return carried, nil
}

// carried reports whether this machine's service is on the bus this
// command reaches, to carry its requests (serviceOnBus).
func (c *factory) carried() bool {
	s, err := c.requestSettings()
	if err != nil {
		return false
	}
	_, ok := c.serviceOnBus(context.Background(), s)
	return ok
}

// isSSH and isNode say whether d is a host over ssh, a node of the bus.
func isSSH(d domain.Dest) bool {
	_, node := d.Node()
	return !d.IsLocal() && !node
}

func isNode(d domain.Dest) bool {
	_, node := d.Node()
	return node
}

// hostTimeout is $PEERCTL_HOST_TIMEOUT (a duration), else a minute.
func (c *factory) hostTimeout() (time.Duration, error) {
	v := c.getenv(hostTimeoutEnv)
	if v == "" {
		return defaultHostTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, usageError{fmt.Errorf("$%s %q: want a positive duration such as 30s", hostTimeoutEnv, v)}
	}
	return d, nil
}

// node is dest's node (see nodes).
func (c *factory) node(dest domain.Dest) (app.Node, error) {
	nodes, err := c.nodes([]domain.Dest{dest})
	if err != nil {
		return nil, err
	}
	return nodes[0], nil
}

// nodes are the nodes of dests: this machine's use cases (app.LocalNode)
// for the zero Dest, a node of the fleet's bus (wiring.Bus.Node, for
// nats:NODE) or a host's peerctl (wiring.NewHostNode) for the others,
// bounded by the host timeout. A bad $PEERCTL_SSH, $PEERCTL_HOST_TIMEOUT
// or bus is a usage error before any is reached.
func (c *factory) nodes(dests []domain.Dest) ([]app.Node, error) { return c.reach(dests, false) }

// watchNodes are the nodes of dests for watch, which follows a node of
// the bus's presence with the bus client (checkReach).
func (c *factory) watchNodes(dests []domain.Dest) ([]app.Node, error) { return c.reach(dests, true) }

// reach is nodes; presence as checkReach's.
func (c *factory) reach(dests []domain.Dest, presence bool) ([]app.Node, error) {
	carried, err := c.checkReach(dests, presence)
	if err != nil {
		return nil, err
	}
	out := make([]app.Node, 0, len(dests))
	for _, d := range dests {
		if d.IsLocal() {
			out = append(out, c.localNode(nil))
			continue
		}
		limit, err := c.hostTimeout()
		if err != nil {
			return nil, err
		}
		if isNode(d) {
			n, err := c.busNode(d, limit, carried)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
			continue
		}
		r, err := c.remote()
		if err != nil {
			return nil, err
		}
		out = append(out, wiring.NewHostNode(r, d, limit))
	}
	return out, nil
}

// localNode is this machine's use cases (app.LocalNode); sending, when
// set, is who sends through it for the trust policy (a node of the bus
// whose request the service answers), else this command (c.sending).
func (c *factory) localNode(sending *app.Sending) app.LocalNode {
	return app.LocalNode{
		Open: func(only []domain.Harness) (*app.Service, error) {
			return c.service(options{readOnly: true, only: only})
		},
		// A watch follows the folders and the processes: the whole graph.
		Watching: func() (*app.Service, error) { return c.service(options{}) },
		// A send's Service: its transport, timeout, confirmation window
		// (none with NoConfirm) and sender's name.
		Sending: func(q wire.SendQuery) (*app.Service, error) {
			window := q.ConfirmTimeout
			if q.NoConfirm {
				window = -1
			}
			return c.service(options{transport: q.Transport, timeout: q.Timeout, receiptWindow: window, from: q.From, sending: sending})
		},
		Doctoring: c.doctorSetup,
		Relaying:  c.relayHere,
	}
}
