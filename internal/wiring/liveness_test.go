package wiring_test

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// recordForms are the harnesses whose records write a process's start and
// pid domain otherwise than procliveness reads them (field 22 of
// /proc/<pid>/stat as text; "linux:<machine-id>:pid:[<inode>]"), which
// Claude Code's registry, and the records Codex's and opencode's registries
// build, use. Qwen Code's registry writes "<boot id>:<ticks>" and the pid
// namespace's inode (docs/QWEN-CODE-FACTS.md). A harness with a form of
// its own adds it here, or its own pid's record is not found live.
var recordForms = map[string]func(p procSelf, ticks string) (procStart, pidDomain string){
	"qwen-code": func(p procSelf, ticks string) (string, string) { return p.boot + ":" + ticks, p.nsInode },
}

// procSelf is what /proc says of this process.
type procSelf struct {
	ticks, boot, nsInode, domain string
}

func readProcSelf(t testing.TB) procSelf {
	t.Helper()
	p := procSelf{ticks: startOf(t, os.Getpid())}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		p.boot = strings.TrimSpace(string(b))
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	p.nsInode = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	if id, err := os.ReadFile("/etc/machine-id"); err == nil && len(bytes.TrimSpace(id)) > 0 {
		p.domain = "linux:" + string(bytes.TrimSpace(id)) + ":" + ns
	}
	return p
}

// startOf is field 22 (starttime) of /proc/<pid>/stat: the command name
// runs to the last ')' (runc), and starttime is the 20th field after it.
func startOf(t testing.TB, pid int) string {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	i := bytes.LastIndexByte(stat, ')')
	require.Positive(t, i, "%q", stat)
	fields := strings.Fields(string(stat[i+1:]))
	require.Greater(t, len(fields), 19, "%q", stat)
	return fields[19]
}

// livenessContract: the harness's Liveness finds a record of this very
// process, with its real start time, live; the same record with another
// start time reused; and a record of a pid that has exited stale.
func livenessContract(t *testing.T, h ports.Harness) {
	if runtime.GOOS != "linux" {
		t.Skip("the records are built from /proc")
	}
	self := readProcSelf(t)
	form := func(p procSelf, ticks string) (string, string) { return ticks, p.domain }
	if f, ok := recordForms[h.Kind().String()]; ok {
		form = f
	}
	record := func(pid int, ticks string) domain.Record {
		start, dom := form(self, ticks)
		return domain.Record{Harness: h.Kind(), PID: pid, ProcStart: start, PIDDomain: dom}
	}
	reused := func() string { return "reused" }

	pid := os.Getpid()
	own := record(pid, self.ticks)
	l := h.Liveness().Check(own)
	assert.Equal(t, domain.Yes, l.Alive, "this process's record %+v: %+v", own, l)
	assert.Equal(t, domain.Yes, l.StartMatches, "this process's record %+v: %+v", own, l)
	assert.NotEqual(t, domain.No, l.DomainMatches, "this process's record %+v: %+v", own, l)
	v, why := domain.PIDVerdict(own, l, reused)
	assert.Equal(t, domain.VerdictLive, v, "this process's record: %s", why)

	n, err := strconv.ParseUint(self.ticks, 10, 64)
	require.NoError(t, err)
	other := record(pid, strconv.FormatUint(n+1, 10))
	l = h.Liveness().Check(other)
	assert.Equal(t, domain.No, l.StartMatches, "a record of this pid with another start %+v: %+v", other, l)
	v, _ = domain.PIDVerdict(other, l, reused)
	assert.Equal(t, domain.VerdictReused, v)

	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := record(cmd.Process.Pid, self.ticks)
	l = h.Liveness().Check(dead)
	assert.Equal(t, domain.No, l.Alive, "a record of a pid that exited %+v: %+v", dead, l)
	v, why = domain.PIDVerdict(dead, l, reused)
	assert.Equal(t, domain.VerdictStale, v, why)
}
