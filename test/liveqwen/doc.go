//go:build unix

// Package liveqwen runs real Qwen Code sessions for live tests: it installs
// a pinned @qwen-code/qwen-code release from the npm registry into a cache,
// starts interactive sessions (the TUI) headless in tmux, each on a tmux
// server of its own, and gives them a model that is a local OpenAI-compatible
// stand-in written here (Stub), so no network and no account is needed.
//
// Live tests run only with PEERCTL_LIVE=1 (see Require); without it they
// skip. Facts relied on: docs/QWEN-CODE-FACTS.md.
package liveqwen
