//go:build linux

package procliveness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/ports"
)

// Tree reads the process tree from /proc. Build it with NewTree; the zero
// value reads /proc.
type Tree struct {
	procRoot string
}

var _ ports.Processes = (*Tree)(nil)

// NewTree returns a Tree reading procRoot ("" means /proc).
func NewTree(procRoot string) *Tree { return &Tree{procRoot: procRoot} }

// Parent returns pid's parent pid: field 4 (ppid) of <procRoot>/<pid>/stat,
// the command name taken to run to the last ')' as in StartTime. The
// parent of pid 1 (and of a process whose parent is outside our pid
// namespace) is 0. Errors wrap os.ErrNotExist when the process is gone.
func (t *Tree) Parent(pid int) (int, error) {
	root := t.procRoot
	if root == "" {
		root = "/proc"
	}
	data, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("read parent of pid %d: %w", pid, err)
	}
	ppid, err := ParsePPID(data)
	if err != nil {
		return 0, fmt.Errorf("read parent of pid %d: %w", pid, err)
	}
	return ppid, nil
}

// ParsePPID extracts field 4 (ppid) from the contents of a /proc/<pid>/stat file.
func ParsePPID(data []byte) (int, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("stat has no ')'")
	}
	// After ") " come field 3 (state) and field 4 (ppid).
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0, fmt.Errorf("stat has %d fields after the command name, want >= 2", len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil || ppid < 0 {
		return 0, fmt.Errorf("stat field 4 %q is not a pid", fields[1])
	}
	return ppid, nil
}
