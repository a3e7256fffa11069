package codex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// TestMain lets the test binary stand in for codex: with
// PEERCTL_FAKE_CODEX set it is `codex queue`, writing its argv (one per
// line) and CODEX_HOME to that file and answering as Codex 0.171.0 does
// (or as PEERCTL_FAKE_CODEX_SAY says).
func TestMain(m *testing.M) {
	if out := os.Getenv("PEERCTL_FAKE_CODEX"); out != "" {
		_ = os.WriteFile(out, []byte(strings.Join(os.Args[1:], "\n")+"\nCODEX_HOME="+os.Getenv("CODEX_HOME")), 0o600)
		if say, ok := os.LookupEnv("PEERCTL_FAKE_CODEX_SAY"); ok {
			fmt.Println(say)
			os.Exit(3)
		}
		fmt.Printf("Queued message 01a234d7-74bb-7351-8e9a-1c29cc8d79bb for thread %s.\n", os.Args[3])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestQueueRunsCodexQueue(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	argv := filepath.Join(t.TempDir(), "argv")
	w.cfg.Program, w.cfg.From = exe, "me"
	w.cfg.Env = []string{"PEERCTL_FAKE_CODEX=" + argv, "CODEX_HOME=/wrong"}
	text := "a 'quoted' $(text); rm -rf /"
	rec, err := NewQueue(w.cfg).Deliver(context.Background(), target, msg(t, text))
	require.NoError(t, err)
	assert.Equal(t, "queued", rec.Outcome)
	assert.Equal(t, "01a234d7-74bb-7351-8e9a-1c29cc8d79bb", rec.MsgID)
	assert.Contains(t, rec.Detail, "durable")
	got, err := os.ReadFile(argv)
	require.NoError(t, err)
	assert.Equal(t, "queue\n--thread\n"+threadA+"\n--message\n"+Envelope("me", text)+"\nCODEX_HOME="+w.fake.Home, string(got), "argv without a shell, CODEX_HOME the home")

	w.cfg.Env = append(w.cfg.Env, "PEERCTL_FAKE_CODEX_SAY=Error: no thread named x")
	_, err = NewQueue(w.cfg).Deliver(context.Background(), target, msg(t, text))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "Error: no thread named x")
}
