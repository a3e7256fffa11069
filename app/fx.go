package app

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Catalog is the list of harness plug-ins a program serves, in the order
// their words, flags and transports are shown. The composition root
// (internal/wiring) holds it: app/ never names a harness.
type Catalog []ports.HarnessPlugin

// Transports lists every harness's transport names, each harness's
// default first, in plug-in order.
func (c Catalog) Transports() []string {
	var out []string
	for _, p := range c {
		for _, t := range p.Transports {
			out = append(out, t.Name)
		}
	}
	return out
}

// TransportChoices says, for people, which transports serve which
// harness, each harness's default first: `"courier" or "socket"
// (claude-code), "inbox" (qwen-code)`.
func (c Catalog) TransportChoices() string {
	parts := make([]string, len(c))
	for i, p := range c {
		names := make([]string, len(p.Transports))
		for j, t := range p.Transports {
			names[j] = strconv.Quote(t.Name)
		}
		parts[i] = strings.Join(names, " or ") + " (" + p.Kind.String() + ")"
	}
	return strings.Join(parts, ", ")
}

// HearsReplies reports whether a reply can come back on the transport
// named (ports.TransportName.Replies); "" (each harness's default) does
// when every default does.
func (c Catalog) HearsReplies(transport string) bool {
	for _, p := range c {
		for i, t := range p.Transports {
			if t.Name == transport || transport == "" && i == 0 {
				if !t.Replies {
					return false
				}
				if transport != "" {
					return true
				}
			}
		}
	}
	return transport == ""
}

// Kinds lists the plug-ins' harnesses, in plug-in order: the order every
// list of harnesses people see (help, --harness choices, completion, the
// MCP schemas) is in.
func (c Catalog) Kinds() []domain.Harness {
	out := make([]domain.Harness, len(c))
	for i, p := range c {
		out[i] = p.Kind
	}
	return out
}

// Titles lists the plug-ins' harnesses by Title in prose joined by conj:
// "Claude Code, Qwen Code or Codex" for "or". Help texts use it, so that
// no harness is left out of one.
func (c Catalog) Titles(conj string) string {
	titles := make([]string, len(c))
	for i, p := range c {
		titles[i] = p.Kind.Title()
	}
	if len(titles) < 2 {
		return strings.Join(titles, "")
	}
	return strings.Join(titles[:len(titles)-1], ", ") + " " + conj + " " + titles[len(titles)-1]
}

// Flags lists every plug-in's flags, in plug-in order.
func (c Catalog) Flags() []ports.HarnessFlag {
	var out []ports.HarnessFlag
	for _, p := range c {
		out = append(out, p.Flags...)
	}
	return out
}

// Carry adds to flags every plug-in's carried settings
// (ports.HarnessPlugin.Carry), resolved with getenv; those resolved to ""
// are left out.
func (c Catalog) Carry(flags map[string]string, getenv func(string) string) {
	for _, p := range c {
		if p.Carry == nil {
			continue
		}
		for k, v := range p.Carry(getenv) {
			if v != "" {
				flags[k] = v
			}
		}
	}
}

// Plug provides c itself and builds each of its plug-ins into the value
// group "harnesses" (consumed by NewHarnesses): the one place a program's
// harnesses enter the graph. One constructor builds them all (a flattened
// group, as fx documents for a constructor of several values): fx.New
// costs about 10 KB for each constructor it is given, and more for each
// fx.Annotate (docs/PERFORMANCE.md, seventh round), on every run of every
// command. A host adds a harness of its own to the group as before.
func Plug(c Catalog) fx.Option {
	return fx.Provide(func(s ports.HarnessSettings) (plugged, error) {
		out := plugged{Catalog: c, Harnesses: make([]ports.Harness, 0, len(c))}
		for _, p := range c {
			h, err := p.New(s)
			if err != nil {
				return plugged{}, err
			}
			out.Harnesses = append(out.Harnesses, h)
		}
		return out, nil
	})
}

// plugged is what Plug provides: the catalog and its plug-ins, built.
type plugged struct {
	fx.Out
	Catalog   Catalog
	Harnesses []ports.Harness `group:"harnesses,flatten"`
}

