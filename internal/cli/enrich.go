package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// enrichOptions are enrich's request and what it needs.
type enrichOptions struct {
	io   *iostreams
	node func(domain.Dest) (app.Node, error)
	dest domain.Dest
	ids  []string
	json bool
}

func newEnrichCmd(f *factory) *cobra.Command {
	opts := &enrichOptions{io: f.io, node: f.node}
	var hosts []string
	cmd := &cobra.Command{
		Use:   "enrich SESSION-ID...",
		Short: "Say which of these session ids are live, with endpoint and status",
		Long:  helpLong(`For each full session id given, print its live endpoint and status, or nothing when not live`, "enrich"),
		Example: `  peerctl enrich 3327af2a-a4a5-433e-b55c-1fb5f0a0ae29 \
    26df9a5b-0d4c-4c4e-9f0e-8a3a0d4b2f11
  ls ~/.claude/projects/*/ | sed -n 's/\.jsonl$//p' | \
    xargs peerctl enrich --json
  peerctl enrich 3327af2a-a4a5-433e-b55c-1fb5f0a0ae29 \
    --jq '.[] // empty | .live_endpoint'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("enrich needs at least one session id")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dests, err := parseHosts(hosts, false)
			if err != nil {
				return err
			}
			f.started()
			f.io.jsonOut = opts.json
			if len(dests) == 1 {
				opts.dest = dests[0]
			}
			opts.ids = args
			return runEnrich(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object keyed by session id")
	addHostFlag(cmd, &hosts, false)
	return cmd
}

// runEnrich says which of opts.ids are live, with endpoint and status.
func runEnrich(ctx context.Context, opts *enrichOptions) error {
	args := opts.ids
	node, err := opts.node(opts.dest)
	if err != nil {
		return err
	}
	live, err := node.Enrich(ctx, args)
	if err != nil {
		return err
	}
	if opts.json {
		out := make(map[string]any, len(args))
		for _, id := range args {
			if info, ok := live[id]; ok {
				out[id] = info
			} else {
				out[id] = nil
			}
		}
		return opts.io.writeJSON(out)
	}
	var t table
	t.add("SESSION", "LIVE", "STATUS", "ENDPOINT")
	for _, id := range args {
		info, ok := live[id]
		if !ok {
			t.add(cut(cell(id), widthID), "no", "-", "-")
			continue
		}
		t.add(cut(cell(id), widthID), "yes", info.Status, cell(info.Endpoint))
	}
	return t.write(opts.io.out)
}
