package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// fakeRemote answers each host's calls from a table: a result, or an error.
type fakeRemote struct {
	results map[string]ports.RemoteResult
	errs    map[string]error
	mu      sync.Mutex
	calls   []ports.RemoteCall
}

func (f *fakeRemote) Call(_ context.Context, c ports.RemoteCall) (ports.RemoteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	if err := f.errs[c.Dest.String()]; err != nil {
		return ports.RemoteResult{}, err
	}
	return f.results[c.Dest.String()], nil
}

func (f *fakeRemote) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	return nil, domain.Refuse(domain.ReasonHostUnreachable, "no streams here")
}

var _ ports.Remote = (*fakeRemote)(nil)

func TestParseHosts(t *testing.T) {
	got, err := parseHosts([]string{"box", ".", "box", "me@b:22"}, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"box", "", "me@b:22"}, []string{got[0].String(), got[1].String(), got[2].String()})
	for _, bad := range []string{"-oProxyCommand=x", "a b", "x\n"} {
		_, err := parseHosts([]string{bad}, true)
		var ue usageError
		assert.ErrorAs(t, err, &ue, bad)
	}
	_, err = parseHosts([]string{"a", "b"}, false)
	assert.Error(t, err, "one host only")
}

func TestOneHost(t *testing.T) {
	inner := "cc-peer:v1:4652:proj:/tmp/s.sock"
	d, addr, err := oneHost(nil, "ssh:v1:box:"+inner)
	require.NoError(t, err)
	assert.Equal(t, "box", d.String())
	assert.Equal(t, inner, addr)
	d, addr, err = oneHost([]string{"box"}, "proj")
	require.NoError(t, err)
	assert.Equal(t, "box", d.String())
	assert.Equal(t, "proj", addr)
	_, _, err = oneHost([]string{"other"}, "ssh:v1:box:"+inner)
	assert.Error(t, err, "the endpoint's host and --host disagree")
	_, _, err = oneHost(nil, "ssh:v1:-x:"+inner)
	assert.Error(t, err)
}

// TestListHostsMergesOverThePort: list --host over a fake ports.Remote:
// the answering host's sessions carry it, the refusing one is warned of
// once, exit 10.
func TestListHostsMergesOverThePort(t *testing.T) {
	rows, err := json.Marshal([]wire.Session{{Harness: "claude-code", SessionID: "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", PID: 7, Name: "proj",
		Endpoint: "cc-peer:v1:7:proj:/tmp/s.sock", Verdict: "live", Addressable: true, Status: "idle"}})
	require.NoError(t, err)
	f := &fakeRemote{results: map[string]ports.RemoteResult{"box": {Stdout: rows}},
		errs: map[string]error{"down": domain.Refuse(domain.ReasonHostUnreachable, "ssh down failed (exit 255)")}}
	r := evRun(t, nil, func(c *factory) { c.remoteCh = f }, "list", "--json", "--host", "box", "--host", "down")
	assert.Equal(t, wire.ExitHostUnreachable, r.code, r.stderr)
	var got []wire.Session
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "box", got[0].Host)
	assert.Equal(t, "ssh:v1:box:cc-peer:v1:7:proj:/tmp/s.sock", got[0].Endpoint)
	assert.Equal(t, 1, strings.Count(r.stderr, "host down: not listed"))
	require.Len(t, f.calls, 2)
	assert.Equal(t, []string{"list", "--json"}, f.calls[0].Args)
}

// TestRemoteIsBuiltOnce: commands over several hosts ask for the channel
// from a goroutine per host; every one gets the same channel (run with
// -race: the lazy build raced).
func TestRemoteIsBuiltOnce(t *testing.T) {
	c := newFactory(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, func(string) string { return "" })
	got := make([]ports.Remote, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			r, err := c.remote()
			assert.NoError(t, err)
			got[i] = r
		})
	}
	wg.Wait()
	for _, r := range got {
		assert.Same(t, got[0], r)
	}
}
