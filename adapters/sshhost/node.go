package sshhost

import (
	"context"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// Node is another machine's peerctl as a node of the use cases (app.Node,
// the same methods as this machine's app.LocalNode): each use case runs
// there, through remote, as the same command with --json, and its
// documents are read back with exact keys (package wire), given their
// host, their endpoints in the ssh:v1: form, their text bounded and
// escaped. Every call is bounded by timeout.
type Node struct {
	remote  ports.Remote
	dest    domain.Dest
	timeout time.Duration
}

// NewNode is dest's peerctl reached through remote, each call bounded by
// timeout (> 0).
func NewNode(remote ports.Remote, dest domain.Dest, timeout time.Duration) *Node {
	return &Node{remote: remote, dest: dest, timeout: timeout}
}

// Host is dest.
func (n *Node) Host() domain.Dest { return n.dest }

// List runs `peerctl list --json` there ([--all], [--harness=H] for the
// first of q.Only: the far side's list takes one), read by
// wire.ReadListing.
func (n *Node) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	args := []string{"list", "--json"}
	if q.All {
		args = append(args, "--all")
	}
	if len(q.Only) > 0 {
		args = append(args, "--harness="+q.Only[0].String())
	}
	res, err := n.call(ctx, args)
	if err != nil {
		return wire.Listing{}, err
	}
	return wire.ReadListing(n.dest, res)
}

// Show runs `peerctl show --json -- ADDRESS` there, read by wire.ReadShow.
func (n *Node) Show(ctx context.Context, address string) (wire.Show, error) {
	res, err := n.call(ctx, []string{"show", "--json", "--", address})
	if err != nil {
		return wire.Show{}, err
	}
	return wire.ReadShow(n.dest, address, res)
}

// Enrich runs `peerctl enrich --json -- IDS...` there, read by
// wire.ReadEnrich.
func (n *Node) Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error) {
	res, err := n.call(ctx, append([]string{"enrich", "--json", "--"}, ids...))
	if err != nil {
		return nil, err
	}
	return wire.ReadEnrich(n.dest, res)
}

// call runs args there, bounded by the node's timeout.
func (n *Node) call(ctx context.Context, args []string) (ports.RemoteResult, error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	return n.remote.Call(ctx, ports.RemoteCall{Dest: n.dest, Args: args})
}

// Doctor runs `peerctl doctor --json` there, bounded by the node's
// timeout, read by wire.ReadDoctorRun.
func (n *Node) Doctor(ctx context.Context) (wire.Doctor, error) {
	res, err := n.call(ctx, []string{"doctor", "--json"})
	if err != nil {
		return wire.Doctor{}, err
	}
	return wire.ReadDoctorRun(n.dest, res)
}
