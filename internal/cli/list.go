package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// listOptions are list's request and what it needs (gh's XOptions): the
// streams, the nodes of the hosts, and the flags as parsed.
type listOptions struct {
	io    *iostreams
	nodes func([]domain.Dest) ([]app.Node, error)
	// dests are the hosts to list (this machine alone when none and no fleet).
	dests []domain.Dest
	// fleet reads every node's presence (nil: no fleet): from a running
	// service's live view of the bus, else from the bus (wiring.Bus).
	fleet func(ctx context.Context, only []domain.Harness) app.NodeListing
	// fleetDoc, when set, is the fleet's sessions as --json prints them,
	// written by the service (serveClient.fleet): printed as it is when
	// the fleet is all that is listed, with --json and no --jq.
	fleetDoc []byte
	query    wire.ListQuery
	// json, wide: --json, --wide.
	json, wide bool
}

// newListCmd is `peerctl list`. wire.Session is one object of
// `list --json` and of `show --json`; field names are camelCase and
// stable (docs/OUTPUT.md).
func newListCmd(f *factory) *cobra.Command {
	opts := &listOptions{io: f.io, nodes: f.nodes}
	var all, allHosts, fleet bool
	var harness string
	var bus busFlags
	var hosts []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the live sessions of every harness (--all: every record)",
		Long:  helpLong(`List the live sessions of every harness (with --all every record and its verdict)`, "list"),
		Example: `  peerctl list
  peerctl list --jq '.[] | select(.addressable) | .endpoint'
  peerctl list --all
  peerctl list --host . --host dev-box --host me@build-3   # here and two more
  peerctl list --hosts             # here and every host of peerctl hosts
  peerctl list --fleet --nats nats://bus-1:4222   # every node on the bus`,
		Args:        noArgs,
		Annotations: map[string]string{signalsKey: signalsWhenRemote},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(hosts) > 0 || allHosts || fleet {
				f.catchSignals(cmd) // ssh, the bus: what a signal must end
			}
			opts.query.All = all
			if cmd.Flags().Changed("harness") {
				h, err := domain.ParseHarness(harness)
				if err != nil {
					return usageError{fmt.Errorf("--harness: %w", err)}
				}
				opts.query.Only = append(opts.query.Only, h)
			}
			var err error
			if opts.dests, err = parseHosts(hosts, true); err != nil {
				return err
			}
			settings, ok, err := busSettings(cmd, f.getenv, f.bus, bus, "peerctl list")
			switch {
			case err != nil:
				return err
			case fleet && all:
				return usageError{errors.New("--fleet lists live sessions only (a node publishes those): drop --all")}
			case fleet && !ok:
				return usageError{fmt.Errorf("--fleet: no bus: give --nats URL[,URL...] or set $%s", natsEnv)}
			case !fleet && cmd.Flags().Changed("nats") && !slices.ContainsFunc(opts.dests, isNode):
				return usageError{errors.New("--nats: give --fleet or --host nats:NODE too (list reads the bus only for those)")}
			case fleet:
				// Per-node credentials allow the replies' inbox of this
				// machine's node only.
				if settings.Node, err = f.nodeName(nil, busFlags{}); err != nil {
					return err
				}
				asDoc := opts.json && f.io.jq == nil && len(opts.query.Only) == 0 && len(opts.dests) == 0 && !allHosts
				if l, doc, ok := f.serveClient().fleet(cmd.Context(), settings.URLs, asDoc); ok {
					opts.fleetDoc = doc
					opts.fleet = func(_ context.Context, only []domain.Harness) app.NodeListing {
						return app.NodeListing{Listing: l.OfHarnesses(only)}
					}
					break
				}
				if f.bus == nil {
					return f.runWithBus("list --fleet")
				}
				// The whole read is bounded as a call over ssh is.
				fleetSettings := settings
				if fleetSettings.Timeout, err = f.hostTimeout(); err != nil {
					return err
				}
				opts.fleet = func(ctx context.Context, only []domain.Harness) app.NodeListing {
					return f.bus.Listing(ctx, fleetSettings, only)
				}
			}
			if ok {
				f.listNATS = &settings // --host nats:NODE's bus
			}
			f.started()
			f.io.jsonOut = opts.json
			if allHosts {
				// The file's hosts were checked when it was read.
				more, err := configuredHosts(f.getenv)
				if err != nil {
					return err
				}
				if opts.dests, err = parseHosts(append(append([]string{localHost}, more...), hosts...), true); err != nil {
					return err
				}
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "show every record (each *.json file) with its verdict and reason; the *.key files beside them are never shown or opened")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print a JSON array (fields: docs/OUTPUT.md)")
	cmd.Flags().BoolVar(&opts.wide, "wide", false, "show full session ids (the table shows each id by its shortest unique prefix of 8+ characters, which send and show take)")
	cmd.Flags().StringVar(&harness, "harness", "", "list one harness only: "+harnessWords(" or ")+" (default: all)")
	_ = cmd.RegisterFlagCompletionFunc("harness", cobra.FixedCompletions(harnessCompletions(), cobra.ShellCompDirectiveNoFileComp))
	addHostFlag(cmd, &hosts, true)
	cmd.Flags().BoolVar(&allHosts, "hosts", false, "list this machine and every host of the hosts file (peerctl hosts list), merged")
	cmd.Flags().BoolVar(&fleet, "fleet", false, "list every node's live sessions from the fleet's bus (host nats:NODE; docs/FLEET.md); with --host or --hosts, merged after them")
	addBusFlags(cmd, &bus, false)
	return cmd
}

