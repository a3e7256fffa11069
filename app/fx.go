package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/fswatch"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/qwencli"
	"github.com/peerctl/peerctl/adapters/qweninbox"
	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/adapters/transcript"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Transport names accepted by Config.Transport.
const (
	TransportCourier = courierexec.Name
	TransportSocket  = socketframe.Name
	// TransportInbox is Qwen Code's inbox transport.
	TransportInbox = qweninbox.Name
)

// Transports lists every transport name, Claude Code's then Qwen Code's.
func Transports() []string { return []string{TransportCourier, TransportSocket, TransportInbox} }

// SocketMaxPeerProtocol is the newest peer protocol the socket transport
// speaks (socketframe.MaxPeerProtocol); it refuses newer sessions.
const SocketMaxPeerProtocol = socketframe.MaxPeerProtocol

// Config is what the graph needs from its caller (the CLI, or a host).
type Config struct {
	// ConfigDir is Claude Code's config dir; the registry is ConfigDir/sessions.
	ConfigDir string
	// Transport is "courier" or "socket" (Claude Code), "inbox" (Qwen
	// Code), or "" for each target harness's default (courier, inbox).
	Transport string
	// QwenHome is Qwen Code's home; its registry is QwenHome/sessions.
	// Empty: no Qwen Code registry is read.
	QwenHome string
	// Qwen is the qwen program doctor probes (default "qwen" on PATH).
	Qwen string
	// InboxWindow is how long the inbox transport waits for a receipt (0:
	// qweninbox.DefaultWindow; negative: not at all).
	InboxWindow time.Duration
	// Timeout bounds one delivery (0: the transport's default).
	Timeout time.Duration
	// Claude is the courier program (default "claude" on PATH).
	Claude string
	// Env is the environment the courier starts from (default os.Environ()).
	Env []string
	// From is the sender's display name, which receivers see: the
	// courier's name (Claude Code) and the inbox frame's fromName (Qwen
	// Code); default "peerctl".
	From string
}

// Module provides *Service and the ports bound to the real adapters. Supply
// a Config; swap any port with fx.Replace or fx.Decorate.
var Module = fx.Module("peerctl",
	readPorts,
	fx.Provide(
		NewCourier,
		NewSocket,
		NewInbox,
		NewTransport,
		NewService,
		NewProgramProber,
		NewQwenProber,
		NewProcesses,
		fx.Annotate(NewTranscripts, fx.As(new(ports.Transcripts))),
		fx.Annotate(NewFolderWatcher, fx.As(new(ports.FolderWatcher))),
		fx.Annotate(NewExitWatcher, fx.As(new(ports.ExitWatcher))),
		NewWatcher,
		NewCouriers,
		NewRelay,
	),
)

// readPorts binds the Registry and Liveness ports to the real adapters
// (every harness's registry and liveness), for Module and ReadModule alike:
// a registry or liveness adapter is added here, once.
var readPorts = fx.Provide(
	NewRegistry,
	fx.Annotate(NewRegistries, fx.As(new(ports.Registry))),
	NewLiveness,
	fx.Annotate(NewHarnessLiveness, fx.As(new(ports.Liveness))),
)

// ReadModule provides a *Service for the commands that only read the
// registry (list, enrich, completion): the Registry and Liveness ports
// bound as in Module, and nothing that delivers, confirms or watches. A
// smaller graph is a cheaper fx.New (docs/PERFORMANCE.md: about 8% of a
// `list` process). Supply a Config. The Service it gives refuses Send (no
// transport).
var ReadModule = fx.Module("peerctl.read",
	readPorts,
	fx.Provide(NewReadService),
)

// NewReadService is New for ReadModule: the Service over the registry and
// liveness ports only.
func NewReadService(cfg Config, reg ports.Registry, live ports.Liveness) *Service {
	return New(reg, live, nil, cfg.ConfigDir, WithQwenHome(cfg.QwenHome))
}

// NewRegistry reads cfg.ConfigDir/sessions.
func NewRegistry(cfg Config) *fsregistry.Registry {
	return fsregistry.New(fsregistry.SessionsDir(cfg.ConfigDir))
}

// NewRegistries reads Claude Code's registry, then Qwen Code's when
// cfg.QwenHome is set.
func NewRegistries(cfg Config, claude *fsregistry.Registry) Registries {
	rs := Registries{claude}
	if cfg.QwenHome != "" {
		rs = append(rs, qwenregistry.New(qwenregistry.SessionsDir(cfg.QwenHome)))
	}
	return rs
}

// NewLiveness checks records against this machine's /proc.
func NewLiveness() *procliveness.Checker { return procliveness.New() }

// NewHarnessLiveness checks each record with its harness's rules: Qwen
// Code's over the same /proc reading.
func NewHarnessLiveness(base *procliveness.Checker) HarnessLiveness {
	return HarnessLiveness{Default: base, By: map[domain.Harness]ports.Liveness{
		domain.HarnessQwenCode: qwenregistry.NewLiveness(base, "/proc"),
	}}
}

// NewInbox builds Qwen Code's inbox transport from cfg.
func NewInbox(cfg Config) *qweninbox.Transport {
	return qweninbox.New(qweninbox.Config{Timeout: cfg.Timeout, Window: cfg.InboxWindow, FromName: cfg.From})
}

// NewCourier builds the courier transport from cfg.
func NewCourier(cfg Config) *courierexec.Transport {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	return courierexec.New(courierexec.Config{Program: cfg.Claude, Timeout: cfg.Timeout, Env: env, Name: cfg.From})
}

