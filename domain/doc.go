// Package domain holds peerctl's pure model: registry records and their
// verdicts, sessions, endpoints, messages, refusals and the resolve-then-verify
// rule. It imports the standard library only and does no I/O.
//
// Formats modelled here come from Claude Code's live-session registry as
// written by Claude Code 2.1.224 and 2.1.328 (see docs/CLAUDE-CODE-FACTS.md).
package domain
