// Package presence says whether a harness is on this machine at all
// (ports.Presence): a harness none of whose signs is there could not have
// had a session, so a refusal does not name it.
package presence

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Of reports whether a harness is present: named (its home was given by a
// flag or a variable), else one of dirs (its state: home, registry or
// database folder) exists, else program is found as exec would run it (a
// path, or a name on $PATH). An empty dir or program is skipped. It costs
// a stat per dir and, when none exists, a look along $PATH.
func Of(named bool, program string, dirs ...string) bool {
	if named {
		return true
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	if program == "" {
		return false
	}
	_, err := exec.LookPath(program)
	return err == nil
}

// Find is program's path as exec would run it (a path, or a name on
// $PATH). Its error is written one way for every harness's program, which
// it names once: find "qwen": executable file not found in $PATH (not
// exec's own `exec: "qwen": ...` as well); doctor's rows say "PROGRAM not
// found (ERR)".
func Find(program string) (string, error) {
	path, err := exec.LookPath(program)
	if err != nil {
		if ee := (*exec.Error)(nil); errors.As(err, &ee) {
			err = ee.Err
		}
		return "", fmt.Errorf("find %q: %w", program, err)
	}
	return path, nil
}
