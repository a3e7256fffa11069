// Package sshhost reaches the peerctl of another machine through the
// system's OpenSSH client (ports.Remote): the user's ~/.ssh/config, agent,
// known_hosts, ProxyJump and ControlMaster apply; no network code of
// peerctl's own, no daemon, no open port.
//
// The ssh program is $PEERCTL_SSH when set (a command line split into
// words as a POSIX shell would, without running one, like git's
// GIT_SSH_COMMAND: `ssh -F ~/work/ssh_config`; a word starting "~/" is
// under $HOME), else "ssh" on PATH. peerctl adds -T, -x, -a,
// BatchMode=yes (a tool never prompts), a ConnectTimeout, a keepalive
// (ServerAliveInterval=15, ServerAliveCountMax=2) and, except on
// Windows, connection sharing: a master connection started apart from the
// calls, in a session of its own, with a short ControlPersist
// (startMaster), whose ControlPath lives in a 0700 folder of peerctl's own
// and is named by the host's whole configuration (sshFor); the calls use
// it (ControlMaster=no) and never become one. It never turns host-key
// checking off. The destination follows "--", so nothing in it is
// an option.
//
// The remote command line is built from peerctl's own words and the
// arguments, each single-quoted (Quote): the far side's login shell (a
// POSIX one) runs exactly `peerctl --hello=N ARGS...`, with nothing of a
// name or text read as code. The text of a message travels on stdin, handed
// over only once the far side's peerctl said hello: its first stdout line,
// {"hello":"peerctl","outputProtocol":N,"version":"..."}, read with exact
// keys and bounded in size and time. The rest of its output is bounded too
// (MaxOutput; a line of a stream at MaxLine), and every call ends its ssh
// process group when it ends. The far side's stdin stays open until the
// call ends (ports.RemoteCall): its end tells the far side's peerctl that
// its caller is gone.
package sshhost

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

const (
	// DefaultConnectTimeout is ssh's ConnectTimeout.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultHelloTimeout bounds the wait for the far side's hello after
	// the connection is made (a peerctl starts in milliseconds).
	DefaultHelloTimeout = 20 * time.Second
	// MaxOutput is the default bound of a call's stdout.
	MaxOutput = 16 << 20
	// MaxLine bounds one line of a stream (a relay line carries up to a
	// 64 KiB text, escaped).
	MaxLine = 2 << 20
	// maxHello bounds the hello line; maxStderr what is kept of stderr.
	maxHello  = 4 << 10
	maxStderr = 64 << 10
	// controlPersistSeconds keeps a shared connection open after the last
	// call (unix).
	controlPersistSeconds = 60
)

// Options configure a Channel.
type Options struct {
	// Getenv reads PEERCTL_SSH, HOME and XDG_RUNTIME_DIR (nil: none set).
	Getenv func(string) string
	// Book gives each host's settings (nil: every host has the defaults).
	Book ports.HostBook
	// Version is this build's version, named beside the far side's when
	// they do not match.
	Version string
	// ConnectTimeout and HelloTimeout (0: the defaults).
	ConnectTimeout, HelloTimeout time.Duration
	// Log hears each ssh argv and exit at debug level (nil: silent).
	Log *slog.Logger
	// Warn hears, once per destination, why that destination's calls
	// share no connection when the rest may (nil: only Log hears it).
	Warn func(string)
}

// Channel is ports.Remote over the system ssh. Build it with New.
type Channel struct {
	ssh     []string // the ssh program and the options peerctl adds
	control []string // the sharing options, ControlPath ending in controlKeyWord
	dir     string   // the sockets' folder ("": nothing shared)
	opts    Options
	sharing string   // why connections are not shared ("" when they are)
	keys    sync.Map // domain.Dest's string → its configKey ("": not shared)
	masters sync.Map // a configKey → *master
}

// master is the master connection of one configKey, started once per
// Channel (startMaster).
type master struct {
	once sync.Once
	down bool // it could not be started: calls share nothing
}

