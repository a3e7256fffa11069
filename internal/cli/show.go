package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// showOptions are show's request and what it needs.
type showOptions struct {
	io   *iostreams
	node func(domain.Dest) (app.Node, error)
	// dest is the host, address the session there.
	dest    domain.Dest
	address string
	json    bool
	// explain puts each row's gloss under it (showGlosses).
	explain bool
}

func newShowCmd(f *factory) *cobra.Command {
	opts := &showOptions{io: f.io, node: f.node}
	var hosts []string
	cmd := &cobra.Command{
		Use:   "show SESSION",
		Short: "Show everything known about one session",
		Long:  helpLong(`Show one session: its record's fields, verdict, endpoint, socket and transcript path`, "show"),
		Example: `  peerctl show proj-89
  peerctl show 26df9a5b --json
  peerctl show --explain proj-89   # what each row means
  peerctl show 4652            # by pid, live or not
  peerctl show 8000.json       # a record by its file name
  peerctl show --host dev-box proj-89`,
		Args:        exactArgs(1),
		Annotations: map[string]string{signalsKey: signalsWhenRemote},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.explain && opts.json {
				return usageError{fmt.Errorf("--explain is for the text; --json's fields are explained in docs/OUTPUT.md")}
			}
			var err error
			if opts.dest, opts.address, err = oneHost(hosts, args[0]); err != nil {
				return err
			}
			if !opts.dest.IsLocal() {
				f.catchSignals(cmd) // ssh: what a signal must end
			}
			f.started()
			f.io.jsonOut = opts.json
			return runShow(cmd.Context(), opts)
		},
	}
	cmd.ValidArgsFunction = completeLiveSessions(f.service)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	cmd.Flags().BoolVar(&opts.explain, "explain", false, "say under each row what it means")
	addHostFlag(cmd, &hosts, false)
	return cmd
}

// runShow shows one session, here or on a host.
func runShow(ctx context.Context, opts *showOptions) error {
	node, err := opts.node(opts.dest)
	if err != nil {
		return err
	}
	j, err := node.Show(ctx, opts.address)
	if err != nil {
		return err
	}
	if opts.json {
		return opts.io.writeJSON(j)
	}
	return printDetail(opts.io.out, j, opts.explain, opts.io.colourOn(opts.io.out))
}

// printDetail prints one session for people, here or on a host; with
// explain, each row's gloss (showGlosses) under it; with colour, its
// verdict and status in their colours (stateColour).
func printDetail(w io.Writer, j wire.Show, explain, colour bool) error {
	var t table
	shown := func(k, v string) {
		t.add(k+":", v)
		g, ok := j.Glosses[k]
		if !ok {
			g = showGlosses[k]
		}
		if explain && g != "" {
			t.add("", "- "+g)
		}
	}
	row := func(k string, v any) { shown(k, cell(fmt.Sprint(v))) }
	state := func(k, v string) { shown(k, paint(colour, stateColour(v), cell(v))) }
	if j.Host != "" {
		row("host", j.Host)
	}
	state("verdict", j.Verdict)
	row("harness", j.Harness)
	if j.Reason != "" {
		row("reason", j.Reason)
	}
	row("name", j.Name)
	row("session", j.SessionID)
	row("pid", j.PID)
	status := domain.StatusText(j.Status, j.WaitingFor)
	if j.Status != "" && (j.Verdict == domain.VerdictStale.String() || j.Verdict == domain.VerdictReused.String()) {
		// The record's last word, not the session's now: its process has ended.
		shown("status", paint(colour, stateColour(status), cell(status))+" (as last recorded; the process has ended)")
	} else {
		state("status", status)
	}
	row("cwd", j.Cwd)
	row("kind", j.Kind)
	row("version", j.Version)
	row("started", j.StartedAt)
	row("updated", j.UpdatedAt)
	row("procStart", j.ProcStart)
	if j.ProcStartFt != "" {
		row("procStartFt", j.ProcStartFt+" (checked instead of procStart, as Claude Code does)")
	}
	row("pidDomain", j.PIDDomain)
	row("tmux", j.Tmux)
	row("peerProtocol", j.PeerProtocol)
	row("file", j.Path)
	row("addressable", j.Addressable)
	if j.Unaddressable != "" {
		row("why not", j.Unaddressable)
	}
	for _, n := range j.Notes {
		row("note", n)
	}
	row("endpoint", j.Endpoint)
	row("socket", j.SocketPath)
	if j.SocketNote != "" {
		row("socket on disk", j.SocketNote)
	}
	exists := "absent"
	if j.TranscriptExists {
		exists = "present"
	}
	if j.Transcript != "" {
		row("transcript", j.Transcript+" ("+exists+")")
	}
	if len(j.Unchecked) > 0 {
		row("not checked", strings.Join(j.Unchecked, "; "))
	}
	for _, w := range j.Warnings {
		row("warning", w)
	}
	return t.write(w)
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s needs %s, got %d", commandName(cmd), domain.Count(n, "argument"), len(args))}
		}
		return nil
	}
}
