// Command peerctl finds the live Claude Code, Qwen Code, Codex and opencode sessions
// on this machine (or another, over ssh) and delivers a message into one of them, safely. Run
// `peerctl --help`. `peerctl mcp`, `serve` with a bus, `list --fleet`,
// `--host nats:NODE` and `policy nats-config` run
// peerctl-mcp (cmd/peerctl-mcp), which has the MCP server and the fleet's
// NATS client linked in; this binary has neither, so that no other command
// pays for their start-up.
//
// peerctl is licensed under the Apache License, Version 2.0 (the LICENSE
// file at the root of the module).
package main

import (
	"github.com/peerctl/peerctl/internal/cli"
	"github.com/peerctl/peerctl/internal/outboxstore"
)

func main() { cli.Main(nil, nil, outboxstore.Store{}) }