// prepare starts the master connection dest's calls will share (once per
// Channel and configuration), before a call's ssh runs, within ctx: calls
// use a master, they never become one (controlOptions).
func (c *Channel) prepare(ctx context.Context, dest domain.Dest) {
	if c.dir == "" {
		return
	}
	key := c.configKey(dest)
	if key == "" {
		return
	}
	v, _ := c.masters.LoadOrStore(key, &master{})
	m := v.(*master)
	m.once.Do(func() { m.down = !c.startMaster(ctx, dest, filepath.Join(c.dir, key)) })
}

// shared reports whether dest's calls share the master of key: not when
// it could not be started (then each call connects on its own, and says
// why it cannot when it cannot).
func (c *Channel) shared(key string) bool {
	v, ok := c.masters.Load(key)
	return !ok || !v.(*master).down
}

// controlKeyWord stands in the ControlPath for the destination's
// configKey until sshFor fills it in.
const controlKeyWord = "{key}"

// sshFor is the ssh command line for dest: the options peerctl adds, and
// the sharing options with a ControlPath named by dest's whole effective
// configuration (configKey). ssh's own %C hashes the local host, HostName,
// port and user only: two aliases that reach different machines through
// other ProxyCommand, ProxyJump or HostKeyAlias settings would share one
// master connection, and a call for one would run on the other's machine
// with no host-key check of its own. What `ssh -G` prints is every setting
// ssh will connect with, so calls share a connection only when they would
// have made exactly the same one. Where ssh -G fails (an ssh that lacks
// it), that destination's calls share nothing.
func (c *Channel) sshFor(dest domain.Dest) []string {
	argv := append([]string(nil), c.ssh...)
	if len(c.control) == 0 {
		return argv
	}
	key := c.configKey(dest)
	if key == "" || !c.shared(key) {
		return append(argv, "-o", "ControlMaster=no", "-o", "ControlPath=none")
	}
	for _, o := range c.control {
		argv = append(argv, strings.ReplaceAll(o, controlKeyWord, key))
	}
	return argv
}

// configKeyTimeout bounds one `ssh -G` (it reads configuration only and
// connects nowhere).
const configKeyTimeout = 5 * time.Second

// configKey is the first 20 hex digits of the SHA-256 of what
// `ssh OPTIONS -G -- DEST` prints (with peerctl's own options), once per
// destination and Channel; "" when it fails.
func (c *Channel) configKey(dest domain.Dest) string {
	if k, ok := c.keys.Load(dest.String()); ok {
		return k.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), configKeyTimeout)
	defer cancel()
	argv := append(append([]string(nil), c.ssh...), "-G", "--", dest.String())
	cmd := exec.Command(argv[0], argv[1:]...)
	out := &procgroup.Output{Max: 1 << 20}
	cmd.Stdout = out
	key := ""
	if err := procgroup.Run(ctx, cmd); err == nil && len(out.Bytes()) > 0 {
		sum := sha256.Sum256(out.Bytes())
		key = hex.EncodeToString(sum[:])[:20]
	} else {
		c.opts.Log.Debug("ssh -G", "dest", dest.String(), "err", err)
		if c.opts.Warn != nil {
			why := "it printed nothing"
			if err != nil {
				why = err.Error()
			}
			c.opts.Warn(fmt.Sprintf("connection sharing off for %s: `ssh -G` failed (%s), so its connection cannot be told from another alias's", dest, why))
		}
	}
	c.keys.Store(dest.String(), key)
	return key
}

var _ ports.Remote = (*Channel)(nil)

// ErrBadSSH is wrapped by New's error for a $PEERCTL_SSH that cannot be split.
var ErrBadSSH = errors.New("bad PEERCTL_SSH")

