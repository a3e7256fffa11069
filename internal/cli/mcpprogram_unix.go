//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// execMCP replaces this process with path, given this command line and env;
// it returns only when the exec failed.
func (c *factory) execMCP(path string, env []string) error {
	argv := append([]string{path}, c.args...)
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
