//go:build unix

package courierexec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

// A courier that closed its input but has not exited yet: the send fails
// (the turn cannot be written), and the courier is Done when Send returns,
// so a relay sees it dead and starts another instead of sending on it
// again.
func TestCourierThatStoppedReadingIsDoneWhenTheSendFails(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "claude")
	closed := filepath.Join(dir, "closed")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\nexec 0<&-\n: > "+closed+"\nsleep 30\n"), 0o755))
	tr := courierexec.New(courierexec.Config{Program: prog, Grace: 2 * time.Second, Timeout: 10 * time.Second, Env: []string{"PATH=" + os.Getenv("PATH")}})
	p, err := tr.StartCourier(context.Background())
	require.NoError(t, err)
	defer p.Close()
	r := domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
		SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: filepath.Join(dir, "in.sock")}
	require.Eventually(t, func() bool { _, err := os.Stat(closed); return err == nil }, 10*time.Second, 10*time.Millisecond)
	_, sendErr := p.Send(context.Background(), transporttest.Session(t, r), msg(t, "hi"))
	rf, ok := domain.AsRefusal(sendErr)
	require.True(t, ok, "%v", sendErr)
	assert.Equal(t, domain.ReasonDeliveryFailed, rf.Reason)
	select {
	case <-p.Done():
	default:
		t.Fatalf("the send failed (%v), yet the courier is not done", sendErr)
	}
}