// New builds a Channel: the ssh command line is settled here (see the
// package doc); a $PEERCTL_SSH that is not a well-formed command line is
// an error wrapping ErrBadSSH.
func New(o Options) (*Channel, error) {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.HelloTimeout <= 0 {
		o.HelloTimeout = DefaultHelloTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	prog, err := Program(o.Getenv)
	if err != nil {
		return nil, err
	}
	dir, control, why := controlOptions(o.Getenv)
	ssh := append(prog, "-T", "-x", "-a", "-o", "BatchMode=yes",
		"-o", "ConnectTimeout="+strconv.Itoa(int(o.ConnectTimeout.Round(time.Second)/time.Second)),
		"-o", "ServerAliveInterval="+strconv.Itoa(serverAliveSeconds), "-o", "ServerAliveCountMax="+strconv.Itoa(serverAliveCount))
	return &Channel{ssh: ssh, control: control, dir: dir, opts: o, sharing: why}, nil
}

// The keepalive: ssh asks the far sshd for an answer after
// serverAliveSeconds of silence and gives up (exit 255: a lost
// connection) after serverAliveCount unanswered asks, so a network that
// hangs mid-watch, mid-relay or mid-send ends the call within about 45 s
// instead of never. Given on the command line, they win over the user's
// ssh config (ssh keeps the first value it is given), for every call
// alike; a shared connection's master carries them for all its calls.
const (
	serverAliveSeconds = 15
	serverAliveCount   = 2
)

// Program is the ssh command's words: $PEERCTL_SSH split as a POSIX shell
// splits words (quotes and backslashes, no expansion but a leading "~/"
// for $HOME), else (unset or empty) ["ssh"]; one that is all blanks, or
// does not split, is an error wrapping ErrBadSSH.
func Program(getenv func(string) string) ([]string, error) {
	line := getenv("PEERCTL_SSH")
	if line == "" {
		return []string{"ssh"}, nil
	}
	words, err := shellquote.Split(line)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrBadSSH, line, err)
	}
	if len(words) == 0 || words[0] == "" {
		return nil, fmt.Errorf("%w %q: no program", ErrBadSSH, line)
	}
	if home := getenv("HOME"); home != "" {
		for i, w := range words {
			if rest, ok := strings.CutPrefix(w, "~/"); ok {
				words[i] = strings.TrimSuffix(home, "/") + "/" + rest
			}
		}
	}
	return words, nil
}

// SharingOff says why connections are not shared ("" when they are).
func (c *Channel) SharingOff() string { return c.sharing }

// envName is a variable name a host's settings may carry.
// Compiled on first use, not in the package initialisation every command runs.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`) })

// Argv is the whole ssh command for call: the ssh program and options,
// "--", the destination, and the remote command line (CommandLine of
// `env` and the host's variables when it has any, the far side's peerctl,
// --hello and call's Args).
func (c *Channel) Argv(call ports.RemoteCall) ([]string, error) {
	if call.Dest.IsLocal() {
		return nil, errors.New("sshhost: no destination")
	}
	settings := ports.HostSettings{}
	if c.opts.Book != nil {
		var err error
		if settings, err = c.opts.Book.Host(call.Dest); err != nil {
			return nil, fmt.Errorf("settings of host %s: %w", call.Dest, err)
		}
	}
	program := settings.Program
	if program == "" {
		program = "peerctl"
	}
	if strings.HasPrefix(program, "-") || strings.Contains(program, "=") {
		// env would read it as an option or a variable.
		return nil, fmt.Errorf("settings of host %s: program %q starts with '-' or holds '='", call.Dest, program)
	}
	var words []string
	if len(settings.Env) > 0 || len(call.Env) > 0 {
		words = append(words, "env")
		names := make([]string, 0, len(settings.Env))
		for name := range settings.Env {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !envName().MatchString(name) {
				return nil, fmt.Errorf("settings of host %s: variable name %q", call.Dest, name)
			}
			words = append(words, name+"="+settings.Env[name])
		}
		for _, word := range call.Env {
			if name, _, ok := strings.Cut(word, "="); !ok || !envName().MatchString(name) {
				return nil, fmt.Errorf("variable %q of a call to %s", word, call.Dest)
			}
			words = append(words, word)
		}
	}
	words = append(words, program, "--hello="+strconv.Itoa(ports.RemoteProtocol))
	words = append(words, call.Args...)
	argv := c.sshFor(call.Dest)
	return append(argv, "--", call.Dest.String(), CommandLine(words)), nil
}

