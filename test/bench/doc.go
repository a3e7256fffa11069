// Package bench holds the programs scripts/bench.sh runs beside peerctl:
//
//   - listener: a stand-in for a Claude Code session's inbox socket; it
//     accepts, reads the posted line and closes, as Claude Code 2.1.328 does;
//   - hello: a bare Go program printing "[]", the floor for process start-up;
//   - hellofx: hello with fx and cobra linked in and unused, the start-up
//     those libraries cost by being in the binary;
//   - cputime: runs one command and reports its wall and CPU time.
//
// None of them is part of peerctl; they exist to measure it.
package bench
