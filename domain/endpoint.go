package domain

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EndpointPrefix starts every endpoint of protocol version 1.
const EndpointPrefix = "cc-peer:v1:"

// ErrBadEndpoint is wrapped by every endpoint parse error.
var ErrBadEndpoint = errors.New("bad endpoint")

// Endpoint is the opaque address peerctl publishes for a live session:
//
//	cc-peer:v1:<pid>:<name>:<socket>
//
// In name and socket, "%" is written "%25" and ":" is written "%3A" (in that
// order), so names such as "build:main 50%" round-trip. pid is decimal digits
// only and fits in uint32. The zero Endpoint is invalid.
type Endpoint struct {
	pid     uint32
	name    string
	socket  string
	harness Harness
}

// NewEndpoint builds an endpoint; pid must be positive, name and socket non-empty.
func NewEndpoint(pid int, name, socket string) (Endpoint, error) {
	if pid <= 0 || int64(pid) > int64(^uint32(0)) {
		return Endpoint{}, fmt.Errorf("%w: pid %d out of range", ErrBadEndpoint, pid)
	}
	if name == "" {
		return Endpoint{}, fmt.Errorf("%w: empty name", ErrBadEndpoint)
	}
	if socket == "" {
		return Endpoint{}, fmt.Errorf("%w: empty socket", ErrBadEndpoint)
	}
	return Endpoint{pid: uint32(pid), name: name, socket: socket}, nil
}

// PID returns the session's process id.
func (e Endpoint) PID() int { return int(e.pid) }

// Name returns the session's name, unescaped (for a qwen-peer endpoint,
// the session id it pins).
func (e Endpoint) Name() string { return e.name }

// Socket returns the messaging socket path, unescaped.
func (e Endpoint) Socket() string { return e.socket }

// IsZero reports whether e is the zero (invalid) Endpoint.
func (e Endpoint) IsZero() bool { return e.pid == 0 }

// String formats the endpoint; the zero Endpoint formats as "".
func (e Endpoint) String() string {
	if e.IsZero() {
		return ""
	}
	prefix := EndpointPrefix
	if e.harness == HarnessQwenCode {
		prefix = EndpointPrefixQwen
	}
	return prefix + strconv.FormatUint(uint64(e.pid), 10) + ":" +
		escapeEndpointPart(e.name) + ":" + escapeEndpointPart(e.socket)
}

// ParseEndpoint parses the canonical form written by String, cc-peer:v1:
// or qwen-peer:v1: (see EndpointPrefixQwen). It rejects other
// schemes and versions (e.g. "cc-peer:v2:"), a pid that is not all digits or
// does not fit uint32 (or is 0), empty parts, a wrong number of parts, and any
// "%" not followed by "25" or "3A" (so every accepted string round-trips
// byte for byte). Errors wrap ErrBadEndpoint.
func ParseEndpoint(s string) (Endpoint, error) {
	prefix, harness := EndpointPrefix, HarnessClaudeCode
	switch {
	case strings.HasPrefix(s, EndpointPrefixQwen):
		prefix, harness = EndpointPrefixQwen, HarnessQwenCode
	case strings.HasPrefix(s, "qwen-peer:"):
		return Endpoint{}, fmt.Errorf("%w: unsupported version in %q (want %q)", ErrBadEndpoint, s, EndpointPrefixQwen)
	case !strings.HasPrefix(s, EndpointPrefix):
		if strings.HasPrefix(s, "cc-peer:") {
			return Endpoint{}, fmt.Errorf("%w: unsupported version in %q (want %q)", ErrBadEndpoint, s, EndpointPrefix)
		}
		return Endpoint{}, fmt.Errorf("%w: %q does not start with %q", ErrBadEndpoint, s, EndpointPrefix)
	}
	ep, err := parseEndpointBody(prefix, s[len(prefix):])
	if err != nil {
		return Endpoint{}, err
	}
	ep.harness = harness
	return ep, nil
}

func parseEndpointBody(prefix, body string) (Endpoint, error) {
	parts := strings.Split(body, ":")
	if len(parts) != 3 {
		return Endpoint{}, fmt.Errorf("%w: want pid:name:socket after %q, got %d part(s)", ErrBadEndpoint, prefix, len(parts))
	}
	pidText := parts[0]
	if pidText == "" || strings.Trim(pidText, "0123456789") != "" {
		return Endpoint{}, fmt.Errorf("%w: pid %q is not all digits", ErrBadEndpoint, pidText)
	}
	pid, err := strconv.ParseUint(pidText, 10, 32)
	if err != nil || pid == 0 {
		return Endpoint{}, fmt.Errorf("%w: pid %q out of range", ErrBadEndpoint, pidText)
	}
	if pidText != strconv.FormatUint(pid, 10) {
		return Endpoint{}, fmt.Errorf("%w: pid %q has leading zeros", ErrBadEndpoint, pidText)
	}
	name, err := unescapeEndpointPart(parts[1])
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: name: %w", ErrBadEndpoint, err)
	}
	socket, err := unescapeEndpointPart(parts[2])
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: socket: %w", ErrBadEndpoint, err)
	}
	return NewEndpoint(int(pid), name, socket)
}

func escapeEndpointPart(s string) string {
	if !strings.ContainsAny(s, "%:") {
		return s
	}
	s = strings.ReplaceAll(s, "%", "%25")
	return strings.ReplaceAll(s, ":", "%3A")
}

func unescapeEndpointPart(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(s[i:], "%3A"):
			b.WriteByte(':')
		default:
			return "", fmt.Errorf("escape at byte %d is not %%25 or %%3A", i)
		}
		i += 2
	}
	return b.String(), nil
}

// IsEndpoint reports whether address is written as an endpoint of any
// harness (cc-peer:..., qwen-peer:..., any version), rather than a
// session id or name: Resolve reads it as one.
func IsEndpoint(address string) bool {
	return strings.HasPrefix(address, "cc-peer:") || strings.HasPrefix(address, "qwen-peer:")
}
