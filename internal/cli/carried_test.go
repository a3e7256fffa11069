package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// A plain send the service runs (a client's, or one typed into the
// dashboard) is remembered for the dashboard's Messages with how it ended,
// a refusal too; a dry run is not a send; the newest come first and at
// most maxCarried are kept.
func TestServiceRemembersThePlainSendsItCarried(t *testing.T) {
	s := &server{now: time.Now, inflight: map[int64]bool{}, wake: make(chan struct{}, 1), warm: map[string]*warmSet{}}
	home := t.TempDir()
	send := func(args ...string) int {
		var out, errb bytes.Buffer
		c := s.sub(nil, "", &out, &errb)
		argv := append([]string{"send", "--config-dir", filepath.Join(home, "claude"), "--qwen-home", filepath.Join(home, "qwen"),
			"--codex-home", filepath.Join(home, "codex")}, args...)
		return c.execute(context.Background(), argv)
	}
	assert.Equal(t, exitCode(domain.ReasonNotLive), send("ghost", "are the tests green?"))
	assert.NotEqual(t, 0, send("--dry-run", "ghost", "a dry run"))
	got := s.carriedSends()
	require.Len(t, got, 1, "the refused send, not the dry run")
	assert.Equal(t, "ghost", got[0].Address)
	assert.Equal(t, "are the tests green?", got[0].Text)
	assert.Equal(t, "not_live", got[0].State)
	assert.Contains(t, got[0].Reason, "ghost")
	assert.Zero(t, got[0].ID, "no outbox id: nothing to cancel or retry")

	ok := app.SendResult{Receipt: domain.Receipt{Transport: "courier", Outcome: "queued", MsgID: "m-1"}}
	s.carry("proj-89", "rebase", time.Now(), ok, nil)
	msgs, err := webBackend{s: s}.Messages(context.Background())
	require.NoError(t, err, "no outbox: the carried sends alone")
	require.Len(t, msgs, 2)
	assert.Equal(t, "proj-89", msgs[0].Address, "newest first")
	assert.Equal(t, "delivered", msgs[0].State)
	assert.Equal(t, "courier", msgs[0].Transport)
	assert.Equal(t, "m-1", msgs[0].MsgID)
	assert.Equal(t, []string{"sent", "delivered"}, []string{msgs[0].History[0].State, msgs[0].History[1].State})

	for i := range maxCarried + 5 {
		s.carry("a-"+strconv.Itoa(i), "t", time.Now(), ok, nil)
	}
	got = s.carriedSends()
	assert.Len(t, got, maxCarried)
	assert.Equal(t, "a-"+strconv.Itoa(maxCarried+4), got[0].Address)
}
