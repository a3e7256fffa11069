// Command fakessh stands in for ssh in tests (PEERCTL_SSH): it takes the
// options peerctl passes, then "--", the destination and the one remote
// command line, and runs that line with `/bin/sh -c` as an sshd runs a
// command for a POSIX login shell, with its stdin, stdout and stderr, exiting
// with its exit code. $FAKESSH_RECORD names a folder where it writes argv
// (one argument per line, as JSON strings) before anything else.
//
// $FAKESSH_MODE plays a broken connection or a hostile far side instead:
//
//	refuse     "Permission denied (publickey)." and exit 255 (ssh's own failure)
//	hostkey    "Host key verification failed." and exit 255
//	drop       a peerctl hello, then the first read of stdin (300 ms at most),
//	           then exit 255
//	huge       a peerctl hello, then bytes without end
//	endless    a peerctl hello, then nothing, never ending
//	silent     nothing at all, never ending
//	malformed  a peerctl hello, then a line that is not JSON, exit 0
//	forged     a peerctl hello, then a text receipt line ("delivered: ..."), exit 0
//	quiet      a peerctl hello, then nothing, exit 0
//	killed     a line on stderr, then killed by SIGKILL before any hello
//	nohello    what the command prints, without its first line (an old peerctl)
//	lingers    the command as usual, then stdout closed and the exit 300 ms
//	           later, as an ssh that shares no connection ends: its stdout
//	           reaches EOF before it has the far side's exit status
//
// `fakessh OPTIONS -G -- DEST` prints a configuration named by DEST (as
// `ssh -G` prints the one it would connect with) and records nothing;
// `-O check -- DEST` says no master runs (exit 255); `-N -f -- DEST`
// plays a master connection started (exit 0), recorded as master-*.
//
// A destination listed in $FAKESSH_DOWN (comma-separated) refuses as
// "refuse" does; the others run normally. While the file $FAKESSH_DOWN_WHILE
// names exists, every destination refuses so (a host that is down, then up).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/ports"
)

var hello = `{"hello":"peerctl","outputProtocol":` + strconv.Itoa(ports.RemoteProtocol) + `,"version":"fake"}` + "\n"

func main() {
	args := os.Args[1:]
	if i := slices.Index(args, "-G"); i >= 0 && slices.Index(args, "--") == i+1 && len(args) == i+3 {
		// ssh -G -- DEST: the configuration it would connect with, as
		// OpenSSH prints it (a key and a value a line); not recorded.
		fmt.Printf("host %s\nhostname %s\nport 22\n", args[i+2], args[i+2])
		return
	}
	i := slices.Index(args, "--")
	if i > 0 && len(args) == i+2 {
		// ssh -O check -- DEST: no master answers; ssh -N -f -- DEST: a
		// master connection started (recorded as master-*, apart).
		if slices.Contains(args[:i], "-O") {
			fmt.Fprintln(os.Stderr, "Control socket connect: No such file or directory")
			os.Exit(255)
		}
		if slices.Contains(args[:i], "-N") && slices.Contains(args[:i], "-f") {
			record("master-", args)
			if m := os.Getenv("FAKESSH_MODE"); m == "refuse" || m == "hostkey" {
				fmt.Fprintln(os.Stderr, "Host key verification failed.")
				os.Exit(255)
			}
			return
		}
	}
	record("argv-", args)
	if i < 0 || len(args) != i+3 {
		fmt.Fprintf(os.Stderr, "fakessh: want OPTIONS -- DEST COMMAND, got %q\n", args)
		os.Exit(255)
	}
	dest, line := args[i+1], args[i+2]
	mode := os.Getenv("FAKESSH_MODE")
	if slices.Contains(strings.Split(os.Getenv("FAKESSH_DOWN"), ","), dest) {
		mode = "refuse"
	}
	if f := os.Getenv("FAKESSH_DOWN_WHILE"); f != "" {
		if _, err := os.Stat(f); err == nil {
			mode = "refuse"
		}
	}
	switch mode {
	case "refuse":
		fmt.Fprintln(os.Stderr, dest+": Permission denied (publickey).")
		os.Exit(255)
	case "hostkey":
		fmt.Fprintln(os.Stderr, "Host key verification failed.")
		os.Exit(255)
	case "drop":
		os.Stdout.WriteString(hello)
		// The caller holds stdin open for the whole call: take what comes
		// first (a send's text), then drop.
		got := make(chan struct{})
		go func() { _, _ = os.Stdin.Read(make([]byte, 64<<10)); close(got) }()
		select {
		case <-got:
		case <-time.After(300 * time.Millisecond):
		}
		fmt.Fprintln(os.Stderr, "Connection to "+dest+" closed by remote host.")
		os.Exit(255)
	case "huge":
		os.Stdout.WriteString(hello)
		chunk := []byte(strings.Repeat("[", 1<<16))
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				os.Exit(255)
			}
		}
	case "endless":
		os.Stdout.WriteString(hello)
		time.Sleep(time.Hour)
		os.Exit(0)
	case "silent":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "malformed":
		os.Stdout.WriteString(hello + "{not json\n")
		return
	case "forged":
		os.Stdout.WriteString(hello + `delivered: "x" (session 1, pid 1) by socket in 1ms` + "\n")
		return
	case "quiet":
		os.Stdout.WriteString(hello)
		return
	case "killed":
		fmt.Fprintln(os.Stderr, "Authenticated to "+dest+".")
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		time.Sleep(time.Hour)
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	if mode == "nohello" {
		out, _ := cmd.StdoutPipe()
		_ = cmd.Start()
		r := bufio.NewReader(out)
		_, _ = r.ReadString('\n')
		_, _ = io.Copy(os.Stdout, r)
	} else {
		cmd.Stdout = os.Stdout
		_ = cmd.Start()
	}
	_ = cmd.Wait()
	if mode == "lingers" {
		_ = os.Stdout.Close()
		time.Sleep(300 * time.Millisecond)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// record writes args (one argument per line, as JSON strings) into a file
// named prefix and the time in $FAKESSH_RECORD, when set.
func record(prefix string, args []string) {
	dir := os.Getenv("FAKESSH_RECORD")
	if dir == "" {
		return
	}
	var b strings.Builder
	for _, a := range args {
		q, _ := json.Marshal(a)
		b.Write(q)
		b.WriteByte('\n')
	}
	_ = os.WriteFile(filepath.Join(dir, prefix+fmt.Sprint(time.Now().UnixNano())), []byte(b.String()), 0o600)
}