// hello is the first line the far side's peerctl prints with --hello.
type hello struct {
	Hello          string `json:"hello"`
	OutputProtocol int    `json:"outputProtocol"`
	Version        string `json:"version"`
}

// run is one started ssh.
type run struct {
	c       *Channel
	call    ports.RemoteCall
	cmd     *exec.Cmd
	group   *procgroup.Group
	stdout  *bufio.Reader
	stderr  *procgroup.Output
	stopCtx func() bool
	hello   hello
	stdin   io.WriteCloser
	stdinWG sync.WaitGroup
	// handed is set once stdin is being written; graced once an
	// interruption closed it and gave the far side its Grace to answer
	// (stop); done is closed by end.
	handed, graced atomic.Bool
	done           chan struct{}
	// ended is set by end, whose results are kept: a second end is a no-op.
	ended   bool
	exit    int
	waitErr error
}

// start starts ssh, reads the hello and hands stdin over; on error
// nothing is left running.
func (c *Channel) start(ctx context.Context, call ports.RemoteCall) (*run, error) {
	if !call.Dest.IsLocal() {
		c.prepare(ctx, call.Dest)
	}
	argv, err := c.Argv(call)
	if err != nil {
		return nil, err
	}
	c.opts.Log.Debug("ssh", "argv", argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	r := &run{c: c, call: call, cmd: cmd, stderr: &procgroup.Output{Max: maxStderr}, done: make(chan struct{})}
	cmd.Stderr = r.stderr
	cmd.WaitDelay = waitDelay
	// Always a pipe, held open until the call ends (ports.RemoteCall.Stdin):
	// its end tells the far side's peerctl that its caller is gone.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r.stdin = stdin
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if r.group, err = procgroup.Start(cmd); err != nil {
		return nil, c.unreachable(call.Dest, nil, "cannot run %s: %v", argv[0], err)
	}
	r.stopCtx = context.AfterFunc(ctx, func() { r.stop(ctx) })
	r.stdout = bufio.NewReaderSize(out, 64<<10)
	if err := r.readHello(ctx); err != nil {
		r.end(false)
		return nil, err
	}
	if call.Stdin != nil {
		r.handed.Store(true)
		r.stdinWG.Add(1)
		go func() {
			defer r.stdinWG.Done()
			_, _ = io.Copy(stdin, call.Stdin)
			if call.EndInput {
				_ = stdin.Close()
			}
		}()
	}
	return r, nil
}

// stop ends the call once ctx has: ssh's group is killed at once, unless
// ctx was canceled (interrupted, not out of time) after stdin was handed
// over to a call with a Grace (ports.RemoteCall): then the far side's
// stdin is closed, which tells its peerctl that its caller is gone, and
// the group is killed only if the call has not ended within Grace.
func (r *run) stop(ctx context.Context) {
	if r.call.Grace <= 0 || !r.handed.Load() || !errors.Is(ctx.Err(), context.Canceled) {
		r.group.Kill()
		return
	}
	r.graced.Store(true)
	_ = r.stdin.Close()
	t := time.NewTimer(r.call.Grace)
	defer t.Stop()
	select {
	case <-t.C:
		r.group.Kill()
	case <-r.done:
	}
}

// exitGrace bounds how long end waits for ssh to exit by itself once its
// stdout has ended. An ssh that shares no connection (it lost the race to
// be the master, sharing is off, a ProxyCommand host, Windows) closes
// stdout before it has read the far side's exit status: killed then, a
// call that worked would read as a lost connection.
const exitGrace = 3 * time.Second

// waitDelay bounds how long a call waits, once ssh's group is ended, for
// ssh's output to close: a call ends within it of its own bound.
const waitDelay = 250 * time.Millisecond

// end waits, at most exitGrace (none when wait is false: the call is
// being abandoned), for ssh to exit with the far side's status, then kills
// what is left of its group and reaps it.
func (r *run) end(wait bool) (exit int, waitErr error) {
	if r.ended {
		return r.exit, r.waitErr
	}
	r.ended = true
	close(r.done)
	defer func() { r.exit, r.waitErr = exit, waitErr }()
	exited := make(chan struct{})
	go func() { r.group.AwaitExit(); close(exited) }()
	if wait {
		t := time.NewTimer(exitGrace)
		select {
		case <-exited:
		case <-t.C:
		}
		t.Stop()
	}
	r.group.Kill()
	<-exited // before Wait reaps the pid, which AwaitExit names
	waitErr = r.cmd.Wait()
	r.stopCtx()
	r.group.Close()
	r.stdinWG.Wait()
	return r.cmd.ProcessState.ExitCode(), waitErr
}

// readHello reads and checks the first line, within the call's
// StartTimeout, else HelloTimeout plus ConnectTimeout.
func (r *run) readHello(ctx context.Context) error {
	limit := r.c.opts.HelloTimeout + r.c.opts.ConnectTimeout
	if r.call.StartTimeout > 0 {
		limit = r.call.StartTimeout
	}
	timer := time.AfterFunc(limit, r.group.Kill)
	line, err := readLine(r.stdout, maxHello)
	timedOut := !timer.Stop()
	if err == nil {
		var h hello
		if jerr := jsonexact.Strict.Unmarshal(line, &h); jerr != nil || h.Hello != "peerctl" {
			return r.c.unreachable(r.call.Dest, nil, "the far side's first line is not peerctl's hello (%q…): is %q a peerctl? fix: %s", clip(line, 80), r.program(), wire.InstallFix(r.call.Dest))
		}
		if h.OutputProtocol != ports.RemoteProtocol {
			return r.c.mismatch(r.call.Dest, h.Version, h.OutputProtocol)
		}
		r.hello = h
		return nil
	}
	// No hello: why? Reap ssh (it is ending: its stdout did) and look at
	// how it ended.
	code, _ := r.end(!timedOut && ctx.Err() == nil)
	stderr := lastLines(r.stderr.Bytes(), 3)
	switch {
	case ctx.Err() != nil:
		return r.c.unreachable(r.call.Dest, ctx.Err(), "no answer from %s before the call ended (%v)", r.call.Dest, ctx.Err())
	case timedOut:
		return r.c.unreachable(r.call.Dest, nil, "no answer from peerctl on %s within %s", r.call.Dest, limit)
	case errors.Is(err, errLong):
		return r.c.unreachable(r.call.Dest, nil, "the far side's first line is over %d bytes: not peerctl's hello", maxHello)
	case code == 255:
		return r.c.unreachable(r.call.Dest, nil, "ssh %s failed (exit 255): %s", r.call.Dest, orNothing(stderr))
	case code == 127 || code == 126:
		return r.c.unreachable(r.call.Dest, nil, "no peerctl to run on %s as %q (exit %d: %s); fix: %s", r.call.Dest, r.program(), code, orNothing(stderr), wire.InstallFix(r.call.Dest))
	case code < 0:
		// Not this call's doing (its bounds are the cases above): something
		// ended ssh itself, so whether a peerctl is there is not known.
		return r.c.unreachable(r.call.Dest, nil, "ssh %s was ended (%s) before the far side said hello: %s", r.call.Dest, r.cmd.ProcessState, orNothing(stderr))
	}
	return r.c.probeVersion(r.call.Dest, r.program(), code, stderr)
}

func (r *run) program() string {
	if r.c.opts.Book != nil {
		if s, err := r.c.opts.Book.Host(r.call.Dest); err == nil && s.Program != "" {
			return s.Program
		}
	}
	return "peerctl"
}

// probeVersion asks a far side that did not say hello (an older peerctl,
// which has no --hello) for its version, to name it in the refusal.
func (c *Channel) probeVersion(dest domain.Dest, program string, code int, stderr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.HelloTimeout+c.opts.ConnectTimeout)
	defer cancel()
	if res, err := c.Exec(ctx, dest, []string{program, "version", "--json"}, nil, maxHello); err == nil && res.Code == 0 {
		var v struct {
			Version        string `json:"version"`
			OutputProtocol int    `json:"outputProtocol"`
		}
		switch {
		case jsonexact.Unmarshal(bytes.TrimSpace(res.Stdout), &v) != nil || v.Version == "":
		case v.OutputProtocol == ports.RemoteProtocol:
			// The same protocol: it refused this command line itself.
			return c.unreachable(dest, nil, "peerctl %s on %s did not start the command (exit %d: %s)", printable(v.Version), dest, code, orNothing(stderr))
		default:
			return c.mismatch(dest, v.Version, v.OutputProtocol)
		}
	}
	return c.unreachable(dest, nil, "%q on %s did not start as peerctl (exit %d: %s); fix: %s", program, dest, code, orNothing(stderr), wire.InstallFix(dest))
}

