package app

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/ports"
)

// Transport names accepted by Config.Transport.
const (
	TransportCourier = courierexec.Name
	TransportSocket  = socketframe.Name
)

// Config is what the graph needs from its caller (the CLI, or a host).
type Config struct {
	// ConfigDir is Claude Code's config dir; the registry is ConfigDir/sessions.
	ConfigDir string
	// Transport is "courier" (default) or "socket".
	Transport string
	// Timeout bounds one delivery (0: the transport's default).
	Timeout time.Duration
	// Claude is the courier program (default "claude" on PATH).
	Claude string
	// Env is the environment the courier starts from (default os.Environ()).
	Env []string
}

// Module provides *Service and the ports bound to the real adapters. Supply
// a Config; swap any port with fx.Replace or fx.Decorate.
var Module = fx.Module("peerctl",
	fx.Provide(
		fx.Annotate(NewRegistry, fx.As(new(ports.Registry))),
		fx.Annotate(NewLiveness, fx.As(new(ports.Liveness))),
		NewCourier,
		NewSocket,
		NewTransport,
		NewService,
		NewHarness,
		NewProcesses,
	),
)

// NewRegistry reads cfg.ConfigDir/sessions.
func NewRegistry(cfg Config) *fsregistry.Registry {
	return fsregistry.New(fsregistry.SessionsDir(cfg.ConfigDir))
}

// NewLiveness checks records against this machine's /proc.
func NewLiveness() *procliveness.Checker { return procliveness.New() }

// NewCourier builds the courier transport from cfg.
func NewCourier(cfg Config) *courierexec.Transport {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	return courierexec.New(courierexec.Config{Program: cfg.Claude, Timeout: cfg.Timeout, Env: env, ConfigDir: cfg.ConfigDir})
}

// NewSocket builds the inbox-socket transport from cfg.
func NewSocket(cfg Config) *socketframe.Transport { return socketframe.New(cfg.Timeout) }

// NewTransport picks the transport cfg.Transport names.
func NewTransport(cfg Config, courier *courierexec.Transport, socket *socketframe.Transport) (ports.Transport, error) {
	switch cfg.Transport {
	case "", TransportCourier:
		return courier, nil
	case TransportSocket:
		return socket, nil
	default:
		return nil, fmt.Errorf("unknown transport %q (want %q or %q)", cfg.Transport, TransportCourier, TransportSocket)
	}
}

// NewService is New for fx.
func NewService(cfg Config, reg ports.Registry, live ports.Liveness, t ports.Transport) *Service {
	return New(reg, live, t, cfg.ConfigDir)
}

// NewHarness exposes the courier's program probe (for `peerctl doctor`).
func NewHarness(courier *courierexec.Transport) ports.Harness { return courier }

// NewProcesses reads the process tree from /proc (for whoami and doctor).
func NewProcesses() ports.Processes { return procliveness.NewTree("") }
