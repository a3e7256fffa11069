// Package codexapp is a client of Codex's app-server (Codex CLI 0.171.0,
// docs/CODEX.md): the per-user daemon that a plain `codex` TUI starts and
// talks to over its control socket,
//
//	$CODEX_HOME/app-server-control/app-server-control.sock
//
// a link to a socket in /tmp/codex-daemon-<uid>/ (a 0700 folder). The wire
// is HTTP/1.1 Upgrade: websocket on that Unix socket, one JSON-RPC message
// per text frame without the "jsonrpc" member (the app-server's own
// framing; the schema is printed by `codex app-server
// generate-json-schema`). The WebSocket is github.com/coder/websocket.
//
// Before connecting, Socket checks that the socket is ours: a socket owned
// by this uid, reached through a link that stays inside
// /tmp/codex-daemon-<uid>/, a folder owned by this uid that no one else can
// enter. Every read and call is bounded in time (the caller's context) and
// in memory (MaxFrame); nothing outlives Close.
package codexapp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ControlSocket is the control socket's path under a Codex home.
func ControlSocket(home string) string {
	return filepath.Join(home, "app-server-control", "app-server-control.sock")
}

// DaemonPIDFile is the daemon's record under a Codex home:
// {"pid", "processStartTime", "processIdentity":{"bootId","startTicks"}, …}.
func DaemonPIDFile(home string) string {
	return filepath.Join(home, "app-server-daemon", "daemon.pid")
}

// ErrNoDaemon is wrapped when the control socket does not exist: no
// daemon serves this Codex home (none was started, or it stopped).
var ErrNoDaemon = errors.New("no Codex app-server daemon")

// ErrNotOurs is wrapped when the control socket is not one peerctl may
// talk to: not a socket, another user's, or reached through a link that
// leaves the daemon's private folder.
var ErrNotOurs = errors.New("control socket is not ours")

// DaemonDir is the private folder Codex 0.171.0 keeps its daemon's sockets
// in: /tmp/codex-daemon-<uid> (mode 0700).
func DaemonDir(uid int) string { return "/tmp/codex-daemon-" + strconv.Itoa(uid) }

// Socket resolves the control socket of home and checks it (see the
// package doc): the path returned is the socket itself, to dial. uid is
// ours (os.Getuid()); dirs are the folders its link may point into
// (DaemonDir(uid) when none). A missing socket wraps ErrNoDaemon, one that
// fails a check wraps ErrNotOurs.
func Socket(home string, uid int, dirs ...string) (string, error) {
	link := ControlSocket(home)
	fi, err := os.Lstat(link)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %s does not exist", ErrNoDaemon, link)
	}
	if err != nil {
		return "", fmt.Errorf("control socket %s: %w", link, err)
	}
	if len(dirs) == 0 {
		dirs = []string{DaemonDir(uid)}
	}
	target := link
	if fi.Mode()&os.ModeSymlink != 0 {
		dest, err := os.Readlink(link)
		if err != nil {
			return "", fmt.Errorf("control socket %s: %w", link, err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(link), dest)
		}
		target = filepath.Clean(dest)
		inside := false
		for _, d := range dirs {
			if filepath.Dir(target) == filepath.Clean(d) {
				inside = true
				if err := privateDir(d, uid); err != nil {
					return "", fmt.Errorf("%w: %s links to %s: %v", ErrNotOurs, link, target, err)
				}
			}
		}
		if !inside {
			return "", fmt.Errorf("%w: %s links to %s, outside %s", ErrNotOurs, link, target, strings.Join(dirs, ", "))
		}
		if fi, err = os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: %s links to %s, which does not exist", ErrNoDaemon, link, target)
		} else if err != nil {
			return "", fmt.Errorf("control socket %s: %w", target, err)
		}
	}
	if fi.Mode().Type() != os.ModeSocket {
		return "", fmt.Errorf("%w: %s is not a socket (%s)", ErrNotOurs, target, typeWord(fi.Mode()))
	}
	if owner, ok := fileOwner(fi); ok && owner != uid {
		return "", fmt.Errorf("%w: %s is owned by uid %d, not us (uid %d)", ErrNotOurs, target, owner, uid)
	}
	return target, nil
}

// privateDir checks that dir is a real folder owned by uid that no one
// else can write to or enter.
func privateDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder (%s)", dir, typeWord(fi.Mode()))
	}
	if owner, ok := fileOwner(fi); ok && owner != uid {
		return fmt.Errorf("%s is owned by uid %d, not us (uid %d)", dir, owner, uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o; Codex makes it 0700", dir, fi.Mode().Perm())
	}
	return nil
}

func typeWord(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a folder"
	case m&os.ModeSymlink != 0:
		return "a link"
	case m&os.ModeNamedPipe != 0:
		return "a fifo"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