// NewSocket builds the inbox-socket transport from cfg.
func NewSocket(cfg Config) *socketframe.Transport { return socketframe.New(cfg.Timeout) }

// NewTransport routes each send to its target harness's transport: the
// one cfg.Transport names, or the harness's default (courier for Claude
// Code, inbox for Qwen Code) when it is "".
func NewTransport(cfg Config, courier *courierexec.Transport, socket *socketframe.Transport, inbox *qweninbox.Transport) (ports.Transport, error) {
	switch cfg.Transport {
	case "", TransportCourier, TransportSocket, TransportInbox:
	default:
		return nil, fmt.Errorf("unknown transport %q (want %q, %q or %q)", cfg.Transport, TransportCourier, TransportSocket, TransportInbox)
	}
	return &Router{Chosen: cfg.Transport, By: map[domain.Harness][]ports.Transport{
		domain.HarnessClaudeCode: {courier, socket},
		domain.HarnessQwenCode:   {inbox},
	}}, nil
}

// NewService is New for fx: the Service over the graph's ports, with the
// optional ones (confirmation, watching, long-lived couriers) where the
// graph holds them.
func NewService(cfg Config, reg ports.Registry, live ports.Liveness, t ports.Transport, opt OptionalPorts) *Service {
	return New(reg, live, t, cfg.ConfigDir, WithTranscripts(opt.Transcripts), WithFolderWatcher(opt.Folders),
		WithExitWatcher(opt.Exits), WithCouriers(opt.Couriers), WithQwenHome(cfg.QwenHome))
}

// NewCouriers exposes each harness's long-lived couriers (send
// --await-reply, Relay): the courier transport's for Claude Code, the
// inbox transport's reply inbox for Qwen Code.
func NewCouriers(courier *courierexec.Transport, inbox *qweninbox.Transport) ports.Couriers {
	return HarnessCouriers{domain.HarnessClaudeCode: courier, domain.HarnessQwenCode: inbox}
}

// NewRelay builds the Relay over svc and ties it to the fx lifecycle:
// OnStart starts its courier, OnStop stops it and waits for its
// goroutines. Nothing starts unless something asks the graph for a *Relay.
func NewRelay(lc fx.Lifecycle, svc *Service) *Relay {
	r := newRelay(svc)
	lc.Append(fx.Hook{OnStart: r.Start, OnStop: r.Stop})
	return r
}

// OptionalPorts are the ports a Service can do without (confirmation,
// watching); the Module provides them all, a host may replace them.
type OptionalPorts struct {
	fx.In
	Transcripts ports.Transcripts   `optional:"true"`
	Folders     ports.FolderWatcher `optional:"true"`
	Exits       ports.ExitWatcher   `optional:"true"`
	Couriers    ports.Couriers      `optional:"true"`
}

// NewTranscripts reads transcripts, told of appends by the folder watcher.
func NewTranscripts(folders ports.FolderWatcher) *transcript.Reader { return transcript.New(folders) }

// NewFolderWatcher watches folders with fsnotify (polling fallback).
func NewFolderWatcher() *fswatch.Folder { return fswatch.NewFolder() }

// NewExitWatcher watches processes end with pidfds (polling fallback).
func NewExitWatcher() *fswatch.Exits { return fswatch.NewExits() }

// Watcher runs Service.Watch under the fx lifecycle: OnStart starts it,
// OnStop stops it and waits for it to finish. Events arrive on Events,
// which is closed when the watch has ended (stopped, or failed: see Err).
// Nothing starts unless something asks the graph for a *Watcher.
type Watcher struct {
	svc    *Service
	events chan domain.Event
	notes  chan string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// NewWatcher registers the watcher's lifecycle hooks.
func NewWatcher(lc fx.Lifecycle, svc *Service) *Watcher {
	w := &Watcher{svc: svc, events: make(chan domain.Event, 64), notes: make(chan string, 4), done: make(chan struct{})}
	lc.Append(fx.Hook{OnStart: w.start, OnStop: w.stop})
	return w
}

// Events delivers the watch's events in order; it is closed when the
// watch ends. A consumer must keep reading until then (or stop the app).
func (w *Watcher) Events() <-chan domain.Event { return w.events }

// Notes delivers what Service.WatchNotes notes (e.g. MissingFolderNote);
// it is closed when the watch ends. It is buffered: a consumer that
// ignores it loses nothing else.
func (w *Watcher) Notes() <-chan string { return w.notes }

// Err is the error that ended the watch (nil after a clean stop); read it
// once Events is closed.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

func (w *Watcher) start(context.Context) error {
	// The watch outlives OnStart's context: it runs until OnStop.
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		defer close(w.done)
		defer close(w.events)
		defer close(w.notes)
		w.err = w.svc.WatchNotes(ctx, func(e domain.Event) {
			select {
			case w.events <- e:
			case <-ctx.Done():
			}
		}, func(n string) {
			select {
			case w.notes <- n:
			case <-ctx.Done():
			}
		})
	}()
	return nil
}

func (w *Watcher) stop(ctx context.Context) error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop watcher: %w", ctx.Err())
	}
}

// NewProgramProber exposes the courier's program probe (for `peerctl doctor`).
func NewProgramProber(courier *courierexec.Transport) ports.ProgramProber { return courier }

// NewQwenProber probes the qwen program (cfg.Qwen, else "qwen" on PATH)
// for `peerctl doctor`.
func NewQwenProber(cfg Config) ports.QwenProber {
	return &qwencli.Prober{Program: cfg.Qwen, Home: cfg.QwenHome}
}

// NewProcesses reads the process tree from /proc (for whoami and doctor).
func NewProcesses() ports.Processes { return procliveness.NewTree("") }
