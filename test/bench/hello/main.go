// Command hello is a bare Go program that prints "[]" (what `peerctl list
// --json` prints for an empty registry) and nothing else: the floor for a
// static Go binary's process start-up, measured beside peerctl by
// scripts/bench.sh.
package main

import "os"

func main() { _, _ = os.Stdout.WriteString("[]\n") }
