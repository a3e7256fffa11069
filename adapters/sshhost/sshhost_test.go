package sshhost_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/test/testbin"
)

func TestMain(m *testing.M) {
	// The far sides here print Claude Code's endpoints: a stand-in of its
	// spec (the adapter's own is another harness's package).
	domain.RegisterZeroHarness(domain.HarnessSpec{Word: "claude-code", Title: "Claude Code", Prefix: "cc-peer:v1:", Pins: "name",
		Key: func(r domain.Record) string { return r.Name }, Unaddressable: func(domain.Record) string { return "" }})
	code := m.Run()
	code = testbin.Cleanup(code)
	os.Exit(code)
}

// trickyWords are arguments a shell would act on if they were not quoted.
func trickyWords() map[string]string {
	return map[string]string{
		"quote break":  "a'; touch x; '",
		"substitution": "$(touch x)",
		"backticks":    "`touch x`",
		"variable":     "$HOME ${PATH}",
		"newlines":     "line 1\nline 2\r\n; touch x\n",
		"glob":         "* ? [a-z]",
		"backslashes":  `\' \" \\ \n`,
		"double quote": `"; touch x; "`,
		"empty":        "",
		"option":       "-n",
		"operators":    "a && touch x || touch x | touch x > x < x & ;",
		"not utf-8":    "\xff\xfe",
		"escape":       "\x1b[2J\u202e",
		"comment":      "# touch x",
		"tilde":        "~root",
		"64 KiB":       strings.Repeat("'$(x)`", 64*1024/6),
	}
}

func TestCommandLine(t *testing.T) {
	assert.Equal(t, `'peerctl' 'send' '--' 'a'\''b' ''`, sshhost.CommandLine([]string{"peerctl", "send", "--", "a'b", ""}))
}

func clipq(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

type book map[string]ports.HostSettings

func (b book) Host(d domain.Dest) (ports.HostSettings, error) { return b[d.String()], nil }

func dest(t *testing.T, s string) domain.Dest {
	t.Helper()
	d, err := domain.ParseDest(s)
	require.NoError(t, err)
	return d
}

func TestArgv(t *testing.T) {
	run := t.TempDir()
	c, err := sshhost.New(sshhost.Options{Getenv: env(map[string]string{"XDG_RUNTIME_DIR": run}),
		Book: book{"box": {Program: ".cache/peerctl/v1/peerctl", Env: map[string]string{"CLAUDE_CONFIG_DIR": "/home/u/.claude work", "PEERCTL_CLAUDE": "/opt/cl'aude"}}}})
	require.NoError(t, err)
	argv, err := c.Argv(ports.RemoteCall{Dest: dest(t, "box"), Args: []string{"send", "--json", "--", "a'; touch x; '", "-"}})
	require.NoError(t, err)
	sep := len(argv) - 3
	require.Equal(t, "--", argv[sep], "the destination follows --")
	assert.Equal(t, "box", argv[sep+1])
	assert.Equal(t, `'env' 'CLAUDE_CONFIG_DIR=/home/u/.claude work' 'PEERCTL_CLAUDE=/opt/cl'\''aude' '.cache/peerctl/v1/peerctl' '--hello=`+strconv.Itoa(ports.RemoteProtocol)+`' 'send' '--json' '--' 'a'\''; touch x; '\''' '-'`, argv[sep+2])
	opts := strings.Join(argv[:sep], " ")
	assert.Equal(t, "ssh", argv[0])
	assert.Contains(t, opts, "-o BatchMode=yes")
	assert.Contains(t, opts, "-o ConnectTimeout=10")
	assert.Contains(t, opts, "-o ServerAliveInterval=15 -o ServerAliveCountMax=2", "a hung network ends a call")
	assert.NotContains(t, strings.ToLower(opts), "stricthostkeychecking")
	assert.NotContains(t, strings.ToLower(opts), "userknownhostsfile")
	if sshhost.SharesConnections {
		assert.Contains(t, opts, "-o ControlMaster=no", "a call uses a master, never becomes one")
		assert.NotContains(t, opts, "ControlPersist")
		ctl := filepath.Join(run, "peerctl-ssh-"+itoa(os.Geteuid()))
		assert.Regexp(t, `-o ControlPath=`+regexp.QuoteMeta(ctl)+`/[0-9a-f]{20}$`, opts, "named by the host's whole configuration (ssh -G), not %C")
		fi, err := os.Lstat(ctl)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	}
	_, err = c.Argv(ports.RemoteCall{})
	assert.Error(t, err, "no destination")
	for _, bad := range []ports.HostSettings{{Program: "-oProxyCommand=x"}, {Program: "A=b"}, {Env: map[string]string{"A B": "x"}}} {
		c, err := sshhost.New(sshhost.Options{Book: book{"box": bad}})
		require.NoError(t, err)
		_, err = c.Argv(ports.RemoteCall{Dest: dest(t, "box")})
		assert.Error(t, err, "%+v", bad)
	}
}

// TestControlDirOpenToOthers: a folder others can enter is not used for
// the control sockets; connections are then not shared.
func TestControlDirOpenToOthers(t *testing.T) {
	if !sshhost.SharesConnections {
		t.Skip("no connection sharing here")
	}
	run := t.TempDir()
	ctl := filepath.Join(run, "peerctl-ssh-"+itoa(os.Geteuid()))
	require.NoError(t, os.Mkdir(ctl, 0o755))
	require.NoError(t, os.Chmod(ctl, 0o755))
	c, err := sshhost.New(sshhost.Options{Getenv: env(map[string]string{"XDG_RUNTIME_DIR": run})})
	require.NoError(t, err)
	argv, err := c.Argv(ports.RemoteCall{Dest: dest(t, "box")})
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(argv, " "), "ControlPath")
	assert.Contains(t, c.SharingOff(), "open to others")
}