// errPartial ends a command with exit code 1 after it printed what it
// could: a harness it was asked about could not be read (a node's note
// said which).
var errPartial = silentError{code: wire.ExitError}

// runList lists opts.dests through their nodes (app.ListNodes: at once,
// at most app.MaxParallelNodes at a time) and prints, in the order given,
// each node's notes and the sessions of every node that answered, one
// warning for each that did not, with a HOST column when more than one
// was asked. One node alone that failed ends the command as that failure
// (its exit code, its message once); otherwise the exit is 10 when a host
// could not be reached, else 1 when a listing is partial or a node
// failed. With a fleet, every node's presence on the bus (one read, after
// the hosts) is merged too: a bus that does not answer is host_unreachable.
func runList(ctx context.Context, opts *listOptions) error {
	dests, q := opts.dests, opts.query
	withHost := len(dests) > 1 || opts.fleet != nil
	if len(dests) == 0 && opts.fleet == nil {
		dests = []domain.Dest{{}}
	}
	nodes, err := opts.nodes(dests)
	if err != nil {
		return err
	}
	got := app.ListNodes(ctx, nodes, q)
	if opts.fleet != nil {
		got = append(got, opts.fleet(ctx, q.Only))
	}
	if len(got) == 1 && got[0].Err != nil {
		return got[0].Err
	}
	m := app.Merge(got)
	for _, n := range m.Notes {
		if n.Warning {
			fmt.Fprintf(opts.io.errOut, "peerctl: warning: %s: %s\n", app.Where(n.Host), safe(n.Text))
			continue
		}
		printNotes(opts.io.errOut, n.Host, []string{n.Text})
	}
	rows := m.Sessions
	switch {
	case opts.json && opts.fleetDoc != nil:
		_, err = opts.io.out.Write(opts.fleetDoc)
	case opts.json:
		err = opts.io.writeJSON(rows)
	case len(rows) == 0 && (m.NoRecord || q.All):
		// No record at all (with --all: none listed): no bare header; a
		// note said why (a folder that does not exist, a machine not
		// listed), else say so.
		if len(m.Notes) == 0 {
			fmt.Fprintln(opts.io.errOut, "peerctl: no session: no harness's registry holds a record")
		}
	case len(rows) == 0 && !q.All:
		// No bare header: say so, and where the records that are not live are.
		fmt.Fprintln(opts.io.errOut, "peerctl: no live session; peerctl list --all shows every record and why it is not live")
	default:
		err = printSessions(opts.io, rows, q.All, opts.wide, withHost)
	}
	switch {
	case err != nil:
		return err
	case m.Outcome == app.ListUnreachable:
		return silentError{code: wire.ExitHostUnreachable}
	case m.Outcome == app.ListPartial:
		return errPartial // what could be read is printed; the exit says it is not all
	}
	return nil
}

// printNotes prints a node's notes on w (stderr), escaped: "peerctl: NOTE"
// for this machine's, "peerctl: DEST: NOTE" for a host's.
func printNotes(w io.Writer, host domain.Dest, notes []string) {
	for _, n := range notes {
		if host.IsLocal() {
			fmt.Fprintf(w, "peerctl: %s\n", safe(n))
			continue
		}
		fmt.Fprintf(w, "peerctl: %s: %s\n", host, safe(clipText(n, 2000)))
	}
}

