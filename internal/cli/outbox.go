package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// shownTime is t as the outbox's table and show print it for people: UTC,
// RFC 3339 to the second ("-" for the zero time). --json keeps wire.RFC3339.
func shownTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// shownStamp is a wire.RFC3339 stamp (a message document's) as shownTime
// prints it; "" stays "", and a stamp that does not parse is kept as it is.
func shownStamp(stamp string) string {
	t, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return stamp
	}
	return shownTime(t)
}

// retentionEnv sets how long serve keeps a finished message when
// --retention is not given (a Go duration: 720h; 0 keeps every one).
const retentionEnv = "PEERCTL_OUTBOX_RETENTION"

// retentionFlag adds serve's --retention to cmd; the function it returns
// gives the retention: the flag, else $PEERCTL_OUTBOX_RETENTION, else
// app.DefaultRetention. A negative or unreadable one is a usage error.
func retentionFlag(cmd *cobra.Command, getenv func(string) string) func() (time.Duration, error) {
	var d time.Duration
	cmd.Flags().DurationVar(&d, "retention", app.DefaultRetention, "delete finished messages after this long (0: never)")
	return func() (time.Duration, error) {
		name, v := "--retention", ""
		if !cmd.Flags().Changed("retention") {
			if name, v = retentionEnv, getenv(retentionEnv); v == "" {
				return app.DefaultRetention, nil
			}
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				return 0, usageError{fmt.Errorf("%s=%s: want a duration such as 720h, or 0 to keep every message", retentionEnv, safe(v))}
			}
		}
		if d < 0 {
			return 0, usageError{fmt.Errorf("%s %s: want a duration such as 720h, or 0 to keep every message", name, d)}
		}
		return d, nil
	}
}

// outboxOptions are the outbox commands' requests and what they need:
// the streams, the outbox to read, and the service that changes it.
type outboxOptions struct {
	io *iostreams
	// open opens the outbox for reading (openOutbox).
	open  func(ctx context.Context) (st wiring.OutboxReader, absent bool, err error)
	serve func() *serveClient
	// by is who approves or denies a held message: the command line, and
	// the session it runs in (by process ancestry).
	by func(ctx context.Context) domain.Sender
	// filter is list's; id and op (cancel, retry, approve, deny) show's
	// and the changes'.
	filter ports.OutboxFilter
	id     int64
	op     string
	json   bool
}

