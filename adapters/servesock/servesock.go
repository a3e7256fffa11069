// Package servesock is peerctl serve's local plumbing: the private folder
// its socket lives in, the lock that makes it one service per state, the
// Unix socket, and the peer-credential check that serves only the
// service's own user. Unix only: on Windows every function returns
// ErrUnsupported (peerctl serve is refused there, docs/SERVE.md).
package servesock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SocketName is the service socket's name in Dir.
const SocketName = "serve.sock"

// LockName is the lock file's name in the state folder (beside the outbox).
const LockName = "serve.lock"

// ErrUnsupported is returned on a platform without Unix sockets and peer
// credentials (Windows).
var ErrUnsupported = errors.New("peerctl serve needs Unix sockets with peer credentials (Linux, macOS, the BSDs); it is not available on this system")

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("another peerctl serve holds the lock")

// ErrOtherUser is returned by PeerCheck for a connection from another uid.
var ErrOtherUser = errors.New("the connection comes from another user")

// Dir is the folder of the service socket: $XDG_RUNTIME_DIR/peerctl when
// XDG_RUNTIME_DIR is an absolute path, else the OS cache folder's
// peerctl/run (os.UserCacheDir, which honours $XDG_CACHE_HOME on Linux).
func Dir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "peerctl"), nil
	}
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "peerctl", "run"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the socket folder: %w", err)
	}
	return filepath.Join(d, "peerctl", "run"), nil
}
