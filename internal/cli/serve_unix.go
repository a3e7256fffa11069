//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// serveSupported: peerctl serve runs on this platform.
const serveSupported = true

// detach makes cmd its own session, so the terminal's signals (Ctrl-C in
// the shell that started it on demand) do not reach it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
