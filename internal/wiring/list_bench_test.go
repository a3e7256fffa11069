//go:build linux

package wiring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// BenchmarkList is one `list --json` as the command runs it, less the
// process start: every plug-in built, the registries read, the records
// checked. The Claude Code registry holds 2 live records (this process
// and its parent, with their real starts) and 1,000 stale ones (pids not
// running); the other harnesses are absent (no home, no state: the
// machine of a Claude Code user) or present with their state folder
// (empty: no session), one at a time, and all at once. What a harness
// that is not there costs is "none" against "claude-code only"
// (app.Config.Only, as `list --harness claude-code` reads). Run on a
// quiet machine: `go test -run '^$' -bench List -benchmem
// ./internal/wiring`.
func BenchmarkList(b *testing.B) {
	root := b.TempDir()
	cfgDir := filepath.Join(root, "claude")
	writeBenchRegistry(b, filepath.Join(cfgDir, "sessions"), 1000)
	states := map[string]func(home string){
		"qwen-code": func(home string) { mkdir(b, filepath.Join(home, ".qwen", "sessions")) },
		"codex":     func(home string) { mkdir(b, filepath.Join(home, ".codex")) },
		"opencode":  func(home string) { mkdir(b, filepath.Join(home, ".local", "share", "opencode")) },
	}
	cases := []struct {
		name    string
		present []string
		only    bool
	}{
		{name: "claude-code-only", only: true},
		{name: "absent"},
		{name: "qwen-code-present", present: []string{"qwen-code"}},
		{name: "codex-present", present: []string{"codex"}},
		{name: "opencode-present", present: []string{"opencode"}},
		{name: "all-present", present: []string{"qwen-code", "codex", "opencode"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			home := filepath.Join(root, c.name)
			mkdir(b, home)
			for _, p := range c.present {
				states[p](home)
			}
			env := map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": cfgDir, "QWEN_HOME": filepath.Join(home, ".qwen"),
				"CODEX_HOME": filepath.Join(home, ".codex"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share")}
			cfg := app.Config{Getenv: func(k string) string { return env[k] }}
			if c.only {
				cfg.Only = wiring.Plugins().Kinds()[:1]
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := listOnce(ctx, cfg)
				if err != nil || len(l.Entries) != 2 {
					b.Fatalf("list: %d live, %v", len(l.Entries), err)
				}
			}
		})
	}
}

// listOnce builds the plug-ins and lists the live sessions, as the read
// graph (wiring.ReadModule) does, without fx.
func listOnce(ctx context.Context, cfg app.Config) (app.Listing, error) {
	var hs []ports.Harness
	for _, p := range wiring.Plugins() {
		h, err := p.New(app.NewHarnessSettings(cfg, nil))
		if err != nil {
			return app.Listing{}, err
		}
		hs = append(hs, h)
	}
	set := app.NewHarnesses(hs)
	return app.NewReadService(cfg, set, app.NewRegistry(cfg, set), set.Liveness(), app.PolicyPorts{}).List(ctx, false)
}

func mkdir(b *testing.B, dir string) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
}

// writeBenchRegistry writes n Claude Code records (2.1.328's shape, a key
// file beside each) into dir: this process's and its parent's, live, and
// n-2 of pids that are not running, counted down from pid_max.
func writeBenchRegistry(b *testing.B, dir string, n int) {
	b.Helper()
	mkdir(b, dir)
	self := readProcSelf(b)
	pids := []int{os.Getpid(), os.Getppid()}
	starts := []string{self.ticks, startOf(b, os.Getppid())}
	max := 1 << 22
	if s, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		max, _ = strconv.Atoi(strings.TrimSpace(string(s)))
	}
	for p := max - 1; len(pids) < n && p > 300; p-- {
		if syscall.Kill(p, 0) == syscall.ESRCH {
			pids = append(pids, p)
			starts = append(starts, strconv.Itoa(1000+p))
		}
	}
	old := time.Now().Add(-time.Hour)
	for i, pid := range pids {
		rec := fmt.Sprintf(`{"pid":%d,"sessionId":"%08x-d23c-4223-a45d-b9ec61fda652","cwd":"/home/dev/src/shop","startedAt":1796027521308,"procStart":"%s","version":"2.1.328","peerProtocol":1,"peerFeatures":["notify_idle","reply_across_default_dirs","artifact_yield"],"kind":"interactive","entrypoint":"cli","pidDomain":"%s","asksForConvertedSkills":null,"tmux":"cc3:@2.%%2","messagingSocketPath":"/tmp/cc-socks/%d.sock","name":"bench-%d","nameSource":"derived","nameSince":1796027521308,"status":"idle","updatedAt":1796027533912,"statusUpdatedAt":1796027533912}`,
			pid, pid, starts[i], self.domain, pid, pid)
		f := filepath.Join(dir, strconv.Itoa(pid)+".json")
		if err := os.WriteFile(f, []byte(rec), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(f, old, old); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte(`{"peerToken":"x"}`), 0o600); err != nil {
			b.Fatal(err)
		}
	}
}
