package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// completionTimeout bounds the registry read behind one TAB press.
const completionTimeout = 2 * time.Second

// completionOptions are completion's request: the shell, the command
// tree, and where the script goes.
type completionOptions struct {
	io    *iostreams
	root  *cobra.Command
	shell string
}

func newCompletionCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script (names and ids complete too)",
		Long:  helpLong(`Print the completion script for your shell; send and show complete live session names and ids, the outbox commands its ids`, "completion"),
		Example: `  source <(peerctl completion bash)   # bash needs the bash-completion package
  peerctl completion zsh > "${fpath[1]}/_peerctl"
  peerctl completion fish | source`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("completion needs one shell: bash, zsh, fish or powershell")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompletion(&completionOptions{io: f.io, root: cmd.Root(), shell: args[0]})
		},
	}
}

// runCompletion prints opts.shell's completion script of opts.root.
func runCompletion(opts *completionOptions) error {
	root, out := opts.root, opts.io.out
	switch opts.shell {
	case "bash":
		return root.GenBashCompletionV2(out, true)
	case "zsh":
		return root.GenZshCompletion(out)
	case "fish":
		return root.GenFishCompletion(out, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(out)
	default:
		return usageError{fmt.Errorf("unknown shell %q: want bash, zsh, fish or powershell", opts.shell)}
	}
}

// completeLiveSessions is the ValidArgsFunction of send and show: for the
// first argument it offers every live session's id (described by name and
// cwd) and every name that belongs to one live session only (described by
// cwd and id), filtered by the typed prefix. Stale, reused, foreign and other
// non-live records are never offered. Errors offer nothing. service
// builds the use cases (factory.service).
func completeLiveSessions(service func(options, ...any) (*app.Service, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		svc, err := service(options{readOnly: true})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		parent := cmd.Context()
		if parent == nil {
			parent = context.Background()
		}
		ctx, cancel := context.WithTimeout(parent, completionTimeout)
		defer cancel()
		l, err := svc.List(ctx, true)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		return liveCompletions(l.Entries, toComplete, cmd.Name() == "send"), cobra.ShellCompDirectiveNoFileComp
	}
}

// liveCompletions offers the live sessions among entries (a full registry
// read: the non-live records decide whether a name resolves). A name is
// offered only when send could use it: domain.Resolve resolves it to that
// session (not ambiguous with another session, an id prefix or a foreign
// record) and it does not start with "cc-peer:" (read as an endpoint).
// forSend offers only what send accepts: not a live session that cannot
// receive messages (no socket, say), nor an id send refuses (one that two
// live records carry, say).
func liveCompletions(entries []domain.Entry, prefix string, forSend bool) []cobra.Completion {
	var out []cobra.Completion
	for _, e := range entries {
		if !e.Live() || forSend && !e.Addressable {
			continue
		}
		r := e.Record
		if r.Name != "" && completable(r.Name) && strings.HasPrefix(r.Name, prefix) && resolvesTo(entries, r.Name, r) {
			out = append(out, cobra.CompletionWithDesc(r.Name, describe(r.Cwd, "session "+short(r.SessionID))))
		}
		if r.SessionID != "" && completable(r.SessionID) && strings.HasPrefix(r.SessionID, prefix) &&
			(!forSend || resolvesTo(entries, r.SessionID, r)) {
			out = append(out, cobra.CompletionWithDesc(r.SessionID, describe(r.Name, r.Cwd)))
		}
	}
	return out
}

// resolvesTo reports whether send's address (a name or id) reaches r's
// session under the identity rule.
func resolvesTo(entries []domain.Entry, name string, r domain.Record) bool {
	if domain.IsEndpoint(name) {
		return false
	}
	s, err := domain.Resolve(entries, name)
	return err == nil && s.ID() == r.SessionID && s.PID() == r.PID
}

// completable rejects values the completion protocol cannot carry (one
// completion per line, a tab before the description) and anything a
// terminal would not show as itself: every rune that is not
// strconv.IsPrint (C0 and C1 controls, bidi overrides such as U+202E, line
// and paragraph separators U+2028/U+2029) and invalid UTF-8.
func completable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) })
}

func describe(a, b string) string {
	parts := make([]string, 0, 2)
	for _, p := range []string{a, b} {
		if p != "" && completable(p) {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "  ")
}

func short(id string) string { return id[:min(8, len(id))] }

// completeOutboxIDs is the ValidArgsFunction of outbox show, cancel, retry,
// approve and deny: the ids of the outbox's messages, newest first, each
// described by its state and target (approve and deny: the held ones
// only), filtered by the typed prefix; never file names. The outbox is
// read read-only, here when this program has the store, else by peerctl-mcp
// running this same completion (runWithStore); with no outbox, no
// peerctl-mcp or an error, nothing is offered.
func completeOutboxIDs(f *factory, opts *outboxOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if !execReplaces && f.store == nil {
			// Windows: peerctl-mcp would run as a child, and cobra would
			// print its own directive after the child's.
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if ran, err := f.runWithStore("peerctl outbox "+cmd.Name(), storeToRead); ran {
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		parent := cmd.Context()
		if parent == nil {
			parent = context.Background()
		}
		ctx, cancel := context.WithTimeout(parent, completionTimeout)
		defer cancel()
		st, absent, err := opts.open(ctx)
		if err != nil || absent {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer func() { _ = st.Close() }()
		var filter ports.OutboxFilter
		if cmd.Name() == "approve" || cmd.Name() == "deny" {
			filter.States = []domain.OutboxState{domain.OutboxAwaitingApproval}
		}
		msgs, err := st.List(ctx, filter)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, m := range msgs {
			if id := strconv.FormatInt(m.ID, 10); strings.HasPrefix(id, toComplete) {
				out = append(out, cobra.CompletionWithDesc(id, describe(m.State.String(), m.Address)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
