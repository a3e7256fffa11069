package sshhost

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
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
// first of q.Only: the far side's list takes one). A far side that printed
// its listing and exited 1 (a harness there could not be read) gives a
// Partial listing; its stderr lines are the Notes, with a warning for each
// session left out because its endpoint is not one of that machine's.
func (n *Node) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	args := []string{"list", "--json"}
	if q.All {
		args = append(args, "--all")
	}
	if len(q.Only) > 0 {
		args = append(args, "--harness="+q.Only[0].String())
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	res, err := n.remote.Call(ctx, ports.RemoteCall{Dest: n.dest, Args: args})
	if err != nil {
		return wire.Listing{}, err
	}
	out := wire.Listing{Version: res.Version}
	if res.Code == 1 && len(res.Stdout) > 0 {
		res.Code, out.Partial = 0, true // the far side printed what it read
	}
	var rows []wire.Session
	if err := wire.ReadDoc(n.dest, res, &rows); err != nil {
		return wire.Listing{}, err
	}
	out.Notes = wire.Lines(res.Stderr)
	out.Sessions = make([]wire.Session, 0, len(rows))
	for _, r := range rows {
		ep, err := wire.HostEndpoint(n.dest, r.Endpoint)
		if err != nil {
			out.Notes = append(out.Notes, wire.SkipNote("session", r.SessionID, err))
			continue
		}
		r.Host, r.Endpoint = n.dest.String(), ep
		out.Sessions = append(out.Sessions, r)
	}
	return out, nil
}

// Show runs `peerctl show --json -- ADDRESS` there; its endpoint is put in
// the ssh:v1: form (one that is not that machine's is a broken far side).
// A document for another session than address names (wire.Agrees, or
// its pid or record file's name, which show also takes) is
// refused as host_unreachable, naming both: show sent nothing, and the
// far side's answer is not one this build's peerctl gives.
func (n *Node) Show(ctx context.Context, address string) (wire.Show, error) {
	var j wire.Show
	if err := n.doc(ctx, []string{"show", "--json", "--", address}, &j); err != nil {
		return wire.Show{}, err
	}
	ep, err := wire.HostEndpoint(n.dest, j.Endpoint)
	if err != nil {
		return wire.Show{}, wire.Broken(n.dest, err)
	}
	// show also finds a record by its pid or its file's name (app's Show).
	byPlace := address == strconv.Itoa(j.PID) || j.File != "" && address == j.File
	if why := wire.Agrees(address, wire.Named{Harness: j.Harness, Endpoint: j.Endpoint, PID: j.PID, SessionID: j.SessionID, Name: j.Name}); why != nil && !byPlace {
		return wire.Show{}, domain.Refuse(domain.ReasonHostUnreachable, "peerctl on %s showed another session: %v; it is not the answer of this build's peerctl; fix: %s",
			n.dest, why, wire.Safe(wire.InstallFix(n.dest)))
	}
	j.Host, j.Endpoint = n.dest.String(), ep
	return j, nil
}

// Enrich runs `peerctl enrich --json -- IDS...` there; an endpoint that
// is not that machine's is a broken far side.
func (n *Node) Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error) {
	var got map[string]*wire.LiveInfo
	if err := n.doc(ctx, append([]string{"enrich", "--json", "--"}, ids...), &got); err != nil {
		return nil, err
	}
	live := map[string]wire.LiveInfo{}
	for id, info := range got {
		if info == nil {
			continue
		}
		ep, err := wire.HostEndpoint(n.dest, info.Endpoint)
		if err != nil {
			return nil, wire.Broken(n.dest, err)
		}
		info.Endpoint = ep
		live[id] = *info
	}
	return live, nil
}

// doc runs args there, bounded by the node's timeout, and reads its
// --json document into v (wire.ReadDoc).
func (n *Node) doc(ctx context.Context, args []string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	res, err := n.remote.Call(ctx, ports.RemoteCall{Dest: n.dest, Args: args})
	if err != nil {
		return err
	}
	return wire.ReadDoc(n.dest, res, v)
}

// Doctor runs `peerctl doctor --json` there, bounded by the node's
// timeout: its document (wire.ReadDoctor), whose ok must agree with its
// exit code (0, or 1 for a problem), and its stderr lines as Notes but for
// its problem lines: the document holds every problem. Any other exit is
// the far side's refusal (wire.Failure) when it printed one, else
// host_unreachable naming the exit and its last words; output that is no
// such document is a broken far side (host_unreachable).
func (n *Node) Doctor(ctx context.Context) (wire.Doctor, error) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	res, err := n.remote.Call(ctx, ports.RemoteCall{Dest: n.dest, Args: []string{"doctor", "--json"}})
	if err != nil {
		return wire.Doctor{}, err
	}
	if res.Code != wire.ExitOK && res.Code != wire.ExitError {
		// Its refusal, when it printed one; else it crashed or was killed.
		var refused wire.RefusalDoc
		if out := bytes.TrimSpace(res.Stdout); jsonexact.Exact(out, &refused) == nil && jsonexact.Complete(out, refused) == nil {
			return wire.Doctor{}, wire.Failure(n.dest, res)
		}
		return wire.Doctor{}, domain.Refuse(domain.ReasonHostUnreachable, "peerctl doctor on %s ended with exit %d and no report (%s)", n.dest, res.Code, lastWords(res.Stderr))
	}
	d, err := wire.ReadDoctor(bytes.TrimSpace(res.Stdout))
	if err == nil && d.OK != (res.Code == wire.ExitOK) {
		err = fmt.Errorf("its report says ok %t, and it exited %d", d.OK, res.Code)
	}
	if err != nil {
		return wire.Doctor{}, wire.Broken(n.dest, err)
	}
	for _, l := range wire.StderrLines(res.Stderr) {
		if !strings.HasPrefix(l, "peerctl: problem: ") { // the document holds every problem
			d.Notes = append(d.Notes, l)
		}
	}
	return d, nil
}
