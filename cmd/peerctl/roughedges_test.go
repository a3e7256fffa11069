package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A message on stdin over the 64 KiB cap is read only to one byte past the
// cap; the refusal says it is over the cap and that the rest was not read,
// never a size it made up (65537). As an argument the size is known and
// given.
func TestSendOversizeStdinSaysOverTheCap(t *testing.T) {
	cfg := evConfigDir(t)
	for _, n := range []int{64*1024 + 1, 140000} {
		stdin := func(c *cli) { c.stdin = strings.NewReader(strings.Repeat("a", n)) }
		r := evRun(t, nil, stdin, "--config-dir", cfg, "send", "--transport", "socket", "anyone", "-")
		assert.Equal(t, exitInvalidMessage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "message on stdin is over the 65536-byte (64 KiB) cap")
		assert.Contains(t, r.stderr, "the rest was not read")
		assert.NotContains(t, r.stderr, "65537")

		r = evRun(t, nil, stdin, "--config-dir", cfg, "send", "--json", "--transport", "socket", "anyone", "-")
		assert.Equal(t, exitInvalidMessage, r.code, r.stderr)
		var got refusalJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), "stdout: %q", r.stdout)
		assert.Equal(t, "invalid_message", got.Refusal.Reason)
		assert.Contains(t, got.Refusal.Detail, "the rest was not read")
	}
	r := evRun(t, nil, nil, "--config-dir", cfg, "send", "--transport", "socket", "anyone", strings.Repeat("a", 140000))
	assert.Equal(t, exitInvalidMessage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "message is 140000 bytes, over the 65536-byte (64 KiB) cap")
}
