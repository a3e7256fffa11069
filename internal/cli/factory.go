package cli

import (
	"context"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// factory is what every command is built from (gh's cmdutil.Factory):
// the invocation's streams, this process as doctor, whoami and version
// describe it, the global flags, and the dependencies, each built lazily
// by internal/wiring when a command first asks (graph, nodes, remote). A
// command takes from it what it needs into its options; nothing else.
type factory struct {
	io     *iostreams
	getenv func(string) string
	// environ, pid, uid and buildInfo describe this process (doctor, whoami,
	// version); tests replace them.
	environ    func() []string
	executable func() (string, error)
	pid        int
	uid        int
	buildInfo  func() (*debug.BuildInfo, bool)
	// releaseVersion is the package's releaseVersion (version.go); a field
	// so tests can set it.
	releaseVersion string

	// flags holds the harness plug-ins' flag values by name.
	flags harnessFlagValues
	// debugFlag is --debug's value; debug what it (or $PEERCTL_DEBUG) asks for.
	debugFlag string
	debug     debugOn
	// ran is set once a command's RunE starts; errors before that are usage errors.
	ran bool
	// serveMCP is the MCP server `peerctl mcp` runs; nil in the peerctl
	// binary, which runs peerctl-mcp for it (mcpprogram.go).
	serveMCP MCPServer
	// bus is the fleet's bus client; nil in the peerctl binary, which runs
	// a command that needs it as peerctl-mcp (runWithBus).
	bus wiring.Bus
	// store opens the outbox; nil in the peerctl binary, which runs a
	// command that reads or keeps the outbox as peerctl-mcp (runWithStore).
	store wiring.Store
	// compileJQ compiles --jq's expression; nil in the peerctl binary,
	// which runs a command line with --jq as peerctl-mcp (jqWithFilter).
	compileJQ JQ
	// hello is --hello's value: the output protocol of the peerctl that
	// runs this one over ssh (sayHello).
	hello int
	// callerGone ends the command run over ssh when its caller is gone
	// (followCaller); nil without --hello.
	callerGone context.CancelCauseFunc
	// stdinBytes is send --stdin-bytes (-1: not given).
	stdinBytes int
	// hostBook gives each --host's settings: the hosts file (nil: the
	// defaults); remoteCh is the channel to other machines once built
	// (remote), under remoteMu.
	hostBook ports.HostBook
	remoteCh ports.Remote
	remoteMu sync.Mutex
	// sharingOnce says why ssh connections are not shared, once a run.
	sharingOnce sync.Once
	// args are the command line as given (after the program name), for
	// checks cobra's parsed flags cannot make (see apartValue).
	args []string
	// entrance is the trust policy's entrance of this command's sends:
	// mcp, relay, host (run over ssh by another peerctl: --hello); the
	// zero value, the command line (sending). callerDest is a host
	// entrance's calling machine (sshClient; "" when not known).
	entrance   domain.Entrance
	callerDest string
	// listNATS is list's --nats and --nats-creds, when given, or serve's
	// bus (with its --node): how --host nats:NODE reaches the bus
	// (requestSettings), the dashboard's nats: hosts included.
	listNATS *wiring.BusSettings
	// busActivity counts the requests of other nodes this service
	// answers (serve with a bus), for its --idle-exit.
	busActivity *serve.Activity
	// stopSignals stops catching signals (catchSignals); nil when they
	// are not caught.
	stopSignals func()
	// busLink is serve's place on the fleet's bus, once joinBus made it
	// (nil: no bus): its connection carries this machine's --host
	// nats:NODE requests (serve's "bus" op).
	busLink *serve.BusLink
}

func newFactory(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *factory {
	return &factory{io: newIOStreams(stdin, stdout, stderr, getenv), getenv: getenv, flags: harnessFlagValues{},
		stdinBytes: -1, environ: os.Environ, executable: os.Executable, hostBook: wiring.NewHostBook(getenv), pid: os.Getpid(), uid: os.Geteuid(), buildInfo: debug.ReadBuildInfo, releaseVersion: releaseVersion}
}

// options are per-command settings that shape the graph.
type options struct {
	transport string
	timeout   time.Duration
	// receiptWindow is how long a transport waits for the session's
	// receipt (--confirm-timeout; negative with --no-confirm).
	receiptWindow time.Duration
	// readOnly builds wiring.ReadModule (the registries and liveness only):
	// for the commands that never deliver, confirm or watch.
	readOnly bool
	// quiet: the config dir's warnings were already printed (a second graph).
	quiet bool
	// from is the sender's display name (send --from).
	from string
	// only names the harnesses whose registries are read (list
	// --harness; nil: every one).
	only []domain.Harness
	// sending is who sends, for the trust policy (nil: c.sending()).
	sending *app.Sending
}

// service builds the fx graph once and returns the Service. Warnings about
// the harnesses' settings go to stderr. extra are further fx.Populate
// targets (e.g. a *courierexec.Transport).
func (c *factory) service(opts options, extra ...any) (*app.Service, error) {
	var svc *app.Service
	if _, err := c.graph(opts, append([]any{&svc}, extra...)...); err != nil {
		return nil, err
	}
	return svc, nil
}

// started marks that a command began running (later errors are not usage errors).
func (c *factory) started() { c.ran = true }

// serveClient is this command's client of peerctl serve.
func (c *factory) serveClient() *serveClient {
	return &serveClient{io: c.io, getenv: c.getenv, environ: c.environ, program: c.serveProgram, flags: c.flags, debug: c.debug,
		hostTimeout: c.hostTimeout, checkHosts: c.checkHosts, allowedTo: c.allowedTo, who: c.who}
}