func TestProgram(t *testing.T) {
	for line, want := range map[string][]string{
		"":                                  {"ssh"},
		"ssh -F ~/work/ssh_config":          {"ssh", "-F", "/home/u/work/ssh_config"},
		`'/opt/my ssh' -o "User=a b" -p 22`: {"/opt/my ssh", "-o", "User=a b", "-p", "22"},
		`ssh $(touch x) ; rm -rf y`:         {"ssh", "$(touch", "x)", ";", "rm", "-rf", "y"},
	} {
		got, err := sshhost.Program(env(map[string]string{"PEERCTL_SSH": line, "HOME": "/home/u"}))
		require.NoError(t, err, line)
		assert.Equal(t, want, got, line)
	}
	for _, line := range []string{`ssh "unterminated`, `ssh 'x`, "   ", "\t"} {
		_, err := sshhost.Program(env(map[string]string{"PEERCTL_SSH": line}))
		assert.ErrorIs(t, err, sshhost.ErrBadSSH, line)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// Two aliases with one HostName, port and user that reach different
// machines (other ProxyCommand, ProxyJump or HostKeyAlias) never share a
// connection: ssh's %C would name one socket for both (issue 27, bad 2).
// The same alias twice shares one; an ssh whose -G fails shares nothing.
func TestControlPathIsTheWholeConfiguration(t *testing.T) {
	if !sshhost.SharesConnections {
		t.Skip("no connection sharing on this platform")
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("needs OpenSSH's ssh (ssh -G reads configuration only)")
	}
	cfg := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(cfg, []byte(`Host boxA
  HostName 10.0.0.5
  User u
  ProxyCommand nc bastion-a %h %p
Host boxB
  HostName 10.0.0.5
  User u
  ProxyCommand nc bastion-b %h %p
Host boxC
  HostName 10.0.0.5
  User u
  ProxyJump jump-c
Host boxD
  HostName 10.0.0.5
  User u
  HostKeyAlias other
`), 0o600))
	c, err := sshhost.New(sshhost.Options{Getenv: env(map[string]string{"XDG_RUNTIME_DIR": t.TempDir(), "PEERCTL_SSH": "ssh -F " + cfg})})
	require.NoError(t, err)
	path := func(alias string) string {
		argv, err := c.Argv(ports.RemoteCall{Dest: dest(t, alias), Args: []string{"list"}})
		require.NoError(t, err)
		for _, a := range argv {
			if p, ok := strings.CutPrefix(a, "ControlPath="); ok {
				return p
			}
		}
		t.Fatalf("no ControlPath in %q", argv)
		return ""
	}
	seen := map[string]string{}
	for _, alias := range []string{"boxA", "boxB", "boxC", "boxD"} {
		p := path(alias)
		assert.NotContains(t, p, "%C")
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share the control socket %s", alias, other, p)
		}
		seen[p] = alias
	}
	assert.Equal(t, path("boxA"), path("boxA"), "the same alias shares its connection")

	var warned []string
	bad, err := sshhost.New(sshhost.Options{Getenv: env(map[string]string{"XDG_RUNTIME_DIR": t.TempDir(), "PEERCTL_SSH": "/bin/false"}),
		Warn: func(s string) { warned = append(warned, s) }})
	require.NoError(t, err)
	for range 2 {
		argv, err := bad.Argv(ports.RemoteCall{Dest: dest(t, "boxA"), Args: []string{"list"}})
		require.NoError(t, err)
		assert.Contains(t, strings.Join(argv, " "), "-o ControlMaster=no -o ControlPath=none", "no configuration to name a socket by: nothing shared")
	}
	// Said, not only under --debug, and once for the destination.
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], "connection sharing off for boxA: `ssh -G` failed (exit status 1)")
}
