package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// socketWorld is a registry of live sessions, one per way a published
// socket can be out of reach, and one that is reachable.
type socketWorld struct {
	cfg  string
	recs map[string]evRecord // by case name
	want map[string]string   // unaddressable reason, by case name ("" when reachable)
}

func newSocketWorld(t *testing.T) socketWorld {
	t.Helper()
	socks := evSocketDir(t)
	regular := filepath.Join(socks, "file.sock")
	require.NoError(t, os.WriteFile(regular, nil, 0o600))
	long := filepath.Join(socks, strings.Repeat("l", 120)+".sock")
	w := socketWorld{recs: map[string]evRecord{}, want: map[string]string{
		"there":    "",
		"absent":   "does not exist",
		"regular":  "is not a socket",
		"too-long": "longer than a Unix socket address holds (107)",
	}}
	ids := map[string]string{"there": "1", "absent": "2", "regular": "3", "too-long": "4"}
	paths := map[string]string{"there": filepath.Join(socks, "there.sock"), "absent": filepath.Join(socks, "absent.sock"), "regular": regular, "too-long": long}
	var recs []evRecord
	for name, n := range ids {
		r := evLiveRecord(t, testproc.Sleeper(t), "1111111"+n+"-aaaa-4aaa-8aaa-00000000000"+n, name, "/src/"+name, paths[name])
		w.recs[name] = r
		recs = append(recs, r)
	}
	socktest.Listen(t, paths["there"], false)
	w.cfg = evConfigDir(t, recs...)
	return w
}

// A live record whose socket is absent, is not a socket, or has a path
// longer than the platform's socket address is listed as not addressable,
// with the reason, by list and list --all (table and JSON).
func TestListSaysUnreachableSocketsAreNotAddressable(t *testing.T) {
	w := newSocketWorld(t)
	for _, args := range [][]string{{"list", "--json"}, {"list", "--all", "--json"}} {
		r := evRun(t, nil, nil, append([]string{"--config-dir", w.cfg}, args...)...)
		require.Equal(t, wire.ExitOK, r.code, "%v: %s", args, r.stderr)
		var got []wire.Session
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		require.Len(t, got, len(w.recs), args)
		for _, s := range got {
			want := w.want[s.Name]
			if want == "" {
				assert.True(t, s.Addressable, "%v %s", args, s.Name)
				assert.NotEmpty(t, s.Endpoint)
				continue
			}
			assert.False(t, s.Addressable, "%v %s", args, s.Name)
			assert.Contains(t, s.Unaddressable, want, "%v %s", args, s.Name)
			assert.Empty(t, s.Endpoint, "%v %s", args, s.Name)
		}
	}
	r := evRun(t, nil, nil, "--config-dir", w.cfg, "list", "--all")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "not addressable: socket ")
	// show gives the record's own verdict and, apart, what is on disk.
	r = evRun(t, nil, nil, "--config-dir", w.cfg, "show", "--json", "absent")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"socketOnDisk": "no"`)
}

// doctor names every live session whose socket is out of reach (a
// warning, not a problem) and counts the reachable ones.
func TestDoctorReportsUnreachableSessions(t *testing.T) {
	w := newSocketWorld(t)
	claude, _ := fakeClaude(t)
	r := evRun(t, nil, nil, "--config-dir", w.cfg, "doctor", "--json", "--claude", claude)
	var got wire.Doctor
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), "stdout: %s stderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "warn", got.Reach.Health)
	assert.Equal(t, 1, got.Reach.Reachable)
	byName := map[string]string{}
	for _, u := range got.Reach.Unreachable {
		byName[u.Name] = u.Reason
	}
	for name, want := range w.want {
		if want == "" {
			assert.NotContains(t, byName, name)
			continue
		}
		assert.Contains(t, byName[name], want, name)
		found := false
		for _, warn := range got.Warnings {
			found = found || strings.Contains(warn, `"`+name+`"`) && strings.Contains(warn, "unreachable")
		}
		assert.True(t, found, "no warning names %s: %q", name, got.Warnings)
	}
	text := evRun(t, nil, nil, "--config-dir", w.cfg, "doctor", "--claude", claude)
	assert.Regexp(t, `(?m)^reach\s+warn\s+session 11111112-\S+ "absent" \(pid \d+\) is unreachable: socket .* does not exist$`, text.stdout)
}

// send --dry-run --transport socket refuses a target whose socket is
// absent or is not a socket exactly as the send itself does: same exit
// code, same words.
func TestSendDryRunSocketRefusesAsSendDoes(t *testing.T) {
	w := newSocketWorld(t)
	for _, name := range []string{"absent", "regular", "too-long"} {
		id := w.recs[name].SessionID
		dry := evRun(t, nil, nil, "--config-dir", w.cfg, "send", "--dry-run", "--transport", "socket", id, "hi")
		real := evRun(t, nil, nil, "--config-dir", w.cfg, "send", "--transport", "socket", "--no-confirm", id, "hi")
		assert.Equal(t, wire.ExitDeliveryFailed, real.code, "%s: %s", name, real.stderr)
		assert.Equal(t, real.code, dry.code, "%s: %s", name, dry.stderr)
		assert.Equal(t, real.stderr, dry.stderr, name)
		assert.Empty(t, dry.stdout, name)
	}
	dry := evRun(t, nil, nil, "--config-dir", w.cfg, "send", "--dry-run", "--transport", "socket", w.recs["there"].SessionID, "hi")
	assert.Equal(t, wire.ExitOK, dry.code, dry.stderr)
}

// A socket send's receipt gives the post's own time apart from the
// transcript confirmation's: the confirmation below waits out its
// 300 ms timeout, and that wait is not the post's.
func TestSendReportsTransportAndConfirmationTimesApart(t *testing.T) {
	w := newSocketWorld(t)
	id := w.recs["there"].SessionID
	// Three texts: these runs share one process, and a process's repeat
	// post within 30 s is refused (socketframe).
	r := evRun(t, nil, nil, "--config-dir", w.cfg, "send", "--transport", "socket", "--confirm-timeout", "300ms", id, "hi 1")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Regexp(t, `^posted: "there" \(session \S+, pid \d+\) by socket in \d+(\.\d+)?[mµn]?s: frame written; the socket gives no acknowledgement\n$`, r.stdout)
	assert.Contains(t, r.stderr, "warning: posted, not confirmed: no enqueue line with the text in")

	r = evRun(t, nil, nil, "--config-dir", w.cfg, "send", "--json", "--transport", "socket", "--confirm-timeout", "300ms", id, "hi 2")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	var got struct {
		ElapsedMs, TransportMs, ConfirmMs int64
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.GreaterOrEqual(t, got.ConfirmMs, int64(300), "the confirmation waited out its timeout")
	assert.LessOrEqual(t, got.TransportMs+got.ConfirmMs, got.ElapsedMs)

	r = evRun(t, nil, nil, "--config-dir", w.cfg, "send", "--transport", "socket", "--no-confirm", id, "hi 3")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Regexp(t, `by socket in \S+: frame written; the socket gives no acknowledgement\n$`, r.stdout, "no confirmation read, no confirmation time")
}
