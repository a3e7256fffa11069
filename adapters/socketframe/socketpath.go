package socketframe

import (
	"path/filepath"
	"strconv"
)

// ClaudeMaxSocketPath is the longest inbox socket path, in bytes, Claude
// Code binds (its constant 103, in the darwin and win32 builds of 2.1.328
// and 2.1.332): a default path that would be longer moves to the fallback
// folder (ClaudeSocketPath).
const ClaudeMaxSocketPath = 103

// SocketEnv is what decides where Claude Code puts a session's inbox socket.
type SocketEnv struct {
	XDGRuntimeDir    string // $XDG_RUNTIME_DIR
	ClaudeCodeTmpdir string // $CLAUDE_CODE_TMPDIR
	TermuxVersion    string // $TERMUX_VERSION (set on Termux)
	Prefix           string // $PREFIX (Termux's usr folder)
	UID              int    // the session's uid (0 where there is none)
	PID              int    // the session's pid
}

// ClaudeSocketPath returns where Claude Code's darwin build (2.1.328,
// 2.1.332) binds a session's inbox socket when nothing else is asked:
// <$XDG_RUNTIME_DIR, else $CLAUDE_CODE_TMPDIR, else /tmp>/cc-socks/<pid>.sock,
// made absolute; and when that is longer than ClaudeMaxSocketPath bytes,
// the fallback <$PREFIX/tmp on Termux, else /tmp>/cc-socks-<uid>/<pid>.sock.
// (Should the path be another live session's socket it binds
// <pid>-<8 hex>.sock beside it; records always carry the path bound.)
func ClaudeSocketPath(e SocketEnv) string {
	base := e.XDGRuntimeDir
	if base == "" {
		base = e.ClaudeCodeTmpdir
	}
	if base == "" {
		base = "/tmp"
	}
	sock := strconv.Itoa(e.PID) + ".sock"
	p, err := filepath.Abs(filepath.Join(base, "cc-socks", sock))
	if err == nil && len(p) <= ClaudeMaxSocketPath {
		return p
	}
	root := "/tmp"
	if e.TermuxVersion != "" {
		root = filepath.Join(e.Prefix, "tmp")
	}
	return filepath.Join(root, "cc-socks-"+strconv.Itoa(e.UID), sock)
}
