package courierexec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/procgroup"
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

// ProbeTimeout bounds each of the two short runs Probe makes (--version
// and --help). The courier run is bounded as a send's courier is
// (Config.Timeout, DefaultTimeout by default), so that doctor does not call
// a courier broken that a send would have waited for.
const ProbeTimeout = 10 * time.Second

// Flags returns the flags of Args (the tokens that start with "-"), in order.
func (t *Transport) Flags() []string {
	var out []string
	for _, a := range t.Args() {
		if strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// Probe checks the courier program without starting a session or sending
// anything: it resolves it on PATH, runs `<program> --version` and
// `<program> --help` (each bounded by ProbeTimeout, in its own process
// group that is killed afterwards, with the scrubbed environment, in a
// private folder), lists the flags of Args that --help does not define,
// and, when none is missing, runs one courier against peerctl's endpoint
// with a turn that sends nothing (Courier: the tools offered, the start-up
// time). A version older than udsVersion is Unfit, whatever that run
// shows. The help format is commander.js's, as printed by Claude Code
// 2.1.328: option lines start with two spaces and a dash, aliases separated
// by ", ", e.g. "  -p, --print   Print response and exit".
func (t *Transport) Probe(ctx context.Context) ProgramProbe {
	p := ProgramProbe{Program: t.cfg.Program, Flags: t.Flags()}
	path, err := t.lookProgram()
	if err != nil {
		p.Err = fmt.Errorf("find %q: %w", t.cfg.Program, unwrapExec(err))
		return p
	}
	p.Path = path
	out, err := t.short(ctx, path, "--version")
	if err != nil {
		p.Err = fmt.Errorf("run %s --version: %w", path, err)
		return p
	}
	p.Version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	if beforeUDS(p.Version) {
		p.Unfit = fmt.Sprintf("is older than %s, the oldest Claude Code measured to send to a session's socket (uds:); 2.1.224 offers SendMessage but refuses every uds: address, so every courier send fails with it: install Claude Code %s or newer, or pass --claude or set $%s to one",
			udsVersion, udsVersion, ProgramEnv)
	}
	help, err := t.short(ctx, path, "--help")
	if err != nil {
		p.Err = fmt.Errorf("run %s --help: %w", path, err)
		return p
	}
	defined := HelpFlags(help)
	for _, f := range p.Flags {
		if !defined[f] {
			p.Missing = append(p.Missing, f)
		}
	}
	if len(p.Missing) == 0 {
		p.Courier = t.ping(ctx)
	}
	return p
}

// ping runs one courier, bounded by the courier's own time-out
// (Config.Timeout), with a turn that sends nothing, and closes it.
func (t *Transport) ping(ctx context.Context) *CourierProbe {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	c, err := t.Start(ctx)
	if err != nil {
		return &CourierProbe{Err: err}
	}
	defer func() { _ = c.Close() }()
	tools, took, err := c.Ping(ctx)
	if err != nil && ctx.Err() != nil && c.Stats().Requests == 0 {
		err = fmt.Errorf("the courier never reached peerctl's endpoint within %s (a very busy machine can take that long: try again; else do managed settings pin another ANTHROPIC_BASE_URL?): %w", t.cfg.Timeout, err)
	}
	return &CourierProbe{Tools: tools, Startup: took, Err: err}
}

// udsVersion is the oldest Claude Code release measured to send to a
// session's socket, SendMessage to "uds:<socket>" (2.1.328; 2.1.332 too).
// 2.1.224 offers SendMessage, but answers every uds: address with a tool
// error, "Cross-session messaging is not available in this session.", so
// every courier send with it fails. Releases in between were not measured
// (docs/CLAUDE-CODE-FACTS.md, "A courier with no model").
const udsVersion = "2.1.328"

// beforeUDS reports whether version, the first line of `claude --version`
// ("2.1.224 (Claude Code)"), names a release older than udsVersion,
// comparing major, minor and patch as numbers. A version whose first word
// is not three dot-separated numbers is not judged: false.
func beforeUDS(version string) bool {
	v, ok := releaseNumbers(version)
	if !ok {
		return false
	}
	first, _ := releaseNumbers(udsVersion)
	for i := range v {
		if v[i] != first[i] {
			return v[i] < first[i]
		}
	}
	return false
}

// releaseNumbers reads "X.Y.Z" from the first word of version.
func releaseNumbers(version string) ([3]int, bool) {
	var v [3]int
	fields := strings.Fields(version)
	if len(fields) == 0 {
		return v, false
	}
	parts := strings.Split(fields[0], ".")
	if len(parts) != len(v) {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// HelpFlags returns the set of option names a commander.js --help text
// defines (see Probe for the format).
func HelpFlags(help []byte) map[string]bool {
	set := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(help))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		spec := strings.TrimSpace(line)
		if i := strings.Index(spec, "  "); i >= 0 {
			spec = spec[:i]
		}
		for _, alias := range strings.Split(spec, ", ") {
			name, _, _ := strings.Cut(alias, " ")
			name, _, _ = strings.Cut(name, "=")
			if strings.HasPrefix(name, "-") {
				set[name] = true
			}
		}
	}
	return set
}

// short runs path with one argument, bounded by ProbeTimeout, and returns
// its stdout. A non-zero exit, a timeout or a signal is an error carrying the
// head of stderr. The process group is killed before it returns.
func (t *Transport) short(ctx context.Context, path, arg string) ([]byte, error) {
	root, removeDir, err := privateDir()
	if err != nil {
		return nil, err
	}
	defer removeDir()
	dir := filepath.Join(root, "work")
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	stdout := &procgroup.Output{Max: 1 << 20}
	stderr := &procgroup.Output{Max: 64 << 10}
	cmd := exec.Command(path, arg)
	cmd.Dir = dir
	cmd.Env = append(append(ScrubEnv(t.cfg.Env), "CLAUDE_CONFIG_DIR="+filepath.Join(root, "config")), quietEnv...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = t.cfg.Grace
	err = procgroup.Run(ctx, cmd)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("no answer within %s; its process group was killed", ProbeTimeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("stderr %q: %w", head(stderr.Bytes(), 200), err)
	}
	return stdout.Bytes(), nil
}
