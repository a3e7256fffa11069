// Command peerctl finds the live Claude Code, Qwen Code, Codex and opencode sessions
// on this machine (or another, over ssh) and delivers a message into one of them, safely. Run
// `peerctl --help`. `peerctl mcp` runs peerctl-mcp (cmd/peerctl-mcp), which
// has the MCP server linked in; this binary does not, so that no other
// command pays for the MCP SDK's start-up.
//
// peerctl is licensed under the Apache License, Version 2.0 (the LICENSE
// file at the root of the module).
package main

import "github.com/peerctl/peerctl/internal/cli"

func main() { cli.Main(nil) }
