package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// sessionJSON is one object of `list --json` and of `show --json`. Field
// names are camelCase and stable (docs/OUTPUT.md).
type sessionJSON struct {
	// Host is the machine (--host DEST) the session runs on; "" for this one.
	Host          string   `json:"host"`
	Harness       string   `json:"harness"` // the harness's word (domain.Harness)
	SessionID     string   `json:"sessionId"`
	PID           int      `json:"pid"`
	Name          string   `json:"name"`
	NameSource    string   `json:"nameSource"`
	Cwd           string   `json:"cwd"`
	Status        string   `json:"status"`
	Kind          string   `json:"kind"`
	Version       string   `json:"version"`
	StartedAt     string   `json:"startedAt"` // RFC 3339, "" when unknown
	SocketPath    string   `json:"socketPath"`
	Endpoint      string   `json:"endpoint"`
	Addressable   bool     `json:"addressable"`
	Unaddressable string   `json:"unaddressable,omitempty"`
	Verdict       string   `json:"verdict"`
	Reason        string   `json:"reason"`
	File          string   `json:"file"`
	Unchecked     []string `json:"unchecked,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

func toJSON(e domain.Entry) sessionJSON {
	r := e.Record
	return sessionJSON{
		Harness: r.Harness.String(), SessionID: r.SessionID, PID: r.PID, Name: r.Name, NameSource: r.NameSource, Cwd: r.Cwd,
		Status: r.Status.String(), Kind: r.Kind, Version: r.Version, StartedAt: rfc3339(r.StartedAt),
		SocketPath: r.SocketPath, Endpoint: e.Endpoint().String(), Addressable: e.Addressable,
		Unaddressable: e.Unaddressable, Verdict: e.Verdict.String(), Reason: e.Reason, File: r.File,
		Unchecked: e.Unchecked, Warnings: r.Warnings,
	}
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (c *cli) listCmd() *cobra.Command {
	var all, asJSON, wide, allHosts bool
	var harness string
	var hosts []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the live sessions of every harness (with --all, every record and its verdict)",
		Long:  helpLong(`List the live sessions of every harness (with --all every record and its verdict)`, "list"),
		Example: `  peerctl list
  peerctl list --json | jq -r '.[] | select(.addressable) | .endpoint'
  peerctl list --all
  peerctl list --host . --host dev-box --host me@build-3   # this machine and two others, merged
  peerctl list --hosts               # this machine and every host of peerctl hosts
  peerctl list --harness qwen-code --json | jq -r '.[] | select(.addressable) | .endpoint'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var only []domain.Harness
			if harness != "" {
				h, err := domain.ParseHarness(harness)
				if err != nil {
					return usageError{fmt.Errorf("--harness: %w", err)}
				}
				only = append(only, h)
			}
			dests, err := parseHosts(hosts, true)
			if err != nil {
				return err
			}
			c.started()
			c.jsonOut = asJSON
			if allHosts {
				// The file's hosts were checked when it was read.
				more, err := c.configuredHosts()
				if err != nil {
					return err
				}
				if dests, err = parseHosts(append(append([]string{localHost}, more...), hosts...), true); err != nil {
					return err
				}
			}
			if len(dests) > 0 {
				return c.listHosts(cmd.Context(), dests, listFlags{all: all, wide: wide, asJSON: asJSON, harness: harness, only: only})
			}
			svc, err := c.service(options{readOnly: true, only: only})
			if err != nil {
				return err
			}
			l, err := svc.List(cmd.Context(), all)
			if err != nil {
				return err
			}
			ids := sessionIDs(l.Entries, wide)
			l.Entries = app.FilterHarness(l.Entries, only...)
			c.warnUnread(l.Unread)
			c.warnRead(l.Warnings)
			if l.Missing && len(l.Entries) == 0 && (len(only) == 0 || slices.Contains(only, l.DirHarness)) {
				fmt.Fprintf(c.stderr, "peerctl: note: %s\n", app.MissingFolderNote(l.Dir))
			}
			if asJSON {
				out := make([]sessionJSON, 0, len(l.Entries))
				for _, e := range l.Entries {
					out = append(out, toJSON(e))
				}
				err = c.writeJSON(out)
			} else {
				err = c.printTable(l, all, ids)
			}
			if err == nil && len(l.UnreadIn(only...)) > 0 {
				// What could be read is printed; the exit says it is not all.
				return errPartial
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "show every record (each *.json file) with its verdict and reason; the *.key files beside them are never shown or opened")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (fields: docs/OUTPUT.md)")
	cmd.Flags().BoolVar(&wide, "wide", false, "show full session ids (the table shows each id by its shortest unique prefix of 8+ characters, which send and show take)")
	cmd.Flags().StringVar(&harness, "harness", "", "list one harness only: "+harnessWords(" or ")+" (default: all)")
	_ = cmd.RegisterFlagCompletionFunc("harness", cobra.FixedCompletions(harnessCompletions(), cobra.ShellCompDirectiveNoFileComp))
	addHostFlag(cmd, &hosts, true)
	cmd.Flags().BoolVar(&allHosts, "hosts", false, "list this machine and every host of the hosts file (peerctl hosts list), merged")
	return cmd
}

