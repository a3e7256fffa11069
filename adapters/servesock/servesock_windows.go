package servesock

import "net"

// PrivateDir is not available on Windows.
func PrivateDir(string) error { return ErrUnsupported }

// PrivateFile is not available on Windows.
func PrivateFile(string) error { return ErrUnsupported }

// Lock is not available on Windows.
type Lock struct{}

// TryLock is not available on Windows.
func TryLock(string) (*Lock, error) { return nil, ErrUnsupported }

// Release does nothing on Windows.
func (l *Lock) Release() error { return nil }

// Listen is not available on Windows.
func Listen(string) (*net.UnixListener, error) { return nil, ErrUnsupported }

// PeerCheck is not available on Windows.
func PeerCheck(*net.UnixConn) (int, error) { return -1, ErrUnsupported }