func (c *Channel) mismatch(dest domain.Dest, version string, protocol int) error {
	return c.unreachable(dest, nil, "%s runs peerctl %s (output protocol %d), this is peerctl %s (output protocol %d); fix: %s",
		dest, printable(version), protocol, c.opts.Version, ports.RemoteProtocol, wire.InstallFix(dest))
}

func (c *Channel) unreachable(dest domain.Dest, cause error, format string, args ...any) error {
	r := domain.Refuse(domain.ReasonHostUnreachable, format, args...)
	r.Err = cause
	return r
}

// lost is the refusal of a connection that ended after the hello.
func (c *Channel) lost(dest domain.Dest, why string) error {
	r := domain.Refuse(domain.ReasonHostUnreachable, "the connection to %s was lost while its peerctl ran (%s)", dest, why)
	r.Err = ports.ErrConnectionLost
	return r
}

// stopped is the refusal of a far side's run this end stopped because
// of what it printed: the connection was fine, the output was not. Its
// Err is ErrConnectionLost too: the far side may have acted already.
func (c *Channel) stopped(dest domain.Dest, why string) error {
	r := domain.Refuse(domain.ReasonHostUnreachable, "the far side's peerctl on %s was stopped: %s", dest, why)
	r.Err = ports.ErrConnectionLost
	return r
}