func newOutboxCmd(f *factory) *cobra.Command {
	opts := &outboxOptions{io: f.io, serve: f.serveClient,
		open: func(ctx context.Context) (wiring.OutboxReader, bool, error) {
			return openOutbox(ctx, f.getenv, f.store)
		},
		by: func(ctx context.Context) domain.Sender {
			if f.entrance == domain.EntranceUnknown {
				f.entrance = domain.EntranceCLI // with this process: its session found by ancestry
			}
			return f.who(ctx)
		}}
	var (
		states []string
		target string
		limit  int
	)
	list := func(cmd *cobra.Command, _ []string) error {
		filter := ports.OutboxFilter{Target: target, Limit: limit}
		for _, w := range states {
			for _, one := range strings.Split(w, ",") {
				st, err := domain.ParseOutboxState(strings.TrimSpace(one))
				if err != nil {
					return usageError{fmt.Errorf("--state %q: want one of %s", one, outboxStateWords())}
				}
				filter.States = append(filter.States, st)
			}
		}
		if limit < 0 {
			return usageError{fmt.Errorf("--limit %d: want 0 (all) or more", limit)}
		}
		opts.filter = filter
		f.started()
		if ran, err := f.runWithStore("peerctl outbox", storeToRead); ran {
			return err
		}
		f.io.jsonOut = opts.json
		return runOutboxList(cmd.Context(), opts)
	}
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "The durable messages: list, show, cancel, retry, approve, deny",
		Long:  helpLong("List the messages send --durable left in peerctl serve's outbox, newest first, with their state", "outbox"),
		Example: `  peerctl outbox
  peerctl outbox --state stored,outcome_unknown --target reviewer
  peerctl outbox show 17 --jq .history
  peerctl outbox cancel 17
  peerctl outbox retry 18     # outcome_unknown, checked that it did not arrive
  peerctl outbox approve 19   # a message the trust policy held`,
		Args: noArgs,
		RunE: list,
	}
	addListFlags := func(cmd *cobra.Command) {
		cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON on stdout")
		cmd.Flags().StringSliceVar(&states, "state", nil, "only messages in these states: "+outboxStateWords())
		cmd.Flags().StringVar(&target, "target", "", "only messages to this address (as given to send) or session id")
		cmd.Flags().IntVar(&limit, "limit", 0, "at most this many, newest first (0: all)")
	}
	addListFlags(cmd)
	listCmd := &cobra.Command{Use: "list", Short: "List the durable messages (the default)", Args: noArgs, RunE: list,
		Long: helpLong("List the messages in the outbox, newest first; peerctl outbox alone does the same", "outbox"),
		Example: `  peerctl outbox list
  peerctl outbox list --state stored --json
  peerctl outbox list --target reviewer --limit 5`}
	addListFlags(listCmd)
	show := &cobra.Command{
		Use: "show ID", Short: "Show one message and its history", Args: oneID,
		Long: helpLong("Show one message of the outbox and every change in its history, with its time and reason", "outbox"),
		Example: `  peerctl outbox show 17
  peerctl outbox show 17 --jq .state
  peerctl outbox show 17 --jq .history`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id, _ = strconv.ParseInt(args[0], 10, 64)
			f.started()
			if ran, err := f.runWithStore("peerctl outbox show", storeToRead); ran {
				return err
			}
			f.io.jsonOut = opts.json
			return runOutboxShow(cmd.Context(), opts)
		},
	}
	show.ValidArgsFunction = completeOutboxIDs(f, opts)
	show.Flags().BoolVar(&opts.json, "json", false, "print JSON on stdout")
	change := func(use, short, long, example string) *cobra.Command {
		cmd := &cobra.Command{
			Use: use + " ID", Short: short, Args: oneID, Example: example, Long: helpLong(long, "outbox"),
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.id, _ = strconv.ParseInt(args[0], 10, 64)
				opts.op = use
				f.started()
				if ran, err := f.runWithStore("peerctl outbox "+use, storeToRead); ran {
					return err
				}
				f.io.jsonOut = opts.json
				return runOutboxChange(cmd.Context(), opts)
			},
		}
		cmd.ValidArgsFunction = completeOutboxIDs(f, opts)
		cmd.Flags().BoolVar(&opts.json, "json", false, "print the message as JSON on stdout")
		return cmd
	}
	cancel := change("cancel", "Take back a stored message before it is delivered",
		"Take back a stored message before it is delivered (through peerctl serve, the outbox's one writer). "+
			"One for nats:NODE already on the fleet's bus (transport bus) is that node's to take back: cancel refuses it "+
			"(wrong_state) and says how to cancel it there (peerctl outbox cancel of the message keyed nats:<this node>:KEY); "+
			"its receipts then bring the node's word back here",
		"  peerctl outbox cancel 17\n  peerctl outbox cancel --json 17\n  peerctl outbox --state stored --jq '.[].id' | xargs -n1 peerctl outbox cancel")
	retry := change("retry", "Try a message again now (outcome_unknown, expired, refused, cancelled or stored)",
		"Make a message due now: an outcome_unknown one after checking it did not arrive, an expired one with its TTL renewed. "+
			"A message for nats:NODE that ended there (refused, expired, outcome_unknown) is posted to that node again and retried there, "+
			"once per retry (the same post given again is not a second retry; outcome_unknown is looked at there first); "+
			"one still waiting for its node (on the bus, or stored or held in its outbox) is refused, wrong_state, saying where it waits. "+
			"A message the session holds (held) is refused too: it may still release it, and a second copy would arrive twice; "+
			"peerctl serve follows it and makes it delivered once the session's transcript shows the text",
		"  peerctl outbox retry 18\n  peerctl outbox retry --json 18\n  peerctl outbox --state outcome_unknown\n  peerctl outbox show 18   # a nats: message: the node's chain after the retry")
	approve := change("approve", "Deliver a message the trust policy held (awaiting_approval)",
		"Approve a message a hold rule of the trust policy kept: it is delivered as a durable message, once (docs/POLICY.md)",
		"  peerctl outbox --state awaiting_approval\n  peerctl outbox show 19\n  peerctl outbox approve 19")
	deny := change("deny", "End a message the trust policy held, unsent (denied)",
		"Deny a message a hold rule of the trust policy kept: it ends denied and is never sent",
		"  peerctl outbox deny 19\n  peerctl outbox deny --json 19\n  peerctl outbox --state awaiting_approval --jq '.[].id' | \\\n    xargs -n1 peerctl outbox deny")
	cmd.AddCommand(listCmd, show, cancel, retry, approve, deny)
	return cmd
}