// Config is what the graph needs from its caller (the CLI, or a host).
type Config struct {
	// Flags are the harness plug-ins' flag values by name
	// (ports.HarnessFlag, e.g. "config-dir"; "" or absent: not given, the
	// harness's default applies).
	Flags map[string]string
	// Getenv reads the environment for the harnesses' defaults (nil:
	// os.Getenv).
	Getenv func(string) string
	// Transport is one of Transports(), or "" for each target harness's
	// default.
	Transport string
	// ReceiptWindow is how long a transport waits for a session's
	// receipt (0: its default; negative: not at all).
	ReceiptWindow time.Duration
	// Timeout bounds one delivery (0: the transport's default).
	Timeout time.Duration
	// Env is the environment the programs harnesses start begin from
	// (default os.Environ()).
	Env []string
	// From is the sender's display name, which receivers see (default
	// "peerctl").
	From string
	// Only names the harnesses whose registries are read (nil: every
	// harness's): `list --harness X` reads X's alone, so another
	// harness's trouble (a Codex daemon that does not answer) costs it
	// nothing.
	Only []domain.Harness
	// Sending says who sends through the graph's Service, for the trust
	// policy (WithPolicy); its Procs, when nil, are the graph's
	// ports.Processes. nil: the Service asks no policy, its caller
	// decided (peerctl serve, running the sends its clients decided on).
	Sending *Sending
}

// NewRegistry reads the registries of the harnesses cfg.Only names
// (every harness's when it names none), as one (Registries).
func NewRegistry(cfg Config, hs Harnesses) Registries {
	if len(cfg.Only) == 0 {
		return hs.Registry()
	}
	var keep Harnesses
	for _, h := range hs {
		if slices.Contains(cfg.Only, h.Kind()) {
			keep = append(keep, h)
		}
	}
	return keep.Registry()
}

// Graph provides *Service, its Transport (routed to each target
// harness's), the Watcher, the Couriers and the Relay over the ports. It
// names no adapter: the composition root (internal/wiring.Module) adds the
// harness plug-ins (Plug) and the adapters bound to the other ports
// (ports.Processes, ports.Transcripts, ports.FolderWatcher,
// ports.ExitWatcher). Supply a Config; swap any port with fx.Replace or
// fx.Decorate.
var Graph = fx.Options(
	readPorts,
	fx.Provide(
		NewTransport,
		NewService,
		NewCouriers,
		NewRelay,
	),
)

// readPorts binds the Registry and Liveness ports to the harnesses of the
// value group "harnesses", for Graph and ReadGraph alike. The ports are
// bound by a constructor that returns them rather than with fx.Annotate and
// fx.As: each annotation builds a throwaway dig container (a seeded random
// source among it) and a reflect.MakeFunc on every fx.New, every run.
var readPorts = fx.Options(
	fx.Provide(
		NewLogger,
		NewHarnessSettings,
		newHarnessPorts,
	),
)

// harnessPorts are the graph's Harnesses (the group's) and the Registry
// and Liveness ports bound to them, given by one constructor: fx.New
// costs about 10 KB and a few page faults for each constructor it is
// given, on every run of every command (docs/PERFORMANCE.md). A host
// swaps either port with fx.Replace or fx.Decorate, as before.
type harnessPorts struct {
	fx.Out
	Harnesses Harnesses
	Registry  ports.Registry
	Liveness  ports.Liveness
}

// newHarnessPorts is NewHarnesses over the group, NewRegistry and the
// harnesses' Liveness.
func newHarnessPorts(cfg Config, in harnessGroup) harnessPorts {
	hs := NewHarnesses(in.Harnesses)
	return harnessPorts{Harnesses: hs, Registry: NewRegistry(cfg, hs), Liveness: hs.Liveness()}
}

// harnessGroup is the value group "harnesses" (Plug's, and any a host adds).
type harnessGroup struct {
	fx.In
	Harnesses []ports.Harness `group:"harnesses"`
}

// ReadGraph provides a *Service for the commands that only read the
// registry (list, enrich, completion): the Registry and Liveness ports
// bound as in Graph, and nothing that delivers, confirms or watches. A
// smaller graph is a cheaper fx.New (docs/PERFORMANCE.md: about 8% of a
// `list` process). The composition root adds the plug-ins
// (internal/wiring.ReadModule). The Service it gives refuses Send (no
// transport).
var ReadGraph = fx.Options(
	readPorts,
	fx.Provide(NewReadService),
)

