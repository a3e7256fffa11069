//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// execMCP replaces this process with path, given this command line and env;
// it returns only when the exec failed.
func execMCP(_ *iostreams, path string, args, env []string) error {
	argv := append([]string{path}, args...)
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
