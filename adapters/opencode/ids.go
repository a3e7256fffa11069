package opencode

import (
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"
)

// base62 are the characters of an id's random tail.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var ids struct {
	sync.Mutex
	lastMS  int64
	counter int64
}

// NewMessageID draws a message id in opencode's format (opencode-ai
// 1.18.33, measured and read from the ids it writes): "msg_", 12 hex
// digits of ((unix ms × 0x1000 + counter) mod 2^48), where counter counts
// the ids drawn in the same millisecond (from 1), then 14 base62
// characters. Ids sort after older ones, as opencode's do; opencode
// refuses a messageID that does not start with "msg".
func NewMessageID(now time.Time) string {
	ms := now.UnixMilli()
	ids.Lock()
	if ms == ids.lastMS {
		ids.counter++
	} else {
		ids.lastMS, ids.counter = ms, 1
	}
	n := uint64(ms*0x1000+ids.counter) & (1<<48 - 1)
	ids.Unlock()
	var tail [14]byte
	_, _ = rand.Read(tail[:])
	for i := range tail {
		tail[i] = base62[int(tail[i])%len(base62)]
	}
	return fmt.Sprintf("msg_%012x%s", n, tail[:])
}

// ValidSessionID reports whether s looks like an opencode session id:
// "ses_" and 26 characters of [0-9A-Za-z] (opencode-ai 1.18.33).
func ValidSessionID(s string) bool {
	rest, ok := strings.CutPrefix(s, "ses_")
	if !ok || len(rest) != 26 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !strings.ContainsRune(base62, rune(rest[i])) {
			return false
		}
	}
	return true
}
