//go:build unix

// Package livecodex runs real Codex CLI sessions for live tests: it installs
// a pinned @openai/codex release from the npm registry into a cache,
// starts interactive sessions (the TUI) headless in tmux, each on a tmux
// server of its own, and gives them a model that is a local stand-in for the
// OpenAI Responses API written here (Model), so no network and no account
// is needed. Every test gets its own CODEX_HOME under a temporary root
// (livecc.TempRoot) with an offline config.toml (OfflineConfig); the
// app-server daemon a TUI starts for that home is stopped, with its helper,
// when the test ends, and nothing the test did not start is touched.
//
// Live tests run only with PEERCTL_LIVE=1 (see Require); without it they
// skip.
//
// What it relies on, measured on Codex 0.171.0 (linux-x64, offline):
//
//   - The npm package ships a static musl binary under
//     node_modules/@openai/codex-linux-x64/vendor/<triple>/bin/codex.
//   - A plain TUI starts the home's daemon (`codex app-server --listen
//     unix:// --managed-daemon`, run from a copy of the binary it makes in
//     CODEX_HOME/packages/app-server-daemon) and a helper `codex
//     app-server daemon pid-update-loop`; their pids and start ticks are in
//     CODEX_HOME/app-server-daemon/daemon.pid and daemon-updater.pid.
//     `codex app-server daemon stop` ends the daemon and removes its socket
//     in /tmp/codex-daemon-<uid>/; the helper outlives it and is ended by
//     its record.
//   - The model is asked POST <base_url>/responses with "stream": true; an
//     answer of three server-sent events is enough (response.created, one
//     response.output_item.done, response.completed with usage). Beside the
//     first turn the TUI asks, with no tools, for a title ("Generate a
//     concise, single-line task title …").
//   - An MCP server's tools are offered as one tool of type "namespace"
//     named mcp__<server> whose "tools" are the functions; a function_call
//     item naming the function and carrying "namespace": "mcp__<server>"
//     runs it (with approval_policy "never", without asking), and its result
//     comes back as a function_call_output "Wall time: … Output:\n<text>".
//   - The rollout (sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl)
//     starts with session_meta (id, cwd); each message taken in and each
//     answer is an event_msg item_completed whose item is a UserMessage or
//     an AgentMessage.
//   - What would leave the machine and how OfflineConfig turns it off: see
//     there. The daemon's updater helper made no connection in these runs;
//     no setting to turn it off was found.
package livecodex
