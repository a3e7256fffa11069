//go:build !windows

package sshhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SharesConnections reports whether this platform's OpenSSH client shares
// one connection per host between calls (ControlMaster); Windows' does not.
const SharesConnections = true

// controlOptions are the connection-sharing options of every call: use
// the master connection whose socket is ControlPath when there is one
// (ControlMaster=no: a call never becomes a master itself, and connects on
// its own when there is none). The master is started apart from any call
// (Channel.master), so ending a call's process group never ends it nor
// its ProxyCommand, and parallel calls never race to become it. The
// sockets live in a folder of peerctl's own, 0700 and owned by this user;
// when such a folder cannot be had, nothing is shared (why is returned)
// rather than a socket placed where another user could reach it.
func controlOptions(getenv func(string) string) (dir string, opts []string, why string) {
	dir, err := controlDir(getenv)
	if err != nil {
		return "", nil, err.Error()
	}
	return dir, []string{"-o", "ControlMaster=no", "-o", "ControlPath=" + filepath.Join(dir, controlKeyWord)}, ""
}

// controlDir is $XDG_RUNTIME_DIR/peerctl-ssh-<uid> (else the same under
// the temp folder), made 0700 when absent; an existing one must be a real
// folder of this user's with no permission for others.
func controlDir(getenv func(string) string) (string, error) {
	base := getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(base) {
		base = os.TempDir()
	}
	uid := os.Geteuid()
	dir := filepath.Join(base, "peerctl-ssh-"+strconv.Itoa(uid))
	if strings.ContainsAny(dir, "%\"' \t\n") {
		return "", fmt.Errorf("connection sharing off: the folder %q holds a character ssh's ControlPath would read otherwise", dir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("connection sharing off: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("connection sharing off: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("connection sharing off: %s is not a folder", dir)
	case !ok || int(st.Uid) != uid:
		return "", fmt.Errorf("connection sharing off: %s is not this user's", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("connection sharing off: %s is open to others (%s)", dir, fi.Mode().Perm())
	}
	return dir, nil
}
