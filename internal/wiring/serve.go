package wiring

import (
	"net"

	"github.com/peerctl/peerctl/adapters/servesock"
)

// The adapters peerctl serve (internal/serve) uses: its state and socket
// folders, its lock, its socket and the outbox it keeps. internal/serve
// names none of them: it asks for them here.

// StateDir is the state folder, the outbox's (adapters/servesock's StateDir):
// $XDG_STATE_HOME/peerctl, else the system's default; getenv reads the
// environment.
func StateDir(getenv func(string) string) (string, error) { return servesock.StateDir(getenv) }

// ServeSocketDir is the folder of the service's socket (adapters/servesock's
// Dir): $XDG_RUNTIME_DIR/peerctl, else the OS cache folder's peerctl/run.
func ServeSocketDir(getenv func(string) string) (string, error) { return servesock.Dir(getenv) }

// ServeSocketName is the name in ServeSocketDir of the socket of the
// service for the state folder stateDir (an absolute path).
func ServeSocketName(stateDir string) string { return servesock.SocketName(stateDir) }

// ServeLockName is the service's lock file's name in the state folder.
const ServeLockName = servesock.LockName

// ErrServeLocked is TryServeLock's error when another process holds the
// lock.
var ErrServeLocked = servesock.ErrLocked

// TryServeLock takes the exclusive lock on the file at path, held until
// release: ErrServeLocked when another process holds it.
func TryServeLock(path string) (release func() error, err error) {
	l, err := servesock.TryLock(path)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// ListenServe listens on the service's Unix socket path (its folder made
// private first; a socket file left by a service that died removed): call
// it holding the lock.
func ListenServe(path string) (*net.UnixListener, error) { return servesock.Listen(path) }

// ServePeerCheck is the uid at the other end of conn, and an error naming
// it when that is not this process's effective uid.
func ServePeerCheck(conn *net.UnixConn) (int, error) { return servesock.PeerCheck(conn) }
