package app

import (
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"

	"github.com/peerctl/peerctl/domain"
)

// socketUnreachable says why nothing can connect to a session's socket at
// path ("" when a connection can be tried): the path is longer than a Unix
// socket address holds on this platform (domain.SocketPathTooLong),
// nothing is there, or what is there is not a socket. Like the socket
// transport it uses Lstat: a symbolic link is not a socket. A socket that
// is there may still refuse a connection; only a send finds that out.
//
// On Windows Claude Code's inbox is a named pipe, not a file: nothing is
// checked there before a send.
func socketUnreachable(path string) string {
	if runtime.GOOS == "windows" {
		return ""
	}
	if why := domain.SocketPathTooLong(path); why != "" {
		return why
	}
	fi, err := os.Lstat(path)
	switch {
	case os.IsNotExist(err):
		return "socket " + path + " does not exist"
	case err != nil:
		return "socket " + path + ": " + err.Error()
	case fi.Mode()&os.ModeSocket == 0:
		return path + " is not a socket (" + fi.Mode().String() + ")"
	}
	return ""
}

// entryUnreachable is socketUnreachable for an entry's socket when it is a
// file (domain.Record.SocketFile); "" for a network address, which only a
// send can try.
func entryUnreachable(e domain.Entry) string {
	if e.Record.SocketFile() == "" {
		return ""
	}
	return socketUnreachable(e.Record.SocketFile())
}

// markUnreachable turns every live, addressable entry whose socket cannot
// be connected to (socketUnreachable), or is another live session's too
// (domain.SharedSocket among the live entries: sending to it is refused),
// into a not-addressable one, with the reason in Unaddressable. One Lstat
// per such entry; records that are not live are left as they are, and so
// is an addressable one that names no socket (its harness reaches it
// otherwise: a --no-daemon Codex thread, through Codex's queue). (A send
// also refuses a socket that a record only Claude Code's own listing shows
// publishes; list, which may skip the records of ended processes, does not
// say that one.)
func markUnreachable(entries []domain.Entry) {
	var live []domain.Entry
	for _, e := range entries {
		if e.Live() {
			live = append(live, e)
		}
	}
	whys := make([]string, len(entries))
	for i, e := range entries {
		if !e.Live() || !e.Addressable || e.Record.SocketPath == "" {
			continue
		}
		if whys[i] = entryUnreachable(e); whys[i] != "" {
			continue
		}
		if what, _ := domain.SharedSocket(live, e); what != "" {
			whys[i] = what + ": sending to it is refused"
		}
	}
	for i, why := range whys {
		if why != "" {
			entries[i].Addressable, entries[i].Unaddressable = false, why
		}
	}
}

// inspectSockets looks at what every socket the identity rule counts is on
// disk (the entries live or listed by Claude Code): os.Stat, so a linked
// folder or a hard link leads to the one file it is. It sets
// Entry.SocketFile (device and inode), so that two records publishing one
// socket under two paths are seen as one (domain.Resolve), and turns a live
// session whose socket another user owns (bound by another uid, in a folder
// anyone may write) into a not-addressable one naming that owner: a post
// there would deliver to that user. self is our effective uid (-1: not
// checked, as on Windows).
func inspectSockets(entries []domain.Entry, self int) {
	for i, e := range entries {
		if (!e.Live() && !e.HarnessMayList) || e.Record.SocketFile() == "" {
			continue
		}
		fi, err := os.Stat(e.Record.SocketFile())
		if err != nil {
			continue
		}
		entries[i].SocketFile = fileID(fi)
		if owner, ok := fileOwner(fi); ok && self >= 0 && owner != self && e.Live() && e.Addressable {
			entries[i].Addressable = false
			entries[i].Unaddressable = fmt.Sprintf("socket %s is owned by %s, not by you (uid %d): a message there would go to that user", e.Record.SocketPath, userName(owner), self)
		}
	}
}

// userName names uid as "uid 1001 (alice)", or "uid 1001" when the name is
// unknown.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}
