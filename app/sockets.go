package app

import (
	"os"

	"github.com/peerctl/peerctl/domain"
)

// socketUnreachable says why nothing can connect to a session's socket at
// path ("" when a connection can be tried): the path is longer than a Unix
// socket address holds on this platform (domain.SocketPathTooLong),
// nothing is there, or what is there is not a socket. Like the socket
// transport it uses Lstat: a symbolic link is not a socket. A socket that
// is there may still refuse a connection; only a send finds that out.
func socketUnreachable(path string) string {
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

// markUnreachable turns every live, addressable entry whose socket cannot
// be connected to (socketUnreachable) into a not-addressable one, with the
// reason in Unaddressable. One Lstat per such entry; records that are not
// live are left as they are.
func markUnreachable(entries []domain.Entry) {
	for i, e := range entries {
		if !e.Live() || !e.Addressable {
			continue
		}
		if why := socketUnreachable(e.Record.SocketPath); why != "" {
			entries[i].Addressable, entries[i].Unaddressable = false, why
		}
	}
}
