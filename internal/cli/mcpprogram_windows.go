package cli

import (
	"errors"
	"fmt"
	"os/exec"
)

// execReplaces: execMCP runs peerctl-mcp as a child, whose output this
// process's own follows.
const execReplaces = false

// execMCP runs path with this command line and env on this process's
// streams and returns its exit code as a silentError (Windows has no exec:
// the child gets the console, and Ctrl-C, as this process does).
func execMCP(ios *iostreams, path string, args, env []string) error {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ios.in, ios.out, ios.errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return silentError{code: ee.ExitCode()}
	default:
		return fmt.Errorf("run %s: %w", path, err)
	}
}
