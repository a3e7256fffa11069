package sshhost

import (
	"context"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

// Watch streams `peerctl watch --json` there (its start bounded by the
// node's timeout, then unbounded: ssh's keepalive ends a hung network),
// each line read with exact keys into a wire.Event given its host and its
// endpoint in the ssh:v1: form; an event whose endpoint is not one of
// that machine's is left out with a note. It returns nil when ctx ends or
// events says stop; otherwise the far watch ended, which is always an
// error: host_unreachable, with why: a lost connection in ssh's own words
// (never a note the far peerctl printed earlier), a far watch that ended
// by itself in its exit and last words.
func (n *Node) Watch(ctx context.Context, events func(wire.Event) bool, notes func(string)) error {
	s, err := n.remote.Stream(ctx, ports.RemoteCall{Dest: n.dest, Args: []string{"watch", "--json"}, StartTimeout: n.timeout})
	if err != nil {
		return err
	}
	defer s.Close()
	for line := range s.Lines() {
		var ev wire.Event
		if err := jsonexact.Exact(line, &ev); err != nil {
			s.Close()
			return wire.Broken(n.dest, err)
		}
		ep, err := wire.HostEndpoint(n.dest, ev.Endpoint)
		if err != nil {
			notes(wire.SkipNote("event of session", ev.SessionID, err))
			continue
		}
		ev.Host, ev.Endpoint = n.dest.String(), ep
		if !events(ev) {
			return nil
		}
	}
	res, err := s.Wait()
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = domain.Refuse(domain.ReasonHostUnreachable, "the watch on %s ended (exit %d; %s)", n.dest, res.Code, wire.LastWords(res.Stderr))
	}
	return err
}
