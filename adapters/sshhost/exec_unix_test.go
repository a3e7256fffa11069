//go:build unix

package sshhost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// TestExecWordsAndStdinArriveExact: each word of a fixed command reaches
// the far side byte for byte, nothing in it runs, stdin passes whole.
func TestExecWordsAndStdinArriveExact(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := channel(t, farSide(t, okHello), nil)
	for name, word := range trickyWords() {
		t.Run(name, func(t *testing.T) {
			r, err := c.Exec(ctx, dest(t, "box"), []string{"sh", "-c", `printf '<%s>' "$1"; cat`, "sh", word}, strings.NewReader("in"+word), 1<<20)
			require.NoError(t, err)
			assert.Equal(t, 0, r.Code)
			assert.Equal(t, "<"+word+">in"+word, string(r.Stdout))
		})
	}
}

func TestExecOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := channel(t, "", nil).Exec(ctx, dest(t, "box"), []string{"sh", "-c", "echo no >&2; exit 3"}, nil, 100)
	require.NoError(t, err, "the command's own exit is no refusal")
	assert.Equal(t, 3, r.Code)
	assert.Equal(t, "no\n", string(r.Stderr))

	for name, tc := range map[string]struct{ mode, detail string }{
		"ssh refused": {"refuse", "Permission denied"},
		"host key":    {"hostkey", "Host key verification failed"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := channel(t, "", map[string]string{"FAKESSH_MODE": tc.mode}).Exec(ctx, dest(t, "box"), []string{"true"}, nil, 100)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
			assert.Contains(t, r.Detail, tc.detail)
		})
	}

	_, err = channel(t, "", nil).Exec(ctx, dest(t, "box"), []string{"sh", "-c", "head -c 200 /dev/zero"}, nil, 100)
	r2, ok := domain.AsRefusal(err)
	require.True(t, ok, "more output than allowed: %v", err)
	assert.Contains(t, r2.Detail, "more than 100 bytes")
}
