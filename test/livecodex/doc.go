//go:build unix

// Package livecodex runs real Codex CLI sessions for live tests: it installs
// a pinned @openai/codex release from the npm registry into a cache, starts
// interactive sessions (the TUI) headless in tmux, each on a tmux server of
// its own, and gives them a model that is a local stand-in for the OpenAI
// Responses API written here (Model), so no network and no account is
// needed. Every test gets its own CODEX_HOME under a temporary root
// (livecc.TempRoot) with an offline config.toml (OfflineConfig); the
// app-server daemon a TUI starts for that home is stopped, with its helper,
// when the test ends, and nothing the test did not start is touched.
//
// Live tests run only with PEERCTL_LIVE=1 (see Require); without it they
// skip. Facts relied on: docs/CODEX.md.
package livecodex