// NewHarnessSettings are what every plug-in is built from.
func NewHarnessSettings(cfg Config, log *slog.Logger) ports.HarnessSettings {
	return ports.HarnessSettings{Flags: cfg.Flags, Getenv: cfg.Getenv, Env: cfg.Env, Timeout: cfg.Timeout,
		ReceiptWindow: cfg.ReceiptWindow, From: cfg.From, Log: log}
}

// NewReadService is New for ReadGraph: the Service over the registry and
// liveness ports, and the trust policy (for AllowedTo: a send that goes
// to another machine or to peerctl serve is decided before it leaves).
func NewReadService(cfg Config, hs Harnesses, reg ports.Registry, live ports.Liveness, opt PolicyPorts) *Service {
	return New(reg, live, nil, "", WithHarnesses(hs), policyOption(cfg, opt.Policy, opt.Processes))
}

// PolicyPorts are the trust policy's ports for ReadGraph.
type PolicyPorts struct {
	fx.In
	Policy    ports.Policy    `optional:"true"`
	Processes ports.Processes `optional:"true"`
}

// NewLogger is the send trail's logger (the resolved target, the courier's
// argv and exit status, socket connects, confirmation reads, at debug
// level), which the graph hands to every harness (HarnessSettings.Log):
// silent; replace it (fx.Replace) with a *slog.Logger to hear the trail.
func NewLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// NewTransport routes each send to its target harness's transport: the
// one cfg.Transport names, or the harness's default when it is "".
func NewTransport(cfg Config, c Catalog, hs Harnesses) (ports.Transport, error) {
	if cfg.Transport != "" && !slices.Contains(c.Transports(), cfg.Transport) {
		return nil, fmt.Errorf("unknown transport %q (want one of %s)", cfg.Transport, strings.Join(c.Transports(), ", "))
	}
	return hs.Router(cfg.Transport), nil
}

// NewService is New for fx: the Service over the graph's ports, with the
// optional ones (confirmation, watching, long-lived couriers, the trust
// policy) where the graph holds them.
func NewService(cfg Config, hs Harnesses, reg ports.Registry, live ports.Liveness, t ports.Transport, log *slog.Logger, opt OptionalPorts) *Service {
	return New(reg, live, t, "", WithTranscripts(opt.Transcripts), WithFolderWatcher(opt.Folders),
		WithExitWatcher(opt.Exits), WithCouriers(opt.Couriers), WithHarnesses(hs), WithLog(log), policyOption(cfg, opt.Policy, opt.Processes))
}

// policyOption is WithPolicy for cfg.Sending (no policy when it is nil),
// its Procs procs when it names none.
func policyOption(cfg Config, p ports.Policy, procs ports.Processes) Option {
	if cfg.Sending == nil {
		return func(*Service) {}
	}
	from := *cfg.Sending
	if from.Procs == nil {
		from.Procs = procs
	}
	return WithPolicy(p, from)
}

// NewCouriers exposes each harness's long-lived couriers (send
// --await-reply, Relay).
func NewCouriers(hs Harnesses) ports.Couriers { return hs.Couriers() }

// NewRelay builds the Relay over svc and ties it to the fx lifecycle:
// OnStart starts its courier, OnStop stops it and waits for its
// goroutines. Nothing starts unless something asks the graph for a *Relay.
func NewRelay(lc fx.Lifecycle, svc *Service) *Relay {
	r := newRelay(svc)
	lc.Append(fx.Hook{OnStart: r.Start, OnStop: r.Stop})
	return r
}

// OptionalPorts are the ports a Service can do without (confirmation,
// watching); the composition root (internal/wiring.Module) provides them all,
// a host may replace them.
type OptionalPorts struct {
	fx.In
	Transcripts ports.Transcripts   `optional:"true"`
	Folders     ports.FolderWatcher `optional:"true"`
	Exits       ports.ExitWatcher   `optional:"true"`
	Couriers    ports.Couriers      `optional:"true"`
	// Policy holds the trust policy's rules (none: the defaults);
	// Processes finds the sending session (Config.Sending).
	Policy    ports.Policy    `optional:"true"`
	Processes ports.Processes `optional:"true"`
}
