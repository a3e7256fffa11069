//go:build unix

package courierexec_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

func TestParseOutput(t *testing.T) {
	const obj = `{"type":"result","subtype":"success","is_error":false,"result":"SENT"}`
	const arr = `[{"type":"system","subtype":"init"},{"type":"result","subtype":"success","is_error":false,"result":"first"},{"type":"assistant","message":{"content":[]}},{"type":"result","subtype":"success","is_error":false,"result":"last"}]`
	tests := []struct {
		name, stdout string
		want         string // result text; "" means a parse error
		array        bool
	}{
		{"object", obj, "SENT", false},
		{"object with newline", obj + "\n", "SENT", false},
		{"array takes the last result", arr, "last", true},
		{"banner line", "Now using node v22.11.0 (npm v10.9.0)\n" + obj, "SENT", false},
		{"bracketed banner", "[nvm] using node 22\r\n" + arr, "last", true},
		{"brace banner", "{not json}\n" + obj, "SENT", false},
		{"indented", "  \t" + obj, "SENT", false},
		{"trailing junk", obj + "\nbye\n", "SENT", false},
		{"pretty printed", "[\n  {\"type\": \"result\", \"result\": \"SENT\"}\n]\n", "SENT", true},
		{"object not a result", `{"type":"assistant"}`, "", false},
		{"array without result", `[{"type":"system"}]`, "", false},
		{"empty", "", "", false},
		{"only junk", "hello\nworld\n", "", false},
		{"truncated JSON", obj[:20], "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := courierexec.ParseOutput([]byte(tt.stdout))
			if tt.want == "" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, out.Result.Result)
			assert.Equal(t, tt.want, *out.Result.Result)
			assert.Equal(t, tt.array, out.Array)
		})
	}
}

// TestJudgeRealNotLoggedIn: Claude Code 2.1.328's own output without a login.
func TestJudgeRealNotLoggedIn(t *testing.T) {
	stdout, err := os.ReadFile("../../test/fakeclaude/testdata/not-logged-in.stdout.json")
	require.NoError(t, err)
	err = courierexec.Judge(courierexec.Run{ExitCode: 1, Stdout: stdout}, "proj-ab", "hi")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "not a refusal: %v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, `courier reported an error: "Not logged in · Please run /login"`)
	assert.Contains(t, r.Detail, "(exit 1)")
}

// TestJudgeHeadsAreBounded: a failure shows the heads of stdout and stderr,
// never all of them.
func TestJudgeHeadsAreBounded(t *testing.T) {
	out := "junk " + strings.Repeat("o", 10000)
	errText := strings.Repeat("e", 10000)
	err := courierexec.Judge(courierexec.Run{ExitCode: 1, Stdout: []byte(out), Stderr: []byte(errText)}, "proj-ab", "hi")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok)
	assert.Contains(t, r.Detail, `stdout: "junk ooo`)
	assert.Contains(t, r.Detail, `stderr: "eee`)
	assert.Less(t, len(r.Detail), 1500)
}

// TestCourierNotStartedOnCanceledContext: no process starts for a delivery
// whose context is already done.
func TestCourierNotStartedOnCanceledContext(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.t.Deliver(ctx, transporttest.Session(t, target), msg(t, "too late"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "not a refusal: %v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "courier not started: context canceled")
	started, _, _ := c.started(t)
	assert.False(t, started)
}
