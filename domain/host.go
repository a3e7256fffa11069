package domain

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadDest is wrapped by every error of ParseDest.
var ErrBadDest = errors.New("bad host")

// MaxDestBytes bounds a Dest.
const MaxDestBytes = 255

// Dest is another machine: as ssh names it (an alias of the user's ssh
// config, host, user@host), or a node of the fleet's bus as "nats:NODE"
// (NodePrefix; Node says which): the DEST of `--host DEST`. The zero Dest
// is this machine.
type Dest struct{ s string }

// NodePrefix starts the Dest of a node on the fleet's bus: "nats:NODE",
// NODE a node's name (ParseNode). No ssh host is named so.
const NodePrefix = "nats:"

// MaxNodeBytes bounds a node's name.
const MaxNodeBytes = 64

// ErrBadNode is wrapped by ParseNode's errors.
var ErrBadNode = errors.New("bad node name")

// ParseNode validates a node's name on the fleet's bus: 1 to MaxNodeBytes
// bytes of ASCII letters, digits, '-', '_' and '.', starting with a letter
// or digit, not ending with '.', no "..": one KV key, a subject's tokens,
// safe to print. Errors wrap ErrBadNode.
func ParseNode(s string) (string, error) {
	isAlnum := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }
	switch {
	case s == "":
		return "", fmt.Errorf("%w: empty", ErrBadNode)
	case len(s) > MaxNodeBytes:
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrBadNode, len(s), MaxNodeBytes)
	case strings.ContainsFunc(s, func(r rune) bool { return !(isAlnum(r) || r == '-' || r == '_' || r == '.') }):
		return "", fmt.Errorf("%w: %s: use letters, digits, '-', '_' and '.' only", ErrBadNode, strconv.QuoteToASCII(s))
	case !isAlnum(rune(s[0])) || strings.HasSuffix(s, ".") || strings.Contains(s, ".."):
		return "", fmt.Errorf("%w: %q: start with a letter or digit, no '..', no '.' at the end", ErrBadNode, s)
	}
	return s, nil
}

// NodeDest is the Dest of node on the fleet's bus ("nats:NODE"). Errors:
// ParseNode's.
func NodeDest(node string) (Dest, error) {
	if _, err := ParseNode(node); err != nil {
		return Dest{}, err
	}
	return Dest{s: NodePrefix + node}, nil
}

// Node is the node's name when d is a node of the fleet's bus.
func (d Dest) Node() (string, bool) {
	return strings.CutPrefix(d.s, NodePrefix)
}

// LocalDest is the --host word for this machine; never a Dest.
const LocalDest = "."

// ParseDest validates s as a Dest: at most MaxDestBytes bytes of
// printable UTF-8 without white space, not starting with "-" (ssh would
// read it as an option: -oProxyCommand=...), not LocalDest (this machine
// in --host). Nothing else is checked: ssh resolves it. A Dest starting
// with NodePrefix, in any case ("NATS:", "Nats:": a scheme, which ssh
// never takes), is a node of the fleet's bus: its name must be one
// (ParseNode), and its Dest is written "nats:NODE". Errors wrap
// ErrBadDest.
func ParseDest(s string) (Dest, error) {
	if len(s) >= len(NodePrefix) && strings.EqualFold(s[:len(NodePrefix)], NodePrefix) {
		node := s[len(NodePrefix):]
		if _, err := ParseNode(node); err != nil {
			return Dest{}, fmt.Errorf("%w: %q: %w (want nats:NODE for a node of the fleet's bus)", ErrBadDest, s, err)
		}
		return Dest{s: NodePrefix + node}, nil
	}
	switch {
	case s == "":
		return Dest{}, fmt.Errorf("%w: empty", ErrBadDest)
	case s == LocalDest:
		return Dest{}, fmt.Errorf("%w: %q is this machine (--host %s), not a host ssh reaches", ErrBadDest, s, LocalDest)
	case len(s) > MaxDestBytes:
		return Dest{}, fmt.Errorf("%w: %d bytes, at most %d", ErrBadDest, len(s), MaxDestBytes)
	case strings.HasPrefix(s, "-"):
		return Dest{}, fmt.Errorf("%w: %q starts with '-', which ssh would read as an option", ErrBadDest, s)
	case !utf8.ValidString(s):
		return Dest{}, fmt.Errorf("%w: %q is not UTF-8", ErrBadDest, s)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !strconv.IsPrint(r) }):
		return Dest{}, fmt.Errorf("%w: %q holds white space or a character that is not printable", ErrBadDest, s)
	case strings.HasPrefix(s, "@") || strings.HasSuffix(s, "@"):
		return Dest{}, fmt.Errorf("%w: %q names no user or no host around its '@' (want HOST or USER@HOST)", ErrBadDest, s)
	}
	return Dest{s: s}, nil
}

