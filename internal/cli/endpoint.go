package cli

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
)

type endpointJSON struct {
	Endpoint string `json:"endpoint"`
	// Host is the machine of an ssh:v1: endpoint ("" for this one).
	Host    string `json:"host"`
	Harness string `json:"harness"`
	PID     int    `json:"pid"`
	Name    string `json:"name"`
	Socket  string `json:"socket"`
}

// endpointOptions are endpoint parse's and format's request.
type endpointOptions struct {
	io *iostreams
	// dest is the host an ssh:v1: endpoint names (parse).
	dest domain.Dest
	ep   domain.Endpoint
	json bool
	// parts prints the block instead of the endpoint alone (format).
	parts bool
}

func newEndpointCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoint",
		Short: "Parse or format session endpoints (" + endpointPrefixes() + ")",
		Long:  helpLong(`Parse or format an endpoint: `+endpointForms()+` (%25 is "%", %3A is ":")`, "endpoint-parse"),
		Example: `  peerctl endpoint parse 'cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock'
  peerctl endpoint format 5031 'build:main 50%' /tmp/cc-socks/5031.sock
  peerctl endpoint parse --json "$(peerctl list --jq '.[0].endpoint')"`,
	}
	parseOpts := &endpointOptions{io: f.io}
	parse := &cobra.Command{
		Use:   "parse ENDPOINT",
		Short: "Split an endpoint into host, harness, pid, name or id, and socket",
		Long:  helpLong(`Split any endpoint list prints (`+endpointPrefixes()+`, ssh:v1:<host>:<endpoint>) into its parts; nothing is read`, "endpoint-parse"),
		Example: `  peerctl endpoint parse 'cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock'
  peerctl endpoint parse --json \
    'cc-peer:v1:5031:build%3Amain 50%25 ünï:/tmp/cc-socks/5031.sock'
  peerctl list --jq '.[0].endpoint' | xargs peerctl endpoint parse`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, inner, remote, err := domain.SplitHostEndpoint(args[0])
			if !remote {
				inner = args[0]
			}
			ep, perr := domain.ParseEndpoint(inner)
			if err = cmp.Or(err, perr); err != nil {
				return usageError{err}
			}
			parseOpts.dest, parseOpts.ep = dest, ep
			return runEndpoint(parseOpts)
		},
	}
	parse.Flags().BoolVar(&parseOpts.json, "json", false, "print a JSON object")
	formatOpts := &endpointOptions{io: f.io}
	var harness string
	format := &cobra.Command{
		Use:   "format PID NAME SOCKET",
		Short: "Build an endpoint from its parts",
		Long:  helpLong(`Build an endpoint from PID, NAME (what the endpoint pins: `+endpointPins()+`) and SOCKET, in --harness's form, escaping % and : ; nothing is read`, "endpoint-format"),
		Example: `  peerctl endpoint format 4652 proj-89 /tmp/cc-socks/4652.sock
  ep=$(peerctl endpoint format 5031 'build:main 50%' /tmp/cc-socks/5031.sock)
  peerctl endpoint parse "$ep"
  peerctl endpoint format --parts 4652 proj-89 /tmp/cc-socks/4652.sock
  peerctl endpoint format --harness qwen-code \
    7310 4f1c2a9e-0d3b-4e55-9a61-2c7d8b0e6f13 /tmp/qwen-7310.sock`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := domain.HarnessClaudeCode
			if cmd.Flags().Changed("harness") {
				var err error
				if h, err = domain.ParseHarness(harness); err != nil {
					return usageError{fmt.Errorf("--harness: %w", err)}
				}
			}
			pid, err := strconv.Atoi(args[0])
			if err != nil {
				return usageError{fmt.Errorf("pid %q is not a number", args[0])}
			}
			if formatOpts.ep, err = domain.NewHarnessEndpoint(h, pid, args[1], args[2]); err != nil {
				return usageError{err}
			}
			if !formatOpts.json && !formatOpts.parts {
				fmt.Fprintln(f.io.out, formatOpts.ep.String())
				return nil
			}
			return runEndpoint(formatOpts)
		},
	}
	format.Flags().BoolVar(&formatOpts.json, "json", false, "print a JSON object")
	format.Flags().StringVar(&harness, "harness", "", "build this harness's form, by its rule for NAME (a Codex thread id is a UUID...): "+harnessWords(" or ")+" (default: claude-code)")
	_ = format.RegisterFlagCompletionFunc("harness", cobra.FixedCompletions(harnessCompletions(), cobra.ShellCompDirectiveNoFileComp))
	format.Flags().BoolVar(&formatOpts.parts, "parts", false, `print the "key: value" block (endpoint, pid, name, socket) instead of the endpoint alone`)
	cmd.AddCommand(parse, format)
	return cmd
}

// runEndpoint prints opts.ep's parts, on opts.dest.
func runEndpoint(opts *endpointOptions) error {
	dest, ep, out := opts.dest, opts.ep, opts.io.out
	full := domain.HostEndpoint(dest, ep.String())
	if opts.json {
		return opts.io.writeJSON(endpointJSON{Endpoint: full, Host: dest.String(), Harness: ep.Harness().String(), PID: ep.PID(), Name: ep.Name(), Socket: ep.Socket()})
	}
	fmt.Fprintf(out, "endpoint: %s\n", full)
	if !dest.IsLocal() {
		fmt.Fprintf(out, "host:     %s\n", cell(dest.String()))
	}
	fmt.Fprintf(out, "harness:  %s\npid:      %d\n%-9s %s\nsocket:   %s\n", ep.Harness(), ep.PID(), ep.Pins()+":", cell(ep.Name()), cell(ep.Socket()))
	return nil
}

// endpointPrefixes lists every harness's endpoint prefix ("cc-peer:, …").
func endpointPrefixes() string {
	var out []string
	for _, h := range wiring.Plugins().Kinds() {
		out = append(out, strings.TrimSuffix(h.EndpointPrefix(), "v1:"))
	}
	return strings.Join(out, ", ")
}

// endpointForms writes out every harness's endpoint form, then another
// machine's: "cc-peer:v1:<pid>:<name>:<socket>, qwen-peer:v1:<pid>:<session
// id>:<socket>, …, ssh:v1:<host>:<endpoint>".
func endpointForms() string {
	var out []string
	for _, h := range wiring.Plugins().Kinds() {
		spec, _ := h.Spec()
		out = append(out, h.EndpointPrefix()+"<pid>:<"+spec.Pins+">:<socket>")
	}
	return strings.Join(append(out, domain.HostEndpointPrefix+"<host>:<endpoint>"), ", ")
}

// endpointPins says what each harness's endpoint pins: "Claude Code's
// name, Qwen Code's session id, …".
func endpointPins() string {
	var out []string
	for _, h := range wiring.Plugins().Kinds() {
		spec, _ := h.Spec()
		out = append(out, h.Title()+"'s "+spec.Pins)
	}
	return strings.Join(out, ", ")
}
