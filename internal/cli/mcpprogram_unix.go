//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// execReplaces: execMCP replaces this process, so nothing of this
// process's is printed after peerctl-mcp's output.
const execReplaces = true

// execMCP replaces this process with path, given this command line and env;
// it returns only when the exec failed.
func execMCP(_ *iostreams, path string, args, env []string) error {
	argv := append([]string{path}, args...)
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