func oneID(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageError{fmt.Errorf("want one message ID, got %s", domain.Count(len(args), "argument"))}
	}
	if id, err := strconv.ParseInt(args[0], 10, 64); err != nil || id < 1 {
		return usageError{fmt.Errorf("message ID %q: want a number from 1 (peerctl outbox lists them)", args[0])}
	}
	return nil
}

func outboxStateWords() string {
	var w []string
	for _, s := range domain.OutboxStates() {
		w = append(w, s.String())
	}
	return strings.Join(w, ", ")
}

// openOutbox opens the outbox for reading with store; absent is true when
// there is no outbox file yet (nothing was ever stored). getenv finds the
// state folder. Without a store (peerctl, whose commands run as
// peerctl-mcp when there is an outbox: runWithStore) every outbox is
// absent.
func openOutbox(ctx context.Context, getenv func(string) string, store wiring.Store) (st wiring.OutboxReader, absent bool, err error) {
	p, err := serve.PathsFor(getenv)
	if err != nil {
		return nil, false, err
	}
	if store == nil {
		return nil, true, nil
	}
	st, err = store.OpenReadOnly(ctx, p.DB)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, outboxUnavailable(err)
	}
	return st, false, nil
}

// runOutboxList lists the messages opts.filter selects, newest first.
func runOutboxList(ctx context.Context, opts *outboxOptions) error {
	st, absent, err := opts.open(ctx)
	if err != nil {
		return err
	}
	var msgs []ports.OutboxMessage
	if !absent {
		defer func() { _ = st.Close() }()
		if msgs, err = st.List(ctx, opts.filter); err != nil {
			return outboxUnavailable(err)
		}
	}
	if opts.json {
		out := make([]wire.OutboxMessage, 0, len(msgs))
		for _, m := range msgs {
			out = append(out, wire.OutboxMessageOf(m, nil))
		}
		return opts.io.writeJSON(out)
	}
	if len(msgs) == 0 {
		if absent || len(opts.filter.States) == 0 && opts.filter.Target == "" {
			fmt.Fprintln(opts.io.errOut, "peerctl: the outbox is empty")
		} else {
			fmt.Fprintln(opts.io.errOut, "peerctl: no message in the outbox matches")
		}
		return nil
	}
	var tw table
	on := opts.io.colourOn(opts.io.out)
	tw.add("ID", paint(on, colourNone, "STATE"), "TARGET", "TRIES", "UPDATED", "REASON")
	for _, m := range msgs {
		tw.add(strconv.FormatInt(m.ID, 10), paint(on, stateColour(m.State.String()), m.State.String()), cut(cell(outboxTarget(m.Address, m.Host)), widthName),
			strconv.Itoa(m.Tries), shownTime(m.Updated), cut(cell(m.Reason), widthText))
	}
	tw.fit(opts.io.tableWidth(), 2, 5) // TARGET and REASON
	return tw.write(opts.io.out)
}

// runOutboxShow shows message opts.id and its history.
func runOutboxShow(ctx context.Context, opts *outboxOptions) error {
	id := opts.id
	st, absent, err := opts.open(ctx)
	if err != nil {
		return err
	}
	if absent {
		return noSuchMessage(id)
	}
	defer func() { _ = st.Close() }()
	m, hist, err := st.Get(ctx, id)
	if errors.Is(err, ports.ErrNoMessage) {
		return noSuchMessage(id)
	}
	if err != nil {
		return outboxUnavailable(err)
	}
	if opts.json {
		return opts.io.writeJSON(wire.OutboxMessageOf(m, hist))
	}
	on := opts.io.colourOn(opts.io.out)
	printOutboxMessage(opts.io.out, wire.OutboxMessageOf(m, nil), on, m.State == domain.OutboxStored && !opts.serve().running(ctx))
	fmt.Fprintln(opts.io.out, "history:")
	for _, e := range hist {
		again := ""
		if e.Count > 1 {
			again = fmt.Sprintf(" (%d times, the last at %s)", e.Count, shownTime(e.Last))
		}
		state := e.State.String()
		row := fmt.Sprintf("  %s  %s%*s %s%s", shownTime(e.At), paint(on, stateColour(state), state), max(0, 16-len(state)), "", safe(e.Reason), again)
		fmt.Fprintln(opts.io.out, strings.TrimRight(row, " ")) // no reason: nothing after the state
	}
	return nil
}