// Call runs call to its end (see ports.Remote).
func (c *Channel) Call(ctx context.Context, call ports.RemoteCall) (ports.RemoteResult, error) {
	r, err := c.start(ctx, call)
	if err != nil {
		return ports.RemoteResult{}, err
	}
	limit := call.MaxOutput
	if limit <= 0 {
		limit = MaxOutput
	}
	out, n, rerr := readOutput(r.stdout, limit, call.Lines)
	over := n > limit
	code, _ := r.end(!over)
	res := ports.RemoteResult{Stdout: out, Stderr: r.stderr.Bytes(), Code: code, Version: r.hello.Version}
	// Interrupted, the far side answered within its grace: ssh ended
	// with the far side's own status.
	answered := r.graced.Load() && rerr == nil && code >= 0 && code != 255
	switch {
	case over:
		return res, c.stopped(call.Dest, fmt.Sprintf("it printed more than %d bytes", limit))
	case ctx.Err() != nil && !answered:
		why := "the call ran out of time"
		if errors.Is(ctx.Err(), context.Canceled) {
			why = "the call was interrupted"
		}
		return res, c.lost(call.Dest, why+": "+ctx.Err().Error())
	case rerr != nil:
		return res, c.lost(call.Dest, rerr.Error())
	case code == 255 || code < 0:
		return res, c.lost(call.Dest, "ssh exit "+strconv.Itoa(code)+": "+sshWords(res.Stderr))
	}
	return res, nil
}

