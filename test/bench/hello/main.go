// Command hello is a plain Go hello-world: the floor for a Go program's
// process start-up, measured beside peerctl by scripts/bench.sh.
package main

import "fmt"

func main() { fmt.Println("hello") }
