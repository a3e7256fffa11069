package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// TestDebugShowsTheSendTrail: --debug logs what a person debugging a send
// needs (the resolved target, the courier's argv and exit status or the
// socket connect, the confirmation reads) and not fx's wiring, which
// --debug=fx (or $PEERCTL_DEBUG=fx) shows; without it nothing is logged.
func TestDebugShowsTheSendTrail(t *testing.T) {
	sock := evSocketDir(t)
	rec := evLiveRecord(t, testproc.Sleeper(t), "55555555-5555-4555-8555-555555555555", "delta", t.TempDir(), sock+"/5.sock")
	listenAll(t, rec)
	cfg := evConfigDir(t, rec)
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "PEERCTL_CLAUDE": testbin.Build(t, testbin.FakeClaude)}
	const fxLine = "[Fx] PROVIDE"

	r := evRun(t, env, nil, "--debug", "send", "--transport", "socket", "--confirm-timeout=1ms", "delta", "hi 1")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	for _, want := range []string{`msg="target resolved" address=delta harness=claude-code session=55555555-5555-4555-8555-555555555555 name=delta`,
		`msg="socket connect" socket=` + sock + "/5.sock", `msg="confirmation read" transcript=`} {
		assert.Contains(t, r.stderr, want)
	}
	assert.NotContains(t, r.stderr, fxLine)

	r = evRun(t, env, nil, "--debug", "send", "--no-confirm", "delta", "hi 2")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Regexp(t, `msg="courier started" pid=\d+ argv="\[\S+ -p --input-format stream-json`, r.stderr)
	assert.Regexp(t, `msg="courier exited" pid=\d+ status="exit status 0"`, r.stderr)

	r = evRun(t, env, nil, "--debug=fx", "send", "--transport", "socket", "--no-confirm", "delta", "hi 3")
	assert.Contains(t, r.stderr, fxLine)
	assert.NotContains(t, r.stderr, "target resolved")
	env["PEERCTL_DEBUG"] = "fx,send"
	r = evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "delta", "hi 4")
	assert.Contains(t, r.stderr, fxLine)
	assert.Contains(t, r.stderr, "target resolved")
	delete(env, "PEERCTL_DEBUG")

	r = evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "delta", "hi 5")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Empty(t, strings.TrimSpace(r.stderr))
}