// printSessions prints a listing for people: NAME HARNESS SESSION PID
// STATUS AGE CWD, or with all VERDICT HARNESS NAME SESSION PID FILE
// REASON; with withHost a HOST column first. SESSION is each id's
// shortest unique prefix among its host's rows (domain.ShortIDs: what
// send and show there take), or the whole id with wide.
func printSessions(ios *iostreams, rows []wire.Session, all, wide, withHost bool) error {
	ids := make([]string, len(rows))
	byHost := map[string][]int{}
	for i, r := range rows {
		byHost[r.Host] = append(byHost[r.Host], i)
	}
	for _, idx := range byHost {
		entries := make([]domain.Entry, len(idx))
		for k, i := range idx {
			entries[k].Record.SessionID = rows[i].SessionID
		}
		for k, short := range domain.ShortIDs(entries) {
			ids[idx[k]] = short
		}
	}
	var tw table
	row := func(r *wire.Session, cells ...string) {
		switch {
		case !withHost:
		case r == nil:
			cells = append([]string{"HOST"}, cells...)
		case r.Host == "":
			cells = append([]string{localHost}, cells...)
		default:
			cells = append([]string{cut(cell(r.Host), widthName)}, cells...)
		}
		tw.add(cells...)
	}
	on := ios.colourOn(ios.out)
	// The columns cut to fit a terminal: the host, the name, the status
	// and the folder, or with all the name, the file and the reason.
	cuttable := []int{0, 4, 6}
	if all {
		cuttable = []int{2, 5, 6}
	}
	if withHost {
		for i := range cuttable {
			cuttable[i]++
		}
		cuttable = append(cuttable, 0)
	}
	if all {
		row(nil, paint(on, colourNone, "VERDICT"), "HARNESS", "NAME", "SESSION", "PID", "FILE", "REASON")
	} else {
		row(nil, "NAME", "HARNESS", "SESSION", "PID", paint(on, colourNone, "STATUS"), "AGE", "CWD")
	}
	now := time.Now()
	for i, r := range rows {
		id := ids[i]
		if wide {
			id = r.SessionID
		}
		if all {
			reason := r.Reason
			if r.Verdict == domain.VerdictLive.String() && !r.Addressable {
				reason = "not addressable: " + r.Unaddressable
			}
			row(&r, paint(on, stateColour(r.Verdict), cell(r.Verdict)), cell(r.Harness), cut(cell(r.Name), widthName), cut(cell(id), widthID),
				strconv.Itoa(r.PID), cut(cell(r.File), widthName), cut(cell(reason), widthText))
			continue
		}
		status := cut(cell(domain.StatusText(r.Status, r.WaitingFor)), widthName)
		if !r.Addressable {
			status += " (not addressable)"
		}
		started, _ := time.Parse(time.RFC3339Nano, r.StartedAt)
		row(&r, cut(cell(r.Name), widthName), cell(r.Harness), cut(cell(id), widthID), strconv.Itoa(r.PID),
			paint(on, stateColour(status), status), age(now, started), cut(cell(r.Cwd), widthText))
	}
	tw.fit(ios.tableWidth(), cuttable...)
	return tw.write(ios.out)
}

// cell makes a value safe for one table cell: control characters (which
// could move the cursor or fake rows) and bytes that are not UTF-8 (a lone
// 0x9b is a CSI to some terminals) are shown as escapes.
// The widest a table cell gets, in terminal columns (after safe's
// escapes): a name, file name or status, a session id (a UUID is 36), a
// reason or a folder. A longer value is cut with "…" by cut; `show`
// prints it whole.
const (
	widthName = 48
	widthID   = 40
	widthText = 120
)

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return safe(s)
}

// safe makes text from the registry (ids, names, paths, details that quote
// them) safe to print for people: unless every rune is printable (letters,
// marks, numbers, punctuation, symbols, the ASCII space), the text is shown
// Go-escaped, so no control sequence, newline, invisible or direction-
// changing character (U+200B, U+202E, U+2028, ...) or invalid UTF-8 reaches
// the terminal raw.
func safe(s string) string { return wire.Safe(s) }

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", commandName(cmd), args)}
	}
	return nil
}

// harnessWords quotes every harness's word (the plug-ins'), joined by sep.
func harnessWords(sep string) string {
	words := make([]string, 0, len(wiring.Plugins().Kinds()))
	for _, h := range wiring.Plugins().Kinds() {
		words = append(words, strconv.Quote(h.String()))
	}
	return strings.Join(words, sep)
}

func harnessCompletions() []cobra.Completion {
	var out []cobra.Completion
	for _, h := range wiring.Plugins().Kinds() {
		out = append(out, h.String())
	}
	return out
}
