//go:build unix

// Package livecc runs real Claude Code sessions for live acceptance tests.
//
// It installs a pinned @anthropic-ai/claude-code release from npm into a shared
// cache, starts interactive sessions headless in tmux, fully isolated (their own
// CLAUDE_CONFIG_DIR, TMPDIR, HOME and working directory, and a tmux server on a
// dedicated socket), waits until each session has published its live-session
// record, and tears everything down when the test ends.
//
// No login and no network are needed: a session started with a fake API key (or
// with none) still registers in <config>/sessions/<pid>.json and binds its inbox
// socket; anything that would reach the model API fails or retries.
//
// Live tests run only when PEERCTL_LIVE=1. With it set, a missing prerequisite
// (tmux, npm, a failed install) fails the test instead of skipping it, so CI
// cannot go green by silently skipping. The facts this package relies on are
// written down, with the version and how they were measured, in
// docs/CLAUDE-CODE-FACTS.md.
package livecc
