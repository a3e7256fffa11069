package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// xmlEscape writes a launchd plist's strings as encoding/xml's EscapeText
// does, without linking encoding/xml into peerctl: each character XML
// gives a meaning escaped, the line ends kept as references, what XML 1.0
// cannot hold replaced.
func TestXMLEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"&", "&amp;"},
		{"<", "&lt;"},
		{">", "&gt;"},
		{`"`, "&#34;"},
		{"'", "&#39;"},
		{"\t", "&#x9;"},
		{"\n", "&#xA;"},
		{"\r", "&#xD;"},
		{"\x00", "\uFFFD"},
		{"\x1b[31m", "\uFFFD[31m"},
		{"\uFFFE\uFFFF", "\uFFFD\uFFFD"},
		{"\xff", "\uFFFD"},
		{"/Users/a b/bin/peerctl", "/Users/a b/bin/peerctl"},
		{"é\u007f\U0001F600", "é\u007f\U0001F600"},
		{`<key>&"it's"</key>`, "&lt;key&gt;&amp;&#34;it&#39;s&#34;&lt;/key&gt;"},
	} {
		assert.Equal(t, tt.want, xmlEscape(tt.in), "%q", tt.in)
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(tt.in))
		assert.Equal(t, b.String(), xmlEscape(tt.in), "%q: as encoding/xml escapes it", tt.in)
	}
}

// A bad serve flag value is a usage error (exit 2) that names it, before
// anything runs: no service starts, and a service already running for
// the state folder does not hide the typo (its lock is never tried).
func TestServeFlagValuesAreCheckedFirst(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": filepath.Join(home, "state"), "XDG_CACHE_HOME": filepath.Join(home, "cache")}
	p, err := serve.PathsFor(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.Lock), 0o700))
	release, err := wiring.TryServeLock(p.Lock) // a service runs
	require.NoError(t, err)
	defer func() { _ = release() }()
	for _, tc := range []struct{ arg, want string }{
		{"--http=nonsense", `--http "nonsense": want HOST:PORT`},
		{"--http=:99999", `port "99999" is not a port`},
		{"--http=bad_host!:80", `"bad_host!" is neither an IP address nor a host name`},
		{"--http=", `--http "": want HOST:PORT`},
		{"--print-unit=", `--print-unit "": want systemd or launchd`},
		{"--node=bad name", `--node: bad node name: "bad name"`},
	} {
		r := evRun(t, env, nil, "serve", "--idle-exit=1ms", tc.arg)
		assert.Equal(t, wire.ExitUsage, r.code, "%s: %s", tc.arg, r.stderr)
		assert.Contains(t, r.stderr, tc.want, tc.arg)
		assert.NotContains(t, r.stderr, "another peerctl serve", tc.arg)
	}
	for _, ok := range []string{"127.0.0.1:0", ":8080", "localhost:http", "[::1]:0", "[fe80::1%eth0]:80", "dev-box.example:8080"} {
		assert.NoError(t, checkHTTPAddr(ok), ok)
	}
}
