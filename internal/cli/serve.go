package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
)

// serveEnv is the variable that, set to "off", keeps every command from
// using or starting peerctl serve.
const serveEnv = "PEERCTL_SERVE"

// defaultQuiet is how long an on-demand service waits, with an empty
// outbox and no request, before it ends itself.
const defaultQuiet = 10 * time.Minute

// webFlags are serve's dashboard flags.
type webFlags struct {
	addr  string   // --http ("": no dashboard)
	hosts []string // --host: machines listed beside the hosts file's
}

// serveOptions are what `peerctl serve` needs: the streams (stderr is
// its log), this process, the nodes (the dashboard's listing), how it
// joins the fleet's bus, and its flags.
type serveOptions struct {
	io         *iostreams
	getenv     func(string) string
	environ    func() []string
	executable func() (string, error)
	version    versionJSON
	nodes      func([]domain.Dest) ([]app.Node, error)
	serve      func() *serveClient
	// join is how the service of a state folder joins the bus (joinBus).
	join func(stateDir string) (func(context.Context, serve.Answerer, wiring.Mailbox) (func(), wiring.PostMail, error), *wiring.FleetView, error)
	// busLink is the service's place on the bus once join was called (nil: no bus).
	busLink   func() *serve.BusLink
	idleExit  time.Duration
	activity  *serve.Activity // other nodes' requests, for idleExit
	retention time.Duration
	web       webFlags
	// store opens the outbox (peerctl-mcp's; runWithStore).
	store wiring.Store
}

