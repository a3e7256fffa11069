// Package servesock is peerctl serve's local plumbing: the private folder
// its socket lives in, the lock that makes it one service per state, the
// Unix socket, and the peer-credential check that serves only the
// service's own user. Unix only: on Windows every function returns
// ErrUnsupported (peerctl serve is refused there, docs/SERVE.md).
package servesock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// SocketName is the name in Dir of the socket of the service for the
// state folder stateDir (an absolute path): serve-<h>.sock, h the first 16
// hex digits of the SHA-256 of the folder's real path (RealPath). Each
// state folder has a socket of its own, so a service for one folder never
// takes the socket of another's, and two spellings of one folder (a
// symlink, a trailing slash) name the same socket.
func SocketName(stateDir string) string {
	sum := sha256.Sum256([]byte(RealPath(stateDir)))
	return "serve-" + hex.EncodeToString(sum[:8]) + ".sock"
}

// RealPath is path cleaned, with the symlinks of its longest existing
// part resolved (filepath.EvalSymlinks); the rest, not created yet, is
// joined as it is. So a folder has the same RealPath before and after it
// is created.
func RealPath(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for dir := path; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

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

// OutboxName is the outbox's file in the state folder (adapters/outbox).
const OutboxName = "outbox.db"

// StateDir is the service's state folder, which holds its lock (LockName)
// and the outbox (OutboxName): $XDG_STATE_HOME/peerctl when
// XDG_STATE_HOME is an absolute path, else ~/.local/state/peerctl on
// Linux and the BSDs, else the OS cache folder's peerctl
// (os.UserCacheDir: ~/Library/Caches on macOS, %LocalAppData% on Windows).
// getenv reads the environment.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "peerctl"), nil
	}
	if runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		if h := getenv("HOME"); filepath.IsAbs(h) {
			return filepath.Join(h, ".local", "state", "peerctl"), nil
		}
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the state folder: %w", err)
	}
	return filepath.Join(d, "peerctl"), nil
}
