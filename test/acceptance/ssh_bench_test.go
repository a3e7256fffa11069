//go:build linux

package acceptance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livessh"
)

// BenchmarkLiveSSH (PEERCTL_LIVE=1, as root; part of `make bench`)
// measures peerctl across hosts on three second machines (test/livessh),
// a real Claude Code session behind the first and one here, each pair
// timed back to back in the same run (ABBA order, BENCH_RUNS pairs,
// default 10), the ratio taken pair by pair (docs/PERFORMANCE.md, "Across
// hosts"):
//
//   - list-host: `list --host far --json` over the warm shared connection
//     / `ssh far true` over that same connection + a local `list --json`;
//   - send-host: `send --host far --transport socket --no-confirm` /
//     `ssh far true` (warm) + a local `send --transport socket --no-confirm`;
//   - list-3-hosts: `list --host far --host far2 --host far3 --json` / the
//     slowest of the three single-host lists timed right before it;
//   - first-connection: `list --host far --json` with no shared connection
//     (a fresh control folder) / the same warm.
//
// One iteration runs it all once; use -benchtime=1x.
func BenchmarkLiveSSH(b *testing.B) {
	livessh.Require(b)
	bin := livecc.Require(b, KnownNewestClaudeCode)
	machines := []*livessh.Machine{livessh.Start(b, "far"), livessh.Start(b, "far2"), livessh.Start(b, "far3")}
	far := machines[0]
	one := far.StartClaude(bin, livessh.SessionOptions{Label: "one", Name: "far-one", WaitSettled: true})
	here := livecc.Start(b, bin, livecc.Options{Name: "here-one", WaitSettled: true})
	run := livecc.TempRoot(b, "lsr")
	sshCmd := livessh.SSHCommand(b, machines...)
	env := append(livecc.Scrub(os.Environ()), "HOME="+b.TempDir(), "XDG_CONFIG_HOME="+b.TempDir(), "XDG_RUNTIME_DIR="+run,
		"PEERCTL_SSH="+sshCmd, "CLAUDE_CONFIG_DIR="+here.ConfigDir)
	peerctl := peerctlBin(b)
	must := func(args ...string) {
		b.Helper()
		if out, err := command(env, peerctl, args...).CombinedOutput(); err != nil {
			b.Fatalf("peerctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for i, m := range machines {
		cfg := one.ConfigDir
		if i > 0 {
			cfg = filepath.Join(m.Home, "empty")
			if _, err := m.SSH(b.Context(), nil, "mkdir", "-p", cfg+"/sessions"); err != nil {
				b.Fatal(err)
			}
		}
		must("hosts", "add", m.Alias, "--set", "config-dir="+cfg)
		must("hosts", "install", m.Alias)
	}
	// `ssh far true` over a warm shared connection of its own (its own
	// master, in the same folder as peerctl's), as peerctl's calls ride
	// theirs.
	control := filepath.Join(run, "peerctl-ssh-"+strconv.Itoa(os.Geteuid()), "bench-%C")
	sshTrue := append(strings.Fields(sshCmd), "-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPath="+control, "-o", "ControlPersist=60", "--", far.Alias, "true")
	text := "the API changed, rebase on main (bench)"
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n >= 3 {
		runs = n
	}
	timed := func(argvs ...[]string) time.Duration {
		start := time.Now()
		for _, argv := range argvs {
			if out, err := command(env, argv[0], argv[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
		}
		return time.Since(start)
	}
	pc := func(args ...string) []string { return append([]string{peerctl}, args...) }
	listHost := pc("list", "--host", far.Alias, "--json")
	for b.Loop() {
		type row struct {
			key, label string
			a, b, r    []float64
		}
		var rows []row
		pair := func(key, label string, a, bb func() time.Duration) {
			a()
			bb()
			rw := row{key: key, label: label}
			for i := range runs {
				var ta, tb time.Duration
				if i%2 == 0 {
					ta, tb = a(), bb()
				} else {
					tb, ta = bb(), a()
				}
				rw.a, rw.b, rw.r = append(rw.a, ms(ta)), append(rw.b, ms(tb)), append(rw.r, float64(ta)/float64(tb))
			}
			rows = append(rows, rw)
		}
		pair("list-host", "list --host far --json / ssh far true + local list --json (warm)",
			func() time.Duration { return timed(listHost) },
			func() time.Duration { return timed(sshTrue, pc("list", "--json")) })
		pair("send-host", "send --host --transport socket / ssh far true + local socket send (warm)",
			func() time.Duration {
				return timed(pc("send", "--host", far.Alias, "--transport", "socket", "--no-confirm", "far-one", text))
			},
			func() time.Duration {
				return timed(sshTrue, pc("send", "--transport", "socket", "--no-confirm", "here-one", text))
			})
		pair("list-3-hosts", "list across 3 hosts / the slowest single host, timed just before",
			func() time.Duration {
				return timed(pc("list", "--json", "--host", "far", "--host", "far2", "--host", "far3"))
			},
			func() time.Duration {
				var slowest time.Duration
				for _, m := range machines {
					slowest = max(slowest, timed(pc("list", "--json", "--host", m.Alias)))
				}
				return slowest
			})
		pair("first-connection", "list --host far --json, first connection / warm",
			func() time.Duration {
				cold := slices.Clone(env)
				cold = append(cold, "XDG_RUNTIME_DIR="+livecc.TempRoot(b, "lsc"))
				start := time.Now()
				if out, err := command(cold, peerctl, listHost[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("cold list: %v\n%s", err, out)
				}
				return time.Since(start)
			},
			func() time.Duration { return timed(listHost) })
		var report strings.Builder
		fmt.Fprintf(&report, "\nACROSS HOSTS (%d pairs each, ABBA; wall ms median [min..max]; A/B per pair)\n", runs)
		for _, rw := range rows {
			ra, rb, rr := stat(rw.a), stat(rw.b), stat(rw.r)
			fmt.Fprintf(&report, "  %-72s A %.1f [%.1f..%.1f]  B %.1f [%.1f..%.1f]  A/B %.2f [%.2f..%.2f]\n",
				rw.label, ra[0], ra[1], ra[2], rb[0], rb[1], rb[2], rr[0], rr[1], rr[2])
			b.ReportMetric(rr[0], rw.key+"-x")
		}
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Fprintf(&report, "  %d CPUs, load average %s at the end\n", runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
		b.Log(report.String())
	}
}

func command(env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	return cmd
}

// stat is the median, min and max of v.
func stat(v []float64) [3]float64 {
	s := slices.Sorted(slices.Values(v))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return [3]float64{m, s[0], s[len(s)-1]}
}
