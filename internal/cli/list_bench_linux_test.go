//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

// BenchmarkListCommand is `peerctl list --json` run in process, as the
// program runs it less the process start (its package initialisation and
// the runtime's): the command tree, the read graph, the registry read and
// the JSON. The registry holds 2 live records (this process and its
// parent) and 1,000 stale ones, no other harness has state. Its
// allocations are the heap a list touches: on a fresh process every page
// of it is a page fault (docs/PERFORMANCE.md, seventh round). For a
// profile: go test -run '^$' -bench ListCommand -cpuprofile cpu.out
// -memprofile mem.out ./internal/cli
func BenchmarkListCommand(b *testing.B) {
	home := b.TempDir()
	dir := filepath.Join(home, ".claude", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	write := func(pid int, start string) {
		rec := fmt.Sprintf(`{"pid":%d,"sessionId":"%08x-d23c-4223-a45d-b9ec61fda652","cwd":"/home/dev/src/shop","startedAt":1796027521308,"procStart":"%s","version":"2.1.328","peerProtocol":1,"kind":"interactive","entrypoint":"cli","messagingSocketPath":"/tmp/cc-socks/%d.sock","name":"bench-%d","nameSource":"derived","status":"idle","updatedAt":1796027533912}`, pid, pid, start, pid, pid)
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), []byte(rec), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte(`{"peerToken":"x"}`), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, pid := range []int{os.Getpid(), os.Getppid()} {
		start, err := procliveness.StartTime("/proc", pid)
		if err != nil {
			b.Skipf("no start time for pid %d: %v", pid, err)
		}
		write(pid, start)
	}
	for pid, n := 1<<22-1, 0; n < 1000 && pid > 300; pid-- {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			write(pid, strconv.Itoa(1000+pid))
			n++
		}
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	b.ReportAllocs()
	for b.Loop() {
		var out bytes.Buffer
		if code := run([]string{"list", "--json"}, strings.NewReader(""), &out, io.Discard, getenv, nil, nil, nil, nil); code != 0 || strings.Count(out.String(), `"sessionId"`) != 2 {
			b.Fatalf("list: exit %d, %s", code, out.String())
		}
	}
}