// String returns the destination as given ("" for this machine).
func (d Dest) String() string { return d.s }

// IsLocal reports whether d is this machine (the zero Dest).
func (d Dest) IsLocal() bool { return d.s == "" }

// HostEndpointPrefix starts the endpoint of a session on another machine:
//
//	ssh:v1:<dest>:<endpoint>
//
// <dest> is the Dest with "%" written %25 and ":" written %3A (as an
// endpoint's parts are); <endpoint> is the session's endpoint where it
// runs, as that machine's peerctl publishes it (any harness's form, taken
// whole: see ParseEndpoint). The form wraps any endpoint, so a harness's
// own form needs nothing more to travel.
const HostEndpointPrefix = "ssh:v1:"

// NodeEndpointPrefix starts the endpoint of a session on a node of the
// fleet's bus: nats:v1:<node>:<endpoint>, <node> its name (ParseNode:
// nothing to escape), <endpoint> as HostEndpointPrefix's.
const NodeEndpointPrefix = "nats:v1:"

// HostEndpoint is ep on dest, in the form of HostEndpointPrefix (of
// NodeEndpointPrefix for a node of the bus); ep itself for this machine,
// "" for the zero Endpoint.
func HostEndpoint(dest Dest, ep string) string {
	if dest.IsLocal() || ep == "" {
		return ep
	}
	if node, ok := dest.Node(); ok {
		return NodeEndpointPrefix + node + ":" + ep
	}
	return HostEndpointPrefix + escapeEndpointPart(dest.s) + ":" + ep
}

// SplitHostEndpoint parses an address written as HostEndpoint wrote it:
// ok is false (and err nil) for any address that does not start with
// "ssh:" or "nats:"; otherwise the Dest and the endpoint on it, which must be a valid
// endpoint in canonical form (ParseEndpoint) and a valid Dest in canonical
// escaped form, so every accepted string round-trips byte for byte.
// Errors wrap ErrBadEndpoint.
func SplitHostEndpoint(s string) (dest Dest, ep string, ok bool, err error) {
	if strings.HasPrefix(s, NodePrefix) {
		return splitNodeEndpoint(s)
	}
	if !strings.HasPrefix(s, "ssh:") {
		return Dest{}, "", false, nil
	}
	body, found := strings.CutPrefix(s, HostEndpointPrefix)
	if !found {
		return Dest{}, "", true, fmt.Errorf("%w: unsupported version in %q (want %q)", ErrBadEndpoint, s, HostEndpointPrefix)
	}
	escDest, inner, found := strings.Cut(body, ":")
	if !found {
		return Dest{}, "", true, fmt.Errorf("%w: want <dest>:<endpoint> after %q", ErrBadEndpoint, HostEndpointPrefix)
	}
	raw, err := unescapeEndpointPart(escDest)
	if err != nil {
		return Dest{}, "", true, fmt.Errorf("%w: host: %w", ErrBadEndpoint, err)
	}
	if dest, err = ParseDest(raw); err != nil {
		return Dest{}, "", true, fmt.Errorf("%w: %w", ErrBadEndpoint, err)
	}
	if _, err := ParseEndpoint(inner); err != nil {
		return Dest{}, "", true, err
	}
	return dest, inner, true, nil
}

// splitNodeEndpoint is SplitHostEndpoint of a nats: address.
func splitNodeEndpoint(s string) (dest Dest, ep string, ok bool, err error) {
	body, found := strings.CutPrefix(s, NodeEndpointPrefix)
	if !found {
		return Dest{}, "", true, fmt.Errorf("%w: unsupported version in %q (want %q)", ErrBadEndpoint, s, NodeEndpointPrefix)
	}
	node, inner, found := strings.Cut(body, ":")
	if !found {
		return Dest{}, "", true, fmt.Errorf("%w: want <node>:<endpoint> after %q", ErrBadEndpoint, NodeEndpointPrefix)
	}
	if dest, err = NodeDest(node); err != nil {
		return Dest{}, "", true, fmt.Errorf("%w: %w", ErrBadEndpoint, err)
	}
	if _, err := ParseEndpoint(inner); err != nil {
		return Dest{}, "", true, err
	}
	return dest, inner, true, nil
}
