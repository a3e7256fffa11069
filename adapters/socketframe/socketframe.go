// Package socketframe posts a message into a session's inbox socket, the
// transport Claude Code documents for "a script or hook to post into a
// session" (Claude Code docs, cross-session messaging, "The session's inbox
// socket"; measured on 2.1.328, docs/CLAUDE-CODE-FACTS.md).
//
// The wire format is one newline-terminated JSON line:
//
//	{"type":"user","message":{"role":"user","content":"<text>"}}
//
// The transport connects with a deadline, writes exactly that line,
// half-closes its side and waits (bounded) for the session to close the
// connection. The socket never replies, so success means "posted", not
// "delivered". It never sends an auth line and never reads a key file: a
// post arrives in the target as a message from another session, which is
// what it is.
package socketframe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/repeat"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// MaxPeerProtocol is the newest record "peerProtocol" whose socket post this
// transport knows (1: Claude Code 2.1.328's one-line JSON post). A session
// announcing a newer one is refused as harness_unsupported.
const MaxPeerProtocol = 1

// Name is this transport's name.
const Name = "socket"

// DefaultTimeout bounds a whole post when the caller's context has no deadline.
const DefaultTimeout = 5 * time.Second

// Transport posts to inbox sockets. The zero value is ready to use.
type Transport struct {
	// Timeout bounds one post (connect, write, wait for close) when the
	// context has no earlier deadline; 0 means DefaultTimeout.
	Timeout time.Duration
	// Log hears each post's connect and its end at debug level; nil:
	// nothing is logged.
	Log *slog.Logger
}

var _ ports.Transport = (*Transport)(nil)

// New returns a Transport with the given timeout (0: DefaultTimeout).
func New(timeout time.Duration) *Transport { return &Transport{Timeout: timeout} }

// Name returns "socket".
func (t *Transport) Name() string { return Name }

// Frame returns the exact bytes posted for text: one JSON line ending in "\n".
func Frame(text string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Encoding a struct of strings cannot fail.
	_ = enc.Encode(frame{Type: "user", Message: frameMessage{Role: "user", Content: text}})
	return buf.Bytes()
}

type frame struct {
	Type    string       `json:"type"`
	Message frameMessage `json:"message"`
}

type frameMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Plan reports the socket and the exact frame, after the checks Deliver
// makes before it connects (the record's socket path, its length, the peer
// protocol, and a socket on disk at that path): a dry run refuses exactly
// what a send would refuse before posting.
func (t *Transport) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := checkTarget(target); err != nil {
		return domain.Plan{}, err
	}
	if err := checkOnDisk(target.SocketPath()); err != nil {
		return domain.Plan{}, err
	}
	return domain.Plan{Transport: Name, Socket: target.SocketPath(), Frame: string(Frame(msg.Text()))}, nil
}

func checkTarget(target domain.Session) error { return checkTargetOn(runtime.GOOS, target) }

// checkTargetOn checks target for a post from goos.
func checkTargetOn(goos string, target domain.Session) error {
	path := target.SocketPath()
	if path == "" {
		return domain.Refuse(domain.ReasonNotAddressable, "%s publishes no messaging socket", target.Label())
	}
	if goos == "windows" {
		// 2.1.328's win32 build listens on a named pipe and, on Windows,
		// drops every line before an auth line carrying the session's
		// peerToken (requireAuth defaults to platform == windows). peerctl
		// never reads key files nor sends an auth line.
		return domain.Refuse(domain.ReasonHarnessUnsupported, "the socket transport does not work on Windows: Claude Code's inbox there takes only posts that begin with an auth line holding the session's secret peerToken, which peerctl never reads or sends; use the courier (--transport courier, the default), which Claude Code authenticates itself")
	}
	if why := domain.SocketPathTooLongOn(goos, path); why != "" {
		return domain.Refuse(domain.ReasonDeliveryFailed, "%s; not truncated: %s", why, path)
	}
	if p := target.PeerProtocol(); p > MaxPeerProtocol {
		return domain.Refuse(domain.ReasonHarnessUnsupported, "session speaks peer protocol %d; this peerctl knows protocol %d", p, MaxPeerProtocol)
	}
	return nil
}

