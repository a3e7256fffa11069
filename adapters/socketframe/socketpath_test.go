package socketframe

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

// Where Claude Code's darwin build 2.1.328 binds a session's inbox
// (docs/CLAUDE-CODE-FACTS.md): at most 103 bytes, else the fallback folder.
func TestClaudeSocketPath(t *testing.T) {
	long := "/Users/someone/" + strings.Repeat("x", 80)
	for _, tc := range []struct {
		name string
		env  SocketEnv
		want string
	}{
		{"nothing set: /tmp", SocketEnv{UID: 501, PID: 4652}, "/tmp/cc-socks/4652.sock"},
		{"XDG_RUNTIME_DIR first", SocketEnv{XDGRuntimeDir: "/run/user/501", ClaudeCodeTmpdir: "/var/t", UID: 501, PID: 4652}, "/run/user/501/cc-socks/4652.sock"},
		{"then CLAUDE_CODE_TMPDIR", SocketEnv{ClaudeCodeTmpdir: "/private/var/folders/zz/T", UID: 501, PID: 4652}, "/private/var/folders/zz/T/cc-socks/4652.sock"},
		{"too long: the uid's fallback folder", SocketEnv{ClaudeCodeTmpdir: long, UID: 501, PID: 4652}, "/tmp/cc-socks-501/4652.sock"},
		{"too long on Termux", SocketEnv{XDGRuntimeDir: long, TermuxVersion: "0.118", Prefix: "/data/data/com.termux/files/usr", UID: 10123, PID: 7},
			"/data/data/com.termux/files/usr/tmp/cc-socks-10123/7.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClaudeSocketPath(tc.env)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), ClaudeMaxSocketPath)
		})
	}
	// 103 bytes exactly stays; 104 moves.
	dir := "/" + strings.Repeat("d", 103-len("/cc-socks/4652.sock")-1)
	at := ClaudeSocketPath(SocketEnv{ClaudeCodeTmpdir: dir, UID: 501, PID: 4652})
	require.Len(t, at, 103)
	assert.Equal(t, dir+"/cc-socks/4652.sock", at)
	assert.Equal(t, "/tmp/cc-socks-501/4652.sock", ClaudeSocketPath(SocketEnv{ClaudeCodeTmpdir: dir + "d", UID: 501, PID: 4652}))
}

func sessionAt(t *testing.T, socket string) domain.Session {
	return transporttest.Session(t, domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
		SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: socket})
}

func reason(t *testing.T, err error) domain.Reason {
	t.Helper()
	var r *domain.Refusal
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	return r.Reason
}

func TestCheckTargetOn(t *testing.T) {
	p103 := "/" + strings.Repeat("s", 102)
	p104 := p103 + "s"
	p108 := p104 + "ssss"
	for _, tc := range []struct {
		name, goos, path string
		refused          bool
		want             domain.Reason
	}{
		{"a Mac takes 103 bytes", "darwin", p103, false, 0},
		{"a Mac refuses 104 bytes, never truncates", "darwin", p104, true, domain.ReasonDeliveryFailed},
		{"Linux takes 107 bytes", "linux", p108[:107], false, 0},
		{"Linux refuses 108", "linux", p108, true, domain.ReasonDeliveryFailed},
		{"Windows refuses every socket post: the inbox needs an auth line", "windows", `\\.\pipe\LOCAL\cc-msg-0123456789abcdef0123456789abcdef`, true, domain.ReasonHarnessUnsupported},
		{"no socket is not addressable, on any OS", "windows", "", true, domain.ReasonNotAddressable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkTargetOn(tc.goos, sessionAt(t, tc.path))
			if !tc.refused {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tc.want, reason(t, err))
			if tc.want == domain.ReasonHarnessUnsupported {
				assert.Contains(t, err.Error(), "auth line")
				assert.Contains(t, err.Error(), "courier")
			}
		})
	}
}