// noSuchMessage is the not_found refusal of an id the outbox does not hold
// (the service's word for it too).
func noSuchMessage(id int64) error {
	return domain.Refuse(domain.ReasonNotFound, "message %d is not in the outbox (peerctl outbox lists them)", id)
}

// outboxTarget is a message's target as the outbox's tables, watch and
// the service's log show it (app.OutboxTarget).
var outboxTarget = app.OutboxTarget

// triesText is a message's tries for people, with how many of them
// (handed, its part: the JSON's attempts) began a hand-over: "1 (it began
// a hand-over to the session)", "3 (1 of them began ...)". The table's
// TRIES is the same count.
func triesText(tries, handed int) string {
	switch {
	case tries == 0:
		return "0 (not tried yet)"
	case tries == 1 && handed == 1:
		return "1 (it began a hand-over to the session)"
	case tries == 1:
		return "1 (it began no hand-over)"
	case handed == 0:
		return fmt.Sprintf("%d (none of them began a hand-over)", tries)
	}
	return fmt.Sprintf("%d (%d of them began a hand-over to the session)", tries, handed)
}

// printOutboxMessage prints message j for people, one row a field; with
// colour, its state in its colour (stateColour); idle: no service runs to
// try it, so its next try is when one does, not the time it was due
// (which may be past).
func printOutboxMessage(w io.Writer, j wire.OutboxMessage, colour, idle bool) {
	sender := ""
	if j.Sender != nil {
		sender = j.Sender.As
	}
	next := shownStamp(j.NextAttemptAt)
	if idle {
		next = "when peerctl serve runs: messages wait for the service; peerctl serve, or any send --durable, starts it"
	}
	rows := [][2]string{{"id", strconv.FormatInt(j.ID, 10)}, {"state", j.State}, {"reason", j.Reason}, {"to", j.Address}, {"sender", sender},
		{"rule", j.Rule}, {"approved by", j.ApprovedBy},
		{"host", j.Host}, {"session", j.SessionID}, {"key", j.Key}, {"created", shownStamp(j.CreatedAt)}, {"expires", shownStamp(j.ExpiresAt)}, {"next try", next},
		{"tries", triesText(j.Tries, j.Attempts)}, {"outcome", j.Outcome}, {"transport", j.Transport}, {"msg_id", j.MsgID}, {"transcript", j.Transcript},
		{"text", j.Text}}
	for _, r := range rows {
		if r[1] == "" {
			continue
		}
		v := safe(r[1])
		if r[0] == "state" {
			v = paint(colour, stateColour(r[1]), v)
		}
		fmt.Fprintf(w, "%-13s %s\n", r[0]+":", v)
	}
}

// runOutboxChange runs opts.op (cancel, retry, approve, deny) of message
// opts.id in the service. An approval or a denial names who made it
// (opts.by).
func runOutboxChange(ctx context.Context, opts *outboxOptions) error {
	// An id the outbox, read as show reads it, does not hold is refused
	// here, without starting the service for it.
	if st, absent, err := opts.open(ctx); err == nil {
		found := !absent
		if found {
			_, _, err = st.Get(ctx, opts.id)
			found = !errors.Is(err, ports.ErrNoMessage)
			_ = st.Close()
		}
		if !found {
			return noSuchMessage(opts.id)
		}
	}
	// Typing outbox retry is the user's confirmation: an outcome_unknown
	// message is looked at first, then sent again when it did not arrive.
	req := serve.Request{Op: opts.op, ID: opts.id, Confirmed: opts.op == "retry"}
	if opts.op == "approve" || opts.op == "deny" {
		req.By = wire.SenderOf(opts.by(ctx))
	}
	return opts.serve().outboxChange(ctx, req, opts.json)
}

// outboxChange runs req (cancel, retry, approve or deny of a message) in
// the service (the outbox's one writer), started on demand, unless
// PEERCTL_SERVE=off.
func (c *serveClient) outboxChange(ctx context.Context, req serve.Request, asJSON bool) error {
	if c.serveOff() {
		return outboxUnavailable(fmt.Errorf("changing the outbox needs peerctl serve, its one writer, and %s=off or this system has none", serveEnv))
	}
	conn, err := c.dialServe(ctx, true)
	if err != nil {
		return outboxUnavailable(err)
	}
	a, err := c.ask(ctx, conn, req)
	if errors.Is(err, errForwardUnsent) {
		return outboxUnavailable(err)
	} else if err != nil {
		return fmt.Errorf("the service did not answer: see peerctl outbox show %d", req.ID)
	}
	return c.answered(a, asJSON, false, nil)
}
