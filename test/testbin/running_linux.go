package testbin

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// proc is one running process.
type proc struct {
	pid, ppid int
	args      string
	// tests names the tests whose temporary folders its working folder
	// and environment name (which test started it).
	tests string
}

// running lists the processes (not zombies) whose executable is bin.
func running(bin string) []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		if exe, err := os.Readlink(dir + "/exe"); err != nil || exe != bin {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: the command runs to the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])) // -1: the whole line
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		args, _ := os.ReadFile(dir + "/cmdline")
		out = append(out, proc{pid: pid, ppid: ppid, args: strings.Join(strings.Fields(strings.ReplaceAll(string(args), "\x00", " ")), " "), tests: testsOf(dir)})
	}
	return out
}

// testName is how a test's temporary folder (t.TempDir) names its test.
var testName = regexp.MustCompile(`/(Test[A-Za-z0-9_]+?)\d*/`)

// testsOf names the tests whose temporary folders the process in dir
// (/proc/PID) works in or has in its environment.
func testsOf(dir string) string {
	cwd, _ := os.Readlink(dir + "/cwd")
	env, _ := os.ReadFile(dir + "/environ")
	var names []string
	for _, m := range testName.FindAllStringSubmatch(cwd+"/\x00"+string(env), -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return strings.Join(names, ", ")
}

// kill ends p with SIGKILL, and its process group when it heads one.
func (p proc) kill() {
	if pgid, err := syscall.Getpgid(p.pid); err == nil && pgid == p.pid {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
}
