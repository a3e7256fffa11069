//go:build unix && !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package servesock

func peerUID(int) (int, error) { return -1, ErrUnsupported }
