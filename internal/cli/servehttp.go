package cli

import (
	"context"
	"slices"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports/wire"
)

// webListing is the dashboard's listing: the command line's list, run in
// the service as `list --all --json [--host DEST]` runs.
type webListing struct {
	// nodes are the machines' nodes; getenv finds the hosts file;
	// version is this build's.
	nodes   func([]domain.Dest) ([]app.Node, error)
	getenv  func(string) string
	version string
	extra   []domain.Dest // serve's --host
	// slots bounds the hosts listed at once, as list --hosts does (this
	// machine takes none: it never waits for a host).
	slots chan struct{}
}

// machines names this machine (""), each host of the hosts file and each
// --host of serve, as `list --all --hosts` lists them.
func (w webListing) machines(context.Context) []string {
	dests := []domain.Dest{{}}
	more, err := configuredHosts(w.getenv)
	if err == nil {
		if ds, err := parseHosts(more, true); err == nil {
			dests = append(dests, ds...)
		}
	}
	for _, d := range w.extra {
		if !slices.Contains(dests, d) {
			dests = append(dests, d)
		}
	}
	out := make([]string, len(dests))
	for i, d := range dests {
		out[i] = d.String()
	}
	return out
}

// sessions lists every record of one machine of machines, as `list --all
// --json [--host DEST]` does.
func (w webListing) sessions(ctx context.Context, host string) dashboard.HostListing {
	out := dashboard.HostListing{Host: host}
	dest := domain.Dest{}
	if host != "" {
		d, err := domain.ParseDest(host)
		if err != nil {
			out.Err = err.Error()
			return out
		}
		dest = d
		if w.slots != nil {
			select {
			case w.slots <- struct{}{}:
				defer func() { <-w.slots }()
			case <-ctx.Done():
				out.Err = domain.Refuse(domain.ReasonHostUnreachable, "%s: not listed: %d other hosts were being listed (%v)", dest, cap(w.slots), ctx.Err()).Error()
				return out
			}
		}
	}
	nodes, err := w.nodes([]domain.Dest{dest})
	if err != nil {
		out.Err = err.Error()
		return out
	}
	l, err := nodes[0].List(ctx, wire.ListQuery{All: true})
	out.Sessions, out.Notes, out.Version = l.Sessions, l.Notes, l.Version
	if dest.IsLocal() {
		out.Version = w.version
	}
	if err != nil {
		out.Err = err.Error()
	}
	return out
}
