package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
)

// A process's role is decided by its subcommand, found past the global
// options of `codex` 0.171.0 (`codex --help`): those that take a value
// (attached or not), the flags, -i's greedy list of images and `--`
// (clap: after them a word is a value or the prompt, not a subcommand).
// A TUI is `codex` with no subcommand, or `resume`/`fork`; `exec` (alias
// `e`) and `review` are headless runs; any other subcommand is no client.
func TestRoleSkipsGlobalOptions(t *testing.T) {
	lock := []string{threadN}
	for _, tc := range []struct {
		args  []string
		locks []string
		want  string
	}{
		{[]string{"codex"}, nil, KindClient},
		{[]string{"codex", "hello"}, nil, KindClient},
		{[]string{"codex", "fix the exec path"}, nil, KindClient},
		{[]string{"codex", "--no-daemon", "-m", "m", "hello"}, lock, KindNoDaemon},
		{[]string{"codex", "--no-daemon"}, lock, KindNoDaemon},
		{[]string{"codex", "--no-daemon", "resume", threadN}, lock, KindNoDaemon},
		{[]string{"codex", "resume", "--last"}, nil, KindClient},
		{[]string{"codex", "-c", "k=v", "fork"}, nil, KindClient},
		{[]string{"codex", "-m", "exec"}, nil, KindClient},          // "exec" is -m's value
		{[]string{"codex", "-i", "a.png", "exec"}, nil, KindClient}, // -i takes every word up to an option
		{[]string{"codex", "--", "exec"}, nil, KindClient},          // the prompt "exec"
		{[]string{"codex", "exec", "hi"}, lock, KindExec},
		{[]string{"codex", "e", "hi"}, lock, KindExec},
		{[]string{"codex", "-c", "k=v", "exec", "hi"}, lock, KindExec},
		{[]string{"codex", "-ck=v", "exec"}, lock, KindExec},
		{[]string{"codex", "--config=k=v", "exec"}, lock, KindExec},
		{[]string{"codex", "--model", "m", "exec"}, lock, KindExec},
		{[]string{"codex", "-mm", "e"}, lock, KindExec},
		{[]string{"codex", "--search", "--no-daemon", "exec"}, lock, KindExec},
		{[]string{"codex", "-i", "a.png", "-m", "x", "exec"}, lock, KindExec},
		{[]string{"codex", "-s", "read-only", "-C", "/w", "-a", "never", "--enable", "f", "exec"}, nil, KindExec},
		{[]string{"codex", "review"}, lock, KindExec},
		{[]string{"codex", "-c", "k=v", "queue", "--thread", threadN}, nil, roleTool},
		{[]string{"codex", "--profile", "p", "mcp", "list"}, nil, roleTool},
		{[]string{"codex", "login"}, nil, roleTool},
		{[]string{"codex", "a"}, nil, roleTool},
		{[]string{"codex", "agents"}, nil, roleTool},
		{[]string{"codex", "--help"}, nil, roleTool},
		{[]string{"codex", "-c", "k=v", "app-server", "--listen", "unix://"}, nil, roleDaemon},
		{[]string{"codex", "app-server", "daemon", "pid-update-loop"}, nil, roleDaemon},
		{[]string{"/opt/codex/codex-linux-sandbox", "--sandbox-policy-cwd", "/w/a", "--", "sleep", "30"}, nil, roleHelper},
		{[]string{"codex", "--codex-run-as-apply-patch", "patch"}, nil, roleHelper},
		{[]string{"apply_patch", "patch"}, nil, roleHelper},
	} {
		p := proc{pid: 7, args: tc.args, locks: tc.locks}
		assert.Equal(t, tc.want, p.role(100), "%q", tc.args)
	}
}

// A process's $CODEX_HOME and peerctl's home are compared as real paths:
// a TUI given the link is of the home peerctl names by its target, and
// the other way round (issue 28, case 5, for a TUI that holds no file of
// the home, found by its environment).
func TestHomeOfResolvesSymlinks(t *testing.T) {
	real := filepath.Join(t.TempDir(), "real-codex")
	require.NoError(t, os.MkdirAll(real, 0o755))
	link := filepath.Join(t.TempDir(), "codex-home")
	require.NoError(t, os.Symlink(real, link))
	procRoot := t.TempDir()
	fakeProc(t, procRoot, 500, []string{"codex"}, "/w/a")
	fakeProc(t, procRoot, 501, []string{"codex"}, "/w/b")
	fakeProc(t, procRoot, 502, []string{"codex"}, filepath.Dir(link))
	env := func(pid int, home string) {
		require.NoError(t, os.WriteFile(filepath.Join(procRoot, fmt.Sprint(pid), "environ"), []byte("CODEX_HOME="+home+"\x00"), 0o644))
	}
	env(500, link)
	env(501, real+"/")
	env(502, filepath.Base(link)) // relative to its folder
	for _, home := range []string{real, link} {
		var got []int
		for _, p := range scanProcs(procliveness.NewTable(procRoot), home) {
			got = append(got, p.pid)
		}
		assert.ElementsMatch(t, []int{500, 501, 502}, got, "home %s", home)
	}
	assert.Empty(t, scanProcs(procliveness.NewTable(procRoot), t.TempDir()), "another home")
}

// Sandbox helpers and tools under a --no-daemon TUI or a `codex exec` run
// (not only under the daemon) are no clients: named codex, in a thread's
// folder, carrying CODEX_HOME, nobody has a thread open through them
// (issue 28, case 6). Nor is an orphaned codex-linux-sandbox, whatever its
// parent.
func TestHelpersOfAnyCodexAreNoClients(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	home := filepath.Join(w.fake.Home, "state_5.sqlite")
	noDaemonTUI(t, w.fake.Home, w.procRoot, 400, threadN)
	fakeProc(t, w.procRoot, 410, []string{"codex", "exec", "hi"}, "/w/a", home)
	fakeProc(t, w.procRoot, 401, []string{"codex", "--sandbox-policy-cwd", "/w/a"}, "/w/a", home)
	fakeProc(t, w.procRoot, 411, []string{"codex"}, "/w/a", home)
	setParent(t, w.procRoot, 401, 400) // the --no-daemon TUI's helper
	fakeProc(t, w.procRoot, 402, []string{"bash"}, "/w/a")
	require.NoError(t, os.WriteFile(filepath.Join(w.procRoot, "402", "comm"), []byte("bash\n"), 0o644))
	setParent(t, w.procRoot, 402, 410)
	setParent(t, w.procRoot, 411, 402) // under a shell the exec run started
	fakeProc(t, w.procRoot, 420, []string{"/usr/lib/codex/codex-linux-sandbox", "--sandbox-policy-cwd", "/w/a", "--", "sleep", "30"}, "/w/a", home)
	got := w.read(t)
	assert.Equal(t, domain.VerdictHeadless, got[threadA].Verdict, "pid %d", got[threadA].Record.PID)

	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", home)
	got = w.read(t)
	assert.Equal(t, domain.VerdictLive, got[threadA].Verdict, "a TUI of its own is a client")
	assert.Equal(t, 200, got[threadA].Record.PID)
}
