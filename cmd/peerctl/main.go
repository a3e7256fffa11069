// Command peerctl finds the live Claude Code, Qwen Code, Codex and opencode sessions
// on this machine (or another, over ssh) and delivers a message into one of them, safely. Run
// `peerctl --help`. `peerctl mcp`, `serve`, `watch`, the outbox commands and
// `serve status` when there is an outbox, `list --fleet`,
// `--host nats:NODE`, `--jq` and `policy nats-config` run peerctl-mcp
// (cmd/peerctl-mcp), which has the MCP server, the fleet's NATS client,
// the outbox's store (SQLite) and the jq filter (gojq) linked in; this
// binary has none of them, so that no other command pays for their
// start-up.
//
// peerctl is licensed under the Apache License, Version 2.0 (the LICENSE
// file at the root of the module).
package main

import "github.com/peerctl/peerctl/internal/cli"

func main() { cli.Main(nil, nil, nil, nil) }
