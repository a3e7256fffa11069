package hostsfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/hostsfile"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// schema is the settings of two harnesses, as the plug-ins' flags give
// them.
var schema = hostsfile.NewSchema([]ports.HarnessFlag{
	{Name: "config-dir", Env: "CLAUDE_CONFIG_DIR"}, {Name: "claude", Env: "PEERCTL_CLAUDE"},
	{Name: "qwen-home", Env: "QWEN_HOME"}, {Name: "qwen", Env: "PEERCTL_QWEN"},
})

func dest(t *testing.T, s string) domain.Dest {
	d, err := domain.ParseDest(s)
	require.NoError(t, err)
	return d
}

func TestParse(t *testing.T) {
	hosts, err := schema.Parse([]byte("# mine\n\n[build-box]\n  peerctl = /home/dev/My Tools/peerctl \nconfig-dir=/home/dev/.claude\n[dev@10.0.0.7]\nclaude = /opt/claude\n"))
	require.NoError(t, err)
	require.Len(t, hosts, 2)
	assert.Equal(t, hostsfile.Host{Dest: dest(t, "build-box"), Peerctl: "/home/dev/My Tools/peerctl", Settings: map[string]string{"config-dir": "/home/dev/.claude"}}, hosts[0])
	assert.Equal(t, hostsfile.Host{Dest: dest(t, "dev@10.0.0.7"), Settings: map[string]string{"claude": "/opt/claude"}}, hosts[1])
}

func TestParseMalformedNamesTheLine(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"key before a host":   {"peerctl = /x\n", "line 1: \"peerctl\" comes before any [DEST]"},
		"unclosed section":    {"# c\n[far\n", "line 2: a section is [DEST]"},
		"option as host":      {"[-oProxyCommand=x]\n", "line 1: bad host"},
		"space in host":       {"[a b]\n", "line 1: bad host"},
		"no equals":           {"[far]\npeerctl /x\n", "line 2: want [DEST] or KEY = VALUE"},
		"unknown key":         {"[far]\nproxy = x\n", "line 2: unknown key \"proxy\""},
		"empty value":         {"[far]\nclaude =\n", "line 2: claude: empty value"},
		"key twice":           {"[far]\nclaude = a\nclaude = b\n", "line 3: claude is set twice for far"},
		"host twice":          {"[far]\n[near]\n[far]\n", "line 3: host \"far\" is listed twice"},
		"control character":   {"[far]\nclaude = a\x1b[31mb\n", "line 2: claude: holds a control character"},
		"not UTF-8":           {"[far]\nclaude = \xff\n", "line 2: not UTF-8"},
		"peerctl set twice":   {"[far]\npeerctl = a\npeerctl = b\n", "line 3: peerctl is set twice"},
		"a section with text": {"[far] x\n", "line 1: a section is [DEST]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := schema.Parse([]byte(tc.text))
			require.ErrorIs(t, err, hostsfile.ErrMalformed)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "peerctl", "hosts")
	hosts, err := schema.Load(path)
	require.NoError(t, err, "a missing file is no hosts")
	assert.Empty(t, hosts)
	want := []hostsfile.Host{
		{Dest: dest(t, "far"), Peerctl: "/home/u/.cache/peerctl/bin/v1-0123456789ab/peerctl", Settings: map[string]string{"config-dir": "/home/u/cc", "claude": "/opt/c l"}},
		{Dest: dest(t, "u@[::1]")},
	}
	require.NoError(t, schema.Save(path, want))
	got, err := schema.Load(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	fi, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the folder peerctl made")

	err = schema.Save(path, []hostsfile.Host{{Dest: dest(t, "far"), Settings: map[string]string{"claude": "a\nb"}}})
	assert.ErrorContains(t, err, "control character", "a value that would break a line is refused")
	got, err = schema.Load(path)
	require.NoError(t, err)
	assert.Equal(t, want, got, "a refused save leaves the file")
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(path, []byte("[far]\nnope\n"), 0o600))
	_, err := schema.Load(path)
	require.ErrorIs(t, err, hostsfile.ErrMalformed)
	assert.True(t, strings.HasPrefix(err.Error(), path+": "), err.Error())

	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("#", hostsfile.MaxBytes+1)), 0o600))
	_, err = schema.Load(path)
	assert.ErrorIs(t, err, hostsfile.ErrMalformed, "a file over the bound")
}

func TestPath(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": "/x/cfg"}
	p, err := hostsfile.Path(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/x/cfg", "peerctl", "hosts"), p)
}

// The settings are the flags the schema is made of: a harness added (a
// flag with its variable) is a key of every host, reaching the far side as
// its variable; a flag without a variable, or named peerctl, is none.
func TestSchemaIsTheFlags(t *testing.T) {
	s := hostsfile.NewSchema([]ports.HarnessFlag{{Name: "config-dir", Env: "CLAUDE_CONFIG_DIR"},
		{Name: "zed-home", Env: "ZED_HOME"}, {Name: "local-only"}, {Name: "peerctl", Env: "X"}})
	assert.Equal(t, []string{"config-dir", "zed-home"}, s.Keys())
	hosts, err := s.Parse([]byte("[far]\nzed-home = /z\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ZED_HOME": "/z"}, s.Remote(hosts[0]).Env)
	_, err = s.Parse([]byte("[far]\nlocal-only = x\n"))
	require.ErrorIs(t, err, hostsfile.ErrMalformed)
	assert.Contains(t, err.Error(), `unknown key "local-only" (known: peerctl, config-dir, zed-home)`)
	_, err = schema.Parse([]byte("[far]\nzed-home = /z\n"))
	require.ErrorIs(t, err, hostsfile.ErrMalformed, "another schema does not know the key")
}
