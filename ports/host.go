package ports

import (
	"context"
	"time"
)

// ProgramProbe is what a look at the courier program found, without
// starting a session, spending tokens or sending anything.
type ProgramProbe struct {
	// Program is the program as configured ("claude", or a path).
	Program string
	// Path is where it resolved on PATH ("" when not found).
	Path string
	// Version is the first line `<program> --version` printed, e.g.
	// "2.1.328 (Claude Code)" ("" when it could not be read).
	Version string
	// Flags are the flags the courier passes, in its argv order.
	Flags []string
	// Missing lists the Flags absent from `<program> --help`.
	Missing []string
	// Err says why the probe could not finish (not found, timed out, a
	// non-zero exit); nil when Version and Missing are trustworthy.
	Err error
	// Courier is what one courier run with a turn that sends nothing
	// showed; nil when it was not run (Err set, or flags missing).
	Courier *CourierProbe
	// Unfit says why the program, though it may run and offer SendMessage,
	// cannot deliver, and what to do (Claude Code older than 2.1.328 sends
	// to no uds: address); "" when nothing is known against it.
	Unfit string
}

// CourierProbe is one courier run against peerctl's endpoint that sends
// nothing: no model, no token, no message.
type CourierProbe struct {
	// Tools are the tools the courier's model request offered (Claude
	// Code 2.1.328: ListAgents, DeferredToolPlaceholder, SendMessage).
	Tools []string
	// Startup is from the process start to the end of its first turn.
	Startup time.Duration
	// Err says why the run did not reach the endpoint or did not finish
	// its turn (managed settings that pin another base URL, a crash, a
	// time-out); nil when Tools is trustworthy.
	Err error
}

// ProgramProber inspects the program a transport runs (claude).
type ProgramProber interface {
	Probe(ctx context.Context) ProgramProbe
}

// Processes reads the process tree.
type Processes interface {
	// Parent returns pid's parent pid (0 for the root of our pid namespace).
	Parent(pid int) (int, error)
}

// QwenProbe is what a look at the qwen program and Qwen Code's settings
// found, without starting a session.
type QwenProbe struct {
	// Program is the program as configured ("qwen", or a path); Path is
	// where it resolved ("" when not found).
	Program, Path string
	// Version is what `qwen --version` printed, e.g. "0.24.4".
	Version string
	// Messaging is "on", "off" or "unknown": whether new sessions of this
	// version bind an inbox (setting agents.crossSessionMessaging, else the
	// version's default: on from 0.24.0, off in 0.23.x). MessagingWhy says
	// where that came from.
	Messaging, MessagingWhy string
	// Err says why the program could not be probed (nil when found and run).
	Err error
}

// QwenProber inspects Qwen Code (the qwen program and its settings).
type QwenProber interface {
	ProbeQwen(ctx context.Context) QwenProbe
}
