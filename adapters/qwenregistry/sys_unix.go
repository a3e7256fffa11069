//go:build unix

package qwenregistry

import "golang.org/x/sys/unix"

const oNoFollow = unix.O_NOFOLLOW