// sessionIDs maps each session id of a listing to what the table shows:
// with wide the id itself, else its shortest unique prefix among every
// record read (domain.ShortIDs). --harness reads that harness's registry
// alone, so its prefixes are unique among its records: send and show
// refuse a prefix another harness's session shares (never a guess).
func sessionIDs(entries []domain.Entry, wide bool) map[string]string {
	ids := make(map[string]string, len(entries))
	short := domain.ShortIDs(entries)
	for i, e := range entries {
		ids[e.Record.SessionID] = e.Record.SessionID
		if !wide {
			ids[e.Record.SessionID] = short[i]
		}
	}
	return ids
}

// errPartial ends a command with exit code 1 after it printed what it
// could: a harness it was asked about could not be read (warnUnread said
// which).
var errPartial = silentError{code: exitError}

// warnRead prints the registries' warnings about a read that left
// nothing out (app.Listing.Warnings), on stderr.
func (c *cli) warnRead(ws []string) {
	for _, w := range ws {
		fmt.Fprintf(c.stderr, "peerctl: warning: %s\n", safe(w))
	}
}

// warnUnread says, on stderr, which harnesses' registries could not be
// read: their sessions are missing from what follows.
func (c *cli) warnUnread(us []ports.Unread) {
	for _, u := range us {
		fmt.Fprintf(c.stderr, "peerctl: warning: %s: registry not read, its sessions are left out: %s\n", u.Harness, safe(u.Err.Error()))
	}
}

// printTable prints a listing for people; ids maps each session id to the
// form shown (sessionIDs).
func (c *cli) printTable(l app.Listing, all bool, ids map[string]string) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	if all {
		fmt.Fprintln(tw, "VERDICT\tHARNESS\tNAME\tSESSION\tPID\tFILE\tREASON")
		for _, e := range l.Entries {
			reason := e.Reason
			if e.Live() && !e.Addressable {
				reason = "not addressable: " + e.Unaddressable
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Verdict, e.Record.Harness, cut(cell(e.Record.Name), widthName), cut(cell(ids[e.Record.SessionID]), widthID),
				e.Record.PID, cut(cell(e.Record.File), widthName), cut(cell(reason), widthText))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "NAME\tHARNESS\tSESSION\tPID\tSTATUS\tAGE\tCWD")
	now := time.Now()
	for _, e := range l.Entries {
		r := e.Record
		status := r.Status.String()
		if !e.Addressable {
			status += " (not addressable)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", cut(cell(r.Name), widthName), r.Harness, cut(cell(ids[r.SessionID]), widthID), r.PID, status, age(now, r.StartedAt), cut(cell(r.Cwd), widthText))
	}
	return tw.Flush()
}

// cell makes a value safe for one table cell: control characters (which
// could move the cursor or fake rows) and bytes that are not UTF-8 (a lone
// 0x9b is a CSI to some terminals) are shown as escapes.
// The widest a table cell gets, in characters (after safe's escapes): a
// name or file name, a session id (a UUID is 36), a reason or a folder.
// A longer value is cut with "…" by cut; `show` prints it whole.
const (
	widthName = 48
	widthID   = 40
	widthText = 120
)

// cut shortens s to at most n characters, the last one "…", so that one
// long value (a 200 KB name) cannot pad every row of its table.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

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
func safe(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

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

// harnessWords quotes every harness's word (domain.Harnesses), joined by sep.
func harnessWords(sep string) string {
	words := make([]string, 0, len(domain.Harnesses()))
	for _, h := range domain.Harnesses() {
		words = append(words, strconv.Quote(h.String()))
	}
	return strings.Join(words, sep)
}

func harnessCompletions() []cobra.Completion {
	var out []cobra.Completion
	for _, h := range domain.Harnesses() {
		out = append(out, h.String())
	}
	return out
}