func newServeCmd(f *factory) *cobra.Command {
	opts := &serveOptions{io: f.io, getenv: f.getenv, environ: f.environ, executable: f.executable, serve: f.serveClient, store: f.store,
		busLink: func() *serve.BusLink { return f.busLink }}
	opts.nodes = func(dests []domain.Dest) ([]app.Node, error) {
		if f.bus == nil && slices.ContainsFunc(dests, isNode) {
			// A running service is not run again as peerctl-mcp (runWithBus).
			return nil, domain.Refuse(domain.ReasonHostUnreachable, "--host nats:NODE: this service has no bus (serve --nats)")
		}
		return f.nodes(dests)
	}
	var (
		printUnit string
		bus       busFlags
		retention func() (time.Duration, error)
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service: a durable outbox and a warm courier (foreground)",
		Long: helpLong("Run peerctl's service in the foreground: it keeps send --durable messages until their target can take them, and sends through one warm courier", "serve") + `

With --http it also serves the dashboard, one page: the live sessions here, on each host of the hosts
file and each --host; the outbox, to cancel or retry; a send form; each host's state. It listens on
loopback unless --http=ADDR names another address (it then warns). Open the URL it prints: its token
becomes the cookie every request carries. It runs until Ctrl-C unless --idle-exit is given.
One service per state folder ($XDG_STATE_HOME): see serve status, serve stop.`,
		Example: `  peerctl serve                       # in a terminal; Ctrl-C ends it
  peerctl serve --print-unit=systemd > ~/.config/systemd/user/peerctl.service
  peerctl serve --http                # and the dashboard: open the URL printed
  peerctl serve --http=127.0.0.1:8080 --host dev-box   # dev-box's sessions too`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			plain := f.io.errOut
			f.io.errOut = stampLines(f.io.errOut) // the service's log: every line with its time
			defer func() {
				if errors.As(err, new(usageError)) {
					f.io.errOut = plain // printed as every command's usage error, no time in front
				}
			}()
			if cmd.Flags().Changed("quiet") {
				fmt.Fprintln(f.io.errOut, "peerctl: --quiet is the old name of --idle-exit (the same duration): use --idle-exit")
			}
			if opts.idleExit < 0 {
				return usageError{fmt.Errorf("--idle-exit %s: want a duration such as 10m, or 0 to never end on its own", opts.idleExit)}
			}
			if len(opts.web.hosts) > 0 && opts.web.addr == "" {
				return usageError{fmt.Errorf("--host %s: the machines of the dashboard; give --http too", safe(opts.web.hosts[0]))}
			}
			if err := checkServeFlags(cmd, opts.web, printUnit, bus); err != nil {
				return err
			}
			if printUnit != "" {
				return printServeUnit(f.io.out, f.executable, unitBus(cmd, f.getenv, bus), printUnit)
			}
			onBus := flagOrEnv(cmd, f.getenv, "nats", bus.urls, natsEnv) != ""
			if (opts.web.addr != "" || onBus) && !cmd.Flags().Changed("idle-exit") && !cmd.Flags().Changed("quiet") {
				opts.idleExit = 0 // a dashboard stays until Ctrl-C; a node stays a member of the fleet
			}
			opts.activity = &serve.Activity{}
			f.busActivity = opts.activity
			if opts.retention, err = retention(); err != nil {
				return err
			}
			f.started()
			if ran, err := f.runWithStore("peerctl serve", storeAlways); ran {
				return err
			}
			opts.version = f.version()
			opts.join = func(stateDir string) (func(context.Context, serve.Answerer, wiring.Mailbox) (func(), wiring.PostMail, error), *wiring.FleetView, error) {
				return f.joinBus(cmd, bus, stateDir)
			}
			return runServe(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.idleExit, "idle-exit", defaultQuiet, "end after this long idle (0: never: so with --http, --nats)")
	cmd.Flags().DurationVar(&opts.idleExit, "quiet", defaultQuiet, "the old name of --idle-exit")
	// Hidden, not MarkDeprecated: cobra prints that notice on stdout, into
	// a --print-unit's file.
	_ = cmd.Flags().MarkHidden("quiet")
	cmd.Flags().StringVar(&printUnit, "print-unit", "", "print a systemd --user unit or a launchd plist to install, then exit")
	cmd.Flags().StringVar(&opts.web.addr, "http", "", "also serve the dashboard on `ADDR` (alone: a free port on loopback)")
	cmd.Flags().Lookup("http").NoOptDefVal = serve.DefaultHTTP
	cmd.Flags().StringArrayVar(&opts.web.hosts, "host", nil, "with --http: one more machine (ssh `DEST`) on the dashboard; repeatable")
	retention = retentionFlag(cmd, f.getenv)
	addBusFlags(cmd, &bus, true)
	f.flags.add(cmd)
	cmd.AddCommand(newServeStatusCmd(f), newServeStopCmd(f))
	return cmd
}

// checkServeFlags checks the values of serve's flags that the service
// reads only once it runs, so that a typo is a usage error (exit 2) before
// anything starts, a running service's lock included: --http's address
// (checkHTTPAddr), each --host, --print-unit's kind, --node's name.
func checkServeFlags(cmd *cobra.Command, web webFlags, printUnit string, bus busFlags) error {
	fl := cmd.Flags()
	if fl.Changed("http") {
		if err := checkHTTPAddr(web.addr); err != nil {
			return usageError{err}
		}
	}
	if _, err := parseHosts(web.hosts, true); err != nil {
		return err
	}
	if fl.Changed("print-unit") && printUnit != "systemd" && printUnit != "launchd" {
		return usageError{fmt.Errorf("--print-unit %q: want systemd or launchd", printUnit)}
	}
	if fl.Changed("node") {
		if _, err := domain.ParseNode(bus.node); err != nil {
			return usageError{fmt.Errorf("--node: %w", err)}
		}
	}
	return nil
}

// checkHTTPAddr checks serve --http's ADDR as net.Listen takes it:
// HOST:PORT, HOST empty (every interface), an IP address or a host name,
// PORT a number from 0 to 65535 (0: a free one) or a service name.
func checkHTTPAddr(addr string) error {
	want := "want HOST:PORT, such as 127.0.0.1:8080 (--http alone: a free port on loopback)"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: %s", addr, want)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--http %q: port %q is not a port from 0 to 65535; %s", addr, port, want)
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil && !hostName(host) {
		return fmt.Errorf("--http %q: %q is neither an IP address nor a host name; %s", addr, host, want)
	}
	return nil
}

