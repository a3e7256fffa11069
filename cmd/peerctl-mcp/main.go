// Command peerctl-mcp is peerctl with its MCP server, the fleet's bus
// client (internal/fleet, over NATS), the outbox's store
// (internal/outboxstore, over SQLite) and the jq filter of --jq
// (internal/jqfilter, over gojq) linked in: every peerctl command, and
// `peerctl-mcp mcp` serves list_sessions, show_session and send_message
// over stdio. `peerctl mcp`, `peerctl serve` (with a bus or not), `peerctl
// watch`, the outbox commands and `serve status` when there is an outbox,
// `peerctl list --fleet`, a command with `--host nats:NODE` or with `--jq`
// and `peerctl policy nats-config` run it from beside peerctl, else from
// PATH; an MCP client may run `peerctl-mcp mcp` itself.
package main

import (
	"github.com/peerctl/peerctl/internal/cli"
	"github.com/peerctl/peerctl/internal/fleet"
	"github.com/peerctl/peerctl/internal/jqfilter"
	"github.com/peerctl/peerctl/internal/mcpserve"
	"github.com/peerctl/peerctl/internal/outboxstore"
)

func main() { cli.Main(mcpserve.Serve, fleet.Bus{}, outboxstore.Store{}, jqfilter.Compile) }
