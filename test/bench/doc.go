// Package bench holds the programs scripts/bench.sh runs beside peerctl:
//
//   - listener: a stand-in for a Claude Code session's inbox socket; it
//     accepts, reads the posted line and closes, as Claude Code 2.1.328 does;
//   - hello: a plain Go hello-world, the floor for process start-up.
//
// None of them is part of peerctl; they exist to measure it.
package bench
