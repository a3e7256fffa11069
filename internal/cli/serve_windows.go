package cli

import "os/exec"

// serveSupported: peerctl serve does not run on Windows (no Unix socket
// peer credentials); durable sends are refused there (docs/SERVE.md).
const serveSupported = false

func detach(*exec.Cmd) {}
