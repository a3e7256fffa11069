//go:build unix

package acceptance

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/fakeqwen"
	"github.com/peerctl/peerctl/test/testproc"
)

// send --durable --wait to a Qwen Code session that is not there when the
// message would be stored is refused as a plain send's --wait is
// (harness_unsupported, exit 6), before anything is stored, whenever its
// harness can be told then: a record of it left on disk (its process
// gone), a Qwen Code endpoint, Qwen Code's transport named. An address no
// record answers to could be any harness's session: that one is stored.
func TestSendDurableWaitQwenCodeRefusedBeforeStored(t *testing.T) {
	w := newServeWorld(t)
	sock := filepath.Join(catSocketDir(t), "q.sock")
	pid, kill := testproc.KillableSleeper(t)
	const id = "aaaaaaaa-1111-4111-8111-111111111111"
	w.more = append(w.more, "QWEN_HOME="+fakeqwen.Home(t, pid, id, sock))
	kill() // its record stays behind, as after a crash
	endpoint := "qwen-peer:v1:" + strconv.Itoa(testproc.DeadPID(t)) + ":" + id + ":" + sock
	for _, args := range [][]string{
		{"app-3b"},
		{id},
		{endpoint},
		{"--transport", "inbox", "nobody"},
	} {
		r := w.peerctl(t, nil, append(append([]string{"send", "--durable=1h", "--wait=1m"}, args...), "run it")...)
		assert.Equal(t, 6, r.Code, "%v: stderr: %s", args, r.Stderr)
		assert.Contains(t, string(r.Stderr), "harness_unsupported", args)
		assert.Contains(t, string(r.Stderr), "nothing was sent", args)
		assert.Empty(t, string(r.Stdout), args)
	}
	assert.Empty(t, w.outbox(t), "nothing was stored")

	r := w.peerctl(t, nil, "send", "--json", "--durable=1h", "--wait=1m", "nobody", "run it")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "stored", decodeReceipt(t, r).Outcome, "a name no record answers to may be any harness's session")
}