// checkOnDisk refuses (delivery_failed) a path where no socket is: absent,
// not a socket, or a symbolic link (Lstat: see Deliver).
func checkOnDisk(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return failure("socket %s does not exist: %v", path, err)
		}
		return failure("socket %s: %v", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return failure("%s is not a socket: %v", path, fmt.Errorf("file mode %s", fi.Mode()))
	}
	return nil
}

// failure is a delivery_failed refusal about path carrying err.
func failure(format, path string, err error) *domain.Refusal {
	r := domain.Refuse(domain.ReasonDeliveryFailed, format, path, err)
	r.Err = err
	return r
}

// posts is this process's previous post to each socket (package repeat).
var posts = repeat.Guard{Sender: "process"}

// Deliver posts msg to target's socket. Errors are *domain.Refusal with
// ReasonDeliveryFailed carrying the OS error (no such file, not a socket,
// connection refused, time-out) while nothing was written,
// ReasonOutcomeUnknown once a byte of the frame was (a write that broke
// off, a session that did not close the connection before the time-out or
// the interrupt), or ReasonNotAddressable when the session has no socket.
//
// The path is checked with Lstat, on purpose: a symbolic link is refused as
// "not a socket" even when it points at one. Claude Code binds the socket
// itself at the path it records; a link there was put by someone else and
// could lead anywhere (another user's listener).
//
// The outcome is "posted" once the session closed the connection. Claude
// Code's socket never writes back (2.1.328, docs/CLAUDE-CODE-FACTS.md); a
// listener that did is still "posted", and the receipt's detail says how
// many bytes it replied, since it may not be a Claude Code session.
//
// A text identical to this process's previous post to the same socket
// within 30 s is refused (delivery_failed) without connecting: the session
// knows a post's sender by its pid and drops such a repeat (package
// repeat). A one-shot `peerctl send` is a new sender each time.
func (t *Transport) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := checkTarget(target); err != nil {
		return domain.Receipt{}, err
	}
	path := target.SocketPath()
	if err := checkOnDisk(path); err != nil {
		return domain.Receipt{}, err
	}
	// The session knows a socket post's sender by its pid: every post of
	// this process is one sender, whose repeat it would drop.
	done, err := posts.Begin(target, msg.Text())
	if err != nil {
		return domain.Receipt{}, err
	}
	written := false
	defer func() { done(written) }()
	fail := func(format string, err error) (domain.Receipt, error) {
		return domain.Receipt{}, failure(format, path, err)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	log.Debug("socket connect", "socket", path, "err", err)
	if err != nil {
		return fail("connect to %s: %v", err)
	}
	uc := conn.(*net.UnixConn)
	defer uc.Close()
	deadline, _ := ctx.Deadline()
	_ = uc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = uc.SetDeadline(time.Now()) })
	defer stop()
	// Once a byte of the frame has left, a failure cannot say the text
	// did not arrive: it is outcome_unknown (unknown), not delivery_failed.
	unknown := func(format string, err error) (domain.Receipt, error) {
		r := domain.Refuse(domain.ReasonOutcomeUnknown, format+"; the session may or may not have it: look before sending again", path, err)
		r.Err = err
		return domain.Receipt{}, r
	}
	if n, err := uc.Write(Frame(msg.Text())); err != nil {
		if written = n > 0; written {
			return unknown("write to %s broke off after part of the frame: %v", err)
		}
		return fail("write to %s: %v; nothing was sent", err)
	}
	written = true
	if err := uc.CloseWrite(); err != nil {
		return unknown("the frame was written to %s, then the half-close failed: %v", err)
	}
	// The session closes the connection once it has read the line; it sends
	// nothing. Drain whatever it might say until it closes; the deadline
	// bounds the wait (a size limit would let a chatty peer that never
	// closes pass for one that did).
	replied, err := io.Copy(io.Discard, uc)
	log.Debug("socket closed by the session", "socket", path, "replied", replied, "err", err)
	if err != nil {
		return unknown("the frame was written to %s but the session did not close the connection: %v", err)
	}
	detail := "frame written; the socket gives no acknowledgement"
	if replied > 0 {
		detail += fmt.Sprintf("; the socket replied %d bytes, which Claude Code 2.1.328 never does (it may not be a Claude Code session)", replied)
	}
	return domain.Receipt{Transport: Name, Outcome: "posted", Detail: detail}, nil
}
