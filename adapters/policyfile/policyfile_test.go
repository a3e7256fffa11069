package policyfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/policyfile"
	"github.com/peerctl/peerctl/domain"
)

func TestParse(t *testing.T) {
	rules, err := policyfile.Parse([]byte("# mine\n\n  deny from=mcp to=prod-* cwd='/srv/my prod'\t\nallow to=* from=mcp:reviewer-* host=build-box\r\n"))
	require.NoError(t, err)
	require.Len(t, rules, 2)
	assert.Equal(t, "deny from=mcp to=prod-* cwd=/srv/my prod", rules[0].String())
	assert.Equal(t, "allow from=mcp:reviewer-* to=* host=build-box", rules[1].String())
}

func TestParseMalformedNamesTheLine(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"unknown action":     {"# c\npermit from=cli to=*\n", "line 2: bad policy rule: action \"permit\""},
		"no from":            {"allow to=*\n", "line 1: from= is missing"},
		"a word without =":   {"allow from=cli to=* prod\n", "line 1: want ACTION from=SENDER"},
		"unknown key":        {"allow from=cli to=* user=x\n", "line 1: unknown key \"user\""},
		"key twice":          {"allow from=cli to=a to=b\n", "line 1: to is set twice"},
		"empty harness":      {"allow from=cli to=* harness=\n", "line 1: harness is empty"},
		"unclosed quote":     {"\n\nallow from=cli to=* cwd='/srv\n", "line 3: Unterminated single-quoted string"},
		"escape sequence":    {"allow from=cli to=prod\x1b[31m\n", "line 1: holds a control character"},
		"NUL":                {"allow from=cli\x00 to=*\n", "line 1: holds a control character"},
		"control in comment": {"# \x07\n", "line 1: holds a control character"},
		"not UTF-8":          {"allow from=cli to=\xff\n", "line 1: not UTF-8"},
		"bad glob":           {"deny from=mcp to=[\n", "line 1: bad policy rule: to \"[\" is not a glob"},
		"space in a glob":    {"deny from=mcp to='a b'\n", "line 1: bad policy rule: to \"a b\" holds a space"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := policyfile.Parse([]byte(tc.text))
			require.ErrorIs(t, err, policyfile.ErrMalformed)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestSaveRulesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "peerctl", "policy")
	f := policyfile.New(path, os.Getuid())
	rules, err := f.Rules()
	require.NoError(t, err, "no file is no rules")
	assert.Empty(t, rules)
	want, err := policyfile.Parse([]byte(`deny from=mcp to=prod-* cwd='/srv/it'\''s "prod"'` + "\n" + `hold from=relay:\* to=x\\y` + "\n" + `allow from=* to=* host=u@[::1]` + "\n"))
	require.NoError(t, err)
	require.Equal(t, `/srv/it's "prod"`, want[0].To.Cwd())
	require.Equal(t, `relay:*`, want[1].From.String(), `\* is the shell's escape of *`)
	require.NoError(t, f.Save(want))
	got, err := f.Rules()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "\nhold from=relay:* to='x\\y'\n")
}

func TestRulesRefusesAnUnsafeFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "real")
	require.NoError(t, os.WriteFile(good, []byte("allow from=* to=*\n"), 0o600))

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(good, link))
	_, err := policyfile.New(link, os.Getuid()).Rules()
	require.ErrorIs(t, err, policyfile.ErrUnsafe)
	assert.Contains(t, err.Error(), "is a symlink")
	require.ErrorIs(t, policyfile.New(link, os.Getuid()).Save(nil), policyfile.ErrUnsafe, "a symlink is not written through")

	for _, mode := range []os.FileMode{0o666, 0o620, 0o602} {
		require.NoError(t, os.Chmod(good, mode))
		_, err = policyfile.New(good, os.Getuid()).Rules()
		require.ErrorIs(t, err, policyfile.ErrUnsafe, "%04o", mode)
		assert.Contains(t, err.Error(), "writable by its group or others")
	}
	require.NoError(t, os.Chmod(good, 0o644))
	_, err = policyfile.New(good, os.Getuid()).Rules()
	require.NoError(t, err, "readable by others is fine")

	_, err = policyfile.New(good, os.Getuid()+1).Rules()
	require.ErrorIs(t, err, policyfile.ErrUnsafe)
	assert.Contains(t, err.Error(), "not by this user")

	_, err = policyfile.New(dir, os.Getuid()).Rules()
	require.ErrorIs(t, err, policyfile.ErrUnsafe)
	assert.Contains(t, err.Error(), "not a regular file")
}

func TestRulesNamesTheFileAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte("allow from=cli to=*\ndeny from=mcp to=*\x1b]0;owned\x07\n"), 0o600))
	_, err := policyfile.New(path, os.Getuid()).Rules()
	require.ErrorIs(t, err, policyfile.ErrMalformed)
	assert.True(t, strings.HasPrefix(err.Error(), path+": "), err.Error())
	assert.Contains(t, err.Error(), "line 2: holds a control character")
}

// Ten thousand rules read and decide.
func TestTenThousandRules(t *testing.T) {
	var b strings.Builder
	for range 10000 {
		b.WriteString("deny from=mcp:reviewer-* to=prod-* cwd=/srv/prod\n")
	}
	rules, err := policyfile.Parse([]byte(b.String()))
	require.NoError(t, err)
	require.Len(t, rules, 10000)
	d := domain.Decide(rules, domain.NewSender(domain.EntranceCLI, ""), domain.AddressTarget("dev", ""))
	assert.Equal(t, domain.ActionAllow, d.Action)
}

func TestPath(t *testing.T) {
	p, err := policyfile.Path(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": "/cfg"}[k] })
	require.NoError(t, err)
	assert.Equal(t, "/cfg/peerctl/policy", p)
}
