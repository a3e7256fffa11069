//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package servesock

import "golang.org/x/sys/unix"

// peerUID is getpeereid(3): LOCAL_PEERCRED's xucred on macOS and the BSDs.
func peerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