// hostName reports whether s is a host name by RFC 1123's syntax: dot-
// separated labels of letters, digits and '-', none starting or ending
// with '-', at most 63 characters each and 253 in all.
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// runServe runs peerctl serve in the foreground with this command's
// settings (its harness flags) as the dashboard's, and the command line's
// listing for the dashboard's machines, joining the fleet's bus when one
// is configured (opts.join); finished messages are kept for
// opts.retention (0: every one).
func runServe(ctx context.Context, opts *serveOptions) error {
	p, err := serve.PathsFor(opts.getenv)
	if err != nil {
		return err
	}
	extra, err := parseHosts(opts.web.hosts, true)
	if err != nil {
		return err
	}
	set, err := opts.serve().settings(false)
	if err != nil {
		return err
	}
	join, fleet, err := opts.join(p.StateDir)
	if err != nil {
		return err
	}
	w := webListing{nodes: opts.nodes, getenv: opts.getenv, version: opts.version.Version, extra: extra, slots: make(chan struct{}, app.MaxParallelNodes)}
	return serve.Run(ctx, serve.Options{Paths: p, Store: opts.store, Log: opts.io.errOut, Getenv: opts.getenv, Environ: opts.environ, Settings: set,
		Version: opts.version.Version, Build: opts.version.short(), IdleExit: opts.idleExit, Retention: opts.retention, HTTP: opts.web.addr, Machines: w.machines, Sessions: w.sessions,
		Join: join, Fleet: fleet, Activity: opts.activity, Bus: opts.busLink()})
}

// printServeUnit prints on w a service definition that runs peerctl
// serve (executable) with --idle-exit=0 in this shell's environment
// (unitEnv of getenv): a systemd --user unit or a launchd LaunchAgent plist.
func printServeUnit(w io.Writer, executable func() (string, error), getenv func(string) string, kind string) error {
	exe, err := executable()
	if err != nil {
		return fmt.Errorf("find peerctl: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	switch kind {
	case "systemd":
		fmt.Fprintf(w, `# peerctl serve as a systemd --user service:
#   peerctl serve --print-unit=systemd > ~/.config/systemd/user/peerctl.service
#   systemctl --user daemon-reload && systemctl --user enable --now peerctl
[Unit]
Description=peerctl serve: durable outbox and warm courier for coding-agent sessions

[Service]
ExecStart=%s serve --idle-exit=0
Restart=on-failure
RestartSec=2
%s
[Install]
WantedBy=default.target
`, exe, systemdEnv(unitEnv(getenv)))
	case "launchd":
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<!-- peerctl serve as a LaunchAgent:
       peerctl serve --print-unit=launchd > ~/Library/LaunchAgents/dev.peerctl.serve.plist
       launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/dev.peerctl.serve.plist -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.peerctl.serve</string>
  <key>ProgramArguments</key><array><string>%s</string><string>serve</string><string>--idle-exit=0</string></array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
%s</dict>
</plist>
`, xmlEscape(exe), launchdEnv(unitEnv(getenv)))
	default:
		return usageError{fmt.Errorf("--print-unit %q: want systemd or launchd", kind)}
	}
	return nil
}

// xmlEscape is s as XML character data (a launchd plist's <string>), as
// encoding/xml's EscapeText writes it: & < > " ' as references, tab,
// newline and carriage return as character references (which no parser
// normalises), and what XML 1.0 cannot hold (the other control
// characters, U+FFFE, U+FFFF, bytes that are not UTF-8) as U+FFFD.
// encoding/xml itself is not linked for it: its package initialisation
// would cost every command (docs/PERFORMANCE.md), and html.EscapeString
// leaves in the control characters a plist cannot hold.
func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		case '\t':
			b.WriteString("&#x9;")
		case '\n':
			b.WriteString("&#xA;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			if r < ' ' || r == 0xFFFE || r == 0xFFFF {
				r = utf8.RuneError
			}
			b.WriteRune(r) // a byte that is not UTF-8 is utf8.RuneError already
		}
	}
	return b.String()
}
