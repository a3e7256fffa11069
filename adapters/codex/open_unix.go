//go:build unix

package codex

import "syscall"

// openFlags: a link is not followed, a fifo does not block the open.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