// readOutput reads stdout to its end, at most limit+1 bytes in all (n):
// the lines lines takes (nil: none) as they arrive, the rest returned.
func readOutput(stdout io.Reader, limit int, lines func([]byte) bool) (out []byte, n int, err error) {
	br := bufio.NewReader(io.LimitReader(stdout, int64(limit)+1))
	for lines != nil {
		line, err := br.ReadBytes('\n')
		if err == nil && lines(bytes.TrimSuffix(line, []byte("\n"))) {
			n += len(line)
			continue
		}
		out = line
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, n + len(out), err
		}
		break
	}
	rest, err := io.ReadAll(br)
	out = append(out, rest...)
	return out, n + len(out), err
}

// sshWords are ssh's own last words on stderr (at most 2 lines), which
// the far peerctl's share: a connection lost after the hello is said in
// them, never in a line the far peerctl printed ("peerctl: …", a note of
// its run), and a silent ssh is said so.
func sshWords(stderr []byte) string {
	var own []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "peerctl: ") {
			own = append(own, l)
		}
	}
	if w := lastLines([]byte(strings.Join(own, "\n")), 2); w != "" {
		return w
	}
	return "it said nothing of its own"
}

// Stream runs call and hands its stdout over line by line.
func (c *Channel) Stream(ctx context.Context, call ports.RemoteCall) (ports.RemoteStream, error) {
	r, err := c.start(ctx, call)
	if err != nil {
		return nil, err
	}
	s := &stream{r: r, ctx: ctx, lines: make(chan []byte), done: make(chan struct{})}
	go s.read()
	return s, nil
}

type stream struct {
	r     *run
	ctx   context.Context
	lines chan []byte
	done  chan struct{}
	err   error // set before lines closes: a broken line
	once  sync.Once
	// closed is set by Close: the end is ours, not a lost connection.
	closed atomic.Bool
}

func (s *stream) read() {
	defer close(s.lines)
	for {
		line, err := readLine(s.r.stdout, MaxLine)
		if err != nil {
			if errors.Is(err, errLong) {
				s.err = s.r.c.stopped(s.r.call.Dest, fmt.Sprintf("it printed a line over %d bytes", MaxLine))
				s.r.group.Kill()
			}
			return
		}
		select {
		case s.lines <- line:
		case <-s.done:
			return
		}
	}
}

func (s *stream) Lines() <-chan []byte { return s.lines }

func (s *stream) Close() {
	s.closed.Store(true)
	s.once.Do(func() { close(s.done) })
	s.r.group.Kill()
}

func (s *stream) Wait() (ports.RemoteResult, error) {
	s.once.Do(func() { close(s.done) })
	for range s.lines { // the reader ends at EOF or a kill
	}
	code, _ := s.r.end(!s.closed.Load() && s.err == nil)
	res := ports.RemoteResult{Stderr: s.r.stderr.Bytes(), Code: code, Version: s.r.hello.Version}
	switch {
	case s.err != nil:
		return res, s.err
	case !s.closed.Load() && s.ctx.Err() == nil && (code == 255 || code < 0):
		return res, s.r.c.lost(s.r.call.Dest, "ssh exit "+strconv.Itoa(code)+": "+sshWords(res.Stderr))
	}
	return res, nil
}

// errLong is readLine's error for a line over its bound.
var errLong = errors.New("line too long")

// readLine reads one line without its newline, at most max bytes; a last
// line without a newline counts; io.EOF when there is none.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max+1 {
			return nil, errLong
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0 && errors.Is(err, io.EOF):
			return line, nil
		default:
			return nil, err
		}
	}
}

// lastLines is the last n non-empty lines of b, joined by "; ", printable.
func lastLines(b []byte, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return printable(strings.Join(keep, "; "))
}

// printable is s with every character that is not printable Go-escaped
// (remote text reaches messages through it), at most 500 bytes.
func printable(s string) string {
	q := strconv.Quote(clip([]byte(s), 500))
	return q[1 : len(q)-1]
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

func orNothing(s string) string {
	if s == "" {
		return "it said nothing"
	}
	return s
}
