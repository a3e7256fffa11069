package domain

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrBadEndpoint is wrapped by every endpoint parse error.
var ErrBadEndpoint = errors.New("bad endpoint")

// Endpoint is the opaque address peerctl publishes for a live session:
//
//	<prefix><pid>:<key>:<socket>
//
// with the prefix of the session's harness (HarnessSpec.Prefix, e.g.
// "cc-peer:v1:") and key what its endpoints pin (HarnessSpec.Pins: a name,
// a session id...).
// In name and socket, "%" is written "%25" and ":" is written "%3A", so
// names such as "build:main 50%" round-trip, and every byte of a character
// that is not printable (a control character, DEL, a C1 control, a line
// separator, a bidi override…) or not UTF-8 is written %XX (upper-case
// hex), so an endpoint is always one line of printable text. pid is
// decimal digits only and fits in uint32. The zero Endpoint is invalid.
type Endpoint struct {
	pid     uint32
	name    string
	socket  string
	harness Harness
}

// rawEndpoint builds an endpoint of the zero Harness; pid must be
// positive, name and socket non-empty (NewHarnessEndpoint gives it its
// harness).
func rawEndpoint(pid int, name, socket string) (Endpoint, error) {
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
// the session id it pins; for a codex-peer one, the thread id).
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
	prefix := e.harness.spec().Prefix
	return prefix + strconv.FormatUint(uint64(e.pid), 10) + ":" +
		escapeEndpointPart(e.name) + ":" + escapeEndpointPart(e.socket)
}

// ParseEndpoint parses the canonical form String writes, with any
// harness's prefix (HarnessSpec.Prefix: cc-peer:v1:, qwen-peer:v1:,
// codex-peer:v1:...). It rejects other schemes and versions (e.g.
// "cc-peer:v2:"), a pid that is not all digits or does not fit uint32 (or
// is 0), empty parts, a wrong number of parts, a pinned value the
// harness's ValidKey refuses, and any part not in the canonical escaped
// form String writes (a "%" not followed by two upper-case hex digits, an
// escape String would not write, a character String would escape written
// raw), so every accepted string round-trips byte for byte. Errors wrap
// ErrBadEndpoint.
func ParseEndpoint(s string) (Endpoint, error) {
	h, spec, ok, otherVersion := specByPrefix(s)
	switch {
	case otherVersion:
		return Endpoint{}, fmt.Errorf("%w: unsupported version in %q (want %q)", ErrBadEndpoint, s, spec.Prefix)
	case !ok:
		return Endpoint{}, fmt.Errorf("%w: %q does not start with an endpoint's prefix (%s)", ErrBadEndpoint, s, endpointForms())
	}
	ep, err := parseEndpointBody(spec.Prefix, s[len(spec.Prefix):])
	if err != nil {
		return Endpoint{}, err
	}
	return newEndpoint(h, spec, ep.PID(), ep.name, ep.socket)
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
	return rawEndpoint(int(pid), name, socket)
}

// escapeEndpointPart writes s for an endpoint: "%" as %25, ":" as %3A,
// and every byte of a rune that is not printable (strconv.IsPrint: control
// characters, DEL, C1 controls, line and paragraph separators, bidi and
// other format characters, spaces other than the ASCII space) or not UTF-8
// as %XX (upper-case hex), so that an endpoint is one line of printable
// text whatever the name or path holds.
func escapeEndpointPart(s string) string {
	if !strings.ContainsFunc(s, needsEscape) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || needsEscape(r) {
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune) bool { return r == '%' || r == ':' || !strconv.IsPrint(r) }

// unescapeEndpointPart reverses escapeEndpointPart. It takes %XX with
// upper-case hex only, and only the canonical form: an escape that
// escapeEndpointPart would not write (%41 for "A"), or a byte it would
// escape written raw, is refused, so every accepted part formats back byte
// for byte.
func unescapeEndpointPart(s string) (string, error) {
	if !strings.Contains(s, "%") && escapeEndpointPart(s) == s {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !upperHex(s[i+1]) || !upperHex(s[i+2]) {
			return "", fmt.Errorf("escape at byte %d is not %%XX with upper-case hex digits", i)
		}
		v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
		b.WriteByte(byte(v))
		i += 2
	}
	out := b.String()
	if canon := escapeEndpointPart(out); canon != s {
		i := 0
		for i < len(s) && i < len(canon) && s[i] == canon[i] {
			i++
		}
		if i < len(s) && s[i] == '%' {
			return "", fmt.Errorf("escape at byte %d is not the canonical form (only %%, : and characters that are not printable are escaped)", i)
		}
		return "", fmt.Errorf("byte %d must be written %%XX (characters that are not printable, and bytes that are not UTF-8, are escaped)", i)
	}
	return out, nil
}

// IsEndpoint reports whether address is written as an endpoint of any
// harness (cc-peer:..., qwen-peer:..., codex-peer:..., any version),
// rather than a session id or name: Resolve reads it as one.
func IsEndpoint(address string) bool {
	_, _, ok, version := specByPrefix(address)
	return ok || version
}

func upperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }
