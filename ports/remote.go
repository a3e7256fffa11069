package ports

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// RemoteProtocol is the output protocol this build speaks: the shape of
// every --json document, watch line and relay line its commands print. A
// peerctl on another machine is used only when it speaks the same one
// (`peerctl version --json` prints it as outputProtocol). Raise it when a
// document gains, loses or changes a field: the far side's output is parsed
// with exact keys. Protocol 2: the caller holds the far side's stdin open
// for the whole call, and the far side stops when it closes (send reads
// exactly the announced bytes of its text, not to the end of stdin).
// Protocol 3: a watch event says why a live session is not addressable
// yet (unaddressable). Protocol 4: doctor's document carries its table
// for people (rows, summary), so a far side's report prints as one made
// here does. Protocol 5: a waiting session (status "waiting") says what it
// waits on (waitingFor) in list, show, watch and a wait's receipt.
const RemoteProtocol = 5

// ErrConnectionLost is the cause (Refusal.Err) of a host_unreachable
// refusal when the connection ended after the far side's peerctl had
// started: whatever it was given may have been acted on there (a send whose
// text was handed over is outcome_unknown, never retried blindly).
var ErrConnectionLost = errors.New("connection lost")

// HostSettings are what peerctl knows of one host beyond its Dest: how to
// run peerctl there. `peerctl hosts` keeps them per host; without an entry
// every field is its default.
type HostSettings struct {
	// Program is the far side's peerctl: "" runs "peerctl" from the remote
	// PATH; otherwise an exact path there (absolute, or relative to the
	// remote home, e.g. a versioned install under ~/.cache).
	Program string
	// Env are environment variables for the far side's peerctl, by name:
	// the remote harness settings ("CLAUDE_CONFIG_DIR" for its Claude Code
	// config dir, "PEERCTL_CLAUDE" for the claude program there,
	// "QWEN_HOME", "PEERCTL_QWEN"), set with `env NAME=value` before it.
	// This machine's own path flags (--config-dir, --qwen-home, --claude)
	// are never sent; only these are.
	Env map[string]string
}

// HostBook looks up a host's settings; the hosts config implements it.
// A host it does not know has the zero HostSettings (no error).
type HostBook interface {
	Host(dest domain.Dest) (HostSettings, error)
}

// RemoteCall is one run of the far side's peerctl.
type RemoteCall struct {
	Dest domain.Dest
	// Args are peerctl's own words and their values (["send", "--json",
	// "--", address, "-"]): every one travels quoted, none is ever read
	// by a shell as code.
	Args []string
	// Stdin is handed to the far side once its peerctl has started (the
	// message text travels here, never in Args); nil: none. The far side's
	// stdin then stays open until the call ends (unless EndInput): its
	// end is how the far side's peerctl knows that its caller is gone (a
	// timeout, a kill, a lost connection here) and stops what it does.
	// A call ends only once Stdin has been read out: a Stdin that can
	// block (a stream of requests) is the caller's to end when the far
	// side has (a Stream's Lines closed).
	Stdin io.Reader
	// EndInput ends the far side's stdin when Stdin ends (relay: the end
	// of its requests is the end of its run).
	EndInput bool
	// MaxOutput bounds the far side's stdout (0: the adapter's default);
	// more is a broken remote (host_unreachable).
	MaxOutput int
	// StartTimeout bounds the wait for the far side's peerctl to answer
	// (0: the adapter's own bound): a Stream's ctx bounds its whole run.
	StartTimeout time.Duration
	// Grace (a Call's; 0: none) is how long a call whose ctx is canceled
	// (interrupted: Ctrl-C, not out of time) after its Stdin was handed
	// over waits for the far side's answer: its stdin is closed at once,
	// which tells its peerctl that its caller is gone, and what it prints
	// before it ends within Grace is the call's result, as if it had not
	// been interrupted (a send's receipt: what the far side did). Past
	// Grace the call is abandoned as any interrupted one.
	Grace time.Duration
	// Env are NAME=VALUE words the far side's peerctl runs with (by `env`,
	// after the host's own variables), quoted as Args are.
	Env []string
	// Lines (a Call's; nil: none) is told each line the far side prints
	// after its hello, as it arrives, until it says a line is not its own:
	// that line and the rest are the result's Stdout, read to the end. The
	// lines it took count against MaxOutput. It is called from the call's
	// goroutine.
	Lines func(line []byte) bool
}

// RemoteResult is how a far side's peerctl ended.
type RemoteResult struct {
	// Stdout is what it printed (after the hello), at most MaxOutput bytes.
	Stdout []byte
	// Stderr is its messages, bounded (the adapter keeps the end).
	Stderr []byte
	// Code is its exit code (peerctl's own table).
	Code int
	// Version is the far side's peerctl version as its hello said it.
	Version string
}

// Remote runs this build's peerctl on other machines. Every failure to
// reach a usable peerctl there is a *domain.Refusal with
// ReasonHostUnreachable (Err ErrConnectionLost when the connection ended
// after the far side's peerctl had started); the far side's own refusals
// come back as its exit code and output. Nothing outlives a call.
type Remote interface {
	// Call runs c to its end, bounded by ctx.
	Call(ctx context.Context, c RemoteCall) (RemoteResult, error)
	// Stream runs c and hands over its stdout line by line (watch, relay)
	// until it ends or ctx does.
	Stream(ctx context.Context, c RemoteCall) (RemoteStream, error)
}

// RemoteStream is a far side's peerctl whose output is read as it comes.
type RemoteStream interface {
	// Lines delivers each line of stdout (without its newline; a line over
	// the bound ends the stream as a broken remote); closed at the end.
	Lines() <-chan []byte
	// Wait waits for the end (call it once Lines is closed): the exit code
	// and stderr, or the host_unreachable refusal of a lost connection.
	Wait() (RemoteResult, error)
	// Close ends the far side's run now (its whole process group here).
	Close()
}
