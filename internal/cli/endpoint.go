package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
)

type endpointJSON struct {
	Endpoint string `json:"endpoint"`
	PID      int    `json:"pid"`
	Name     string `json:"name"`
	Socket   string `json:"socket"`
}

func (c *cli) endpointCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoint",
		Short: "Parse or format session endpoints (cc-peer:v1:<pid>:<name>:<socket>)",
		Long: `An endpoint is the opaque address peerctl publishes for a live session:

  cc-peer:v1:<pid>:<name>:<socket>

In name and socket "%" is written %25 and ":" is written %3A, so any name round-trips.

` + exitCodesFor(exitOK, exitUsage),
		Example: `  peerctl endpoint parse 'cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock'
  peerctl endpoint format 5031 'build:main 50%' /tmp/cc-socks/5031.sock`,
	}
	var asJSON bool
	parse := &cobra.Command{
		Use:   "parse ENDPOINT",
		Short: "Split an endpoint into pid, name and socket",
		Long: `Split an endpoint (cc-peer:v1:<pid>:<name>:<socket>) into its parts, unescaping %25 and
%3A in name and socket. Nothing is read: the session need not exist.

Output, one "key: value" line each (control characters and invalid UTF-8 shown escaped, e.g. \t):
  endpoint  the canonical endpoint (re-escaped)
  pid       the session's process id
  name      the session's name, unescaped
  socket    the session's inbox socket path, unescaped

With --json one object: {"endpoint", "pid", "name", "socket"} (docs/OUTPUT.md).

` + exitCodesFor(exitOK, exitUsage) + `
  (2 also when ENDPOINT is malformed: wrong prefix or version, bad pid, bad escape)`,
		Example: `  peerctl endpoint parse --json 'cc-peer:v1:5031:build%3Amain 50%25 ünï:/tmp/cc-socks/5031.sock'`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ep, err := domain.ParseEndpoint(args[0])
			if err != nil {
				return usageError{err}
			}
			return c.printEndpoint(ep, asJSON)
		},
	}
	parse.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	var formatJSON, parts bool
	format := &cobra.Command{
		Use:   "format PID NAME SOCKET",
		Short: "Build an endpoint from its parts",
		Long: `Build the endpoint of a session from its pid, name and socket path, escaping "%" as %25,
":" as %3A, and each byte of a character that is not printable (a newline, an escape, a
bidi override...) or not UTF-8 as %XX in name and socket, so the endpoint is one printable
line. Nothing is read: the session need not exist.

Output, by default: the endpoint alone on one line, as "endpoint parse" and "send" take it
(cc-peer:v1:<pid>:<name>:<socket>).

With --parts, one "key: value" line each, as "endpoint parse" prints them (control
characters and invalid UTF-8 in name and socket shown escaped, e.g. \t):
  endpoint  the endpoint built
  pid       the pid given
  name      the name given
  socket    the socket path given

With --json one object: {"endpoint", "pid", "name", "socket"} (docs/OUTPUT.md).

` + exitCodesFor(exitOK, exitUsage) + `
  (2 also when PID is not a positive number, or NAME or SOCKET is empty)`,
		Example: `  peerctl endpoint format 4652 proj-89 /tmp/cc-socks/4652.sock
  peerctl endpoint parse "$(peerctl endpoint format 5031 'build:main 50%' /tmp/cc-socks/5031.sock)"
  peerctl endpoint format --parts 4652 proj-89 /tmp/cc-socks/4652.sock`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[0])
			if err != nil {
				return usageError{fmt.Errorf("pid %q is not a number", args[0])}
			}
			ep, err := domain.NewEndpoint(pid, args[1], args[2])
			if err != nil {
				return usageError{err}
			}
			if !formatJSON && !parts {
				fmt.Fprintln(c.stdout, ep.String())
				return nil
			}
			return c.printEndpoint(ep, formatJSON)
		},
	}
	format.Flags().BoolVar(&formatJSON, "json", false, "print a JSON object")
	format.Flags().BoolVar(&parts, "parts", false, `print the "key: value" block (endpoint, pid, name, socket) instead of the endpoint alone`)
	cmd.AddCommand(parse, format)
	return cmd
}

func (c *cli) printEndpoint(ep domain.Endpoint, asJSON bool) error {
	if asJSON {
		return c.writeJSON(endpointJSON{Endpoint: ep.String(), PID: ep.PID(), Name: ep.Name(), Socket: ep.Socket()})
	}
	fmt.Fprintf(c.stdout, "endpoint: %s\npid:      %d\nname:     %s\nsocket:   %s\n", ep.String(), ep.PID(), cell(ep.Name()), cell(ep.Socket()))
	return nil
}
