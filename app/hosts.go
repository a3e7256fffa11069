package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// InstallScript is the far side's part of `peerctl hosts install`, run as
// `sh -c InstallScript peerctl-install DIR SHA256` with the program on
// stdin: it writes the program to a temporary file in
// ${XDG_CACHE_HOME:-~/.cache}/peerctl/bin/DIR, checks its SHA-256 there
// (sha256sum, else shasum -a 256) and only then moves it into place as
// DIR/peerctl; an install already there with the same SHA-256 is kept.
// It prints "installed PATH" or "kept PATH". It writes nothing else.
// DIR and SHA256 are data (positional parameters), never code.
const InstallScript = `set -eu
umask 077
d=${XDG_CACHE_HOME:-$HOME/.cache}/peerctl/bin/$1
case $d in /*) ;; *) echo "no absolute cache folder: $d" >&2; exit 3 ;; esac
sum() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi | cut -d' ' -f1; }
if [ -f "$d/peerctl" ] && [ "$(sum <"$d/peerctl")" = "$2" ]; then cat >/dev/null; echo "kept $d/peerctl"; exit 0; fi
mkdir -p "$d"
t=$(mktemp "$d/.peerctl.XXXXXX")
trap 'rm -f "$t"' EXIT
cat >"$t"
got=$(sum <"$t")
if [ "$got" != "$2" ]; then echo "SHA-256 of what arrived is $got, not $2: nothing installed" >&2; exit 4; fi
chmod 755 "$t"
mv -f "$t" "$d/peerctl"
trap - EXIT
echo "installed $d/peerctl"`

// InstallPlan is what `peerctl hosts install` puts on a host: this very
// build (its path, version and SHA-256).
type InstallPlan struct {
	// Self is this build's executable (os.Executable).
	Self string
	// Version is this build's version (version --json's version).
	Version string
}

// InstallResult is what `peerctl hosts install` did.
type InstallResult struct {
	Dest domain.Dest `json:"host"`
	// OS and Arch are the far side's, from uname, as Go names them ("" when
	// uname named something peerctl does not know).
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// Uname is what `uname -sm` printed there.
	Uname string `json:"uname"`
	// Path is the installed peerctl there; "" when the far side's own
	// peerctl on PATH is used instead (OS or architecture differ).
	Path string `json:"path,omitempty"`
	// Kept says the same build was installed there already.
	Kept bool `json:"kept,omitempty"`
	// SHA256 is the installed program's, checked on the far side.
	SHA256 string `json:"sha256,omitempty"`
	// RemoteVersion is the version the far side's peerctl said hello with.
	RemoteVersion string `json:"remoteVersion"`
}

// unameOS and unameArch map `uname -s` and `uname -m` to Go's names.
var (
	unameOS   = map[string]string{"Linux": "linux", "Darwin": "darwin"}
	unameArch = map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
)

// installDirWord keeps a version's characters that are safe in a folder name.
// Compiled on first use, not in the package initialisation every command runs.
var installDirWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._+-]+`) })

// InstallDir is the folder name of an install: the version (characters
// other than letters, digits and ._+- as "_", "devel" when empty) and the
// first 12 hex digits of the SHA-256, e.g. "v0.4.0-0123456789ab".
func InstallDir(version, sum string) string {
	v := strings.Trim(installDirWord().ReplaceAllString(version, "_"), "_.")
	if v == "" {
		v = "devel"
	}
	return v + "-" + sum[:12]
}

// InstallHost puts this build on dest when its OS and architecture (uname
// -sm, through exec) are this build's: the program travels on stdin, its
// SHA-256 is checked on the far side before it is moved into place
// (InstallScript), and the installed peerctl must then say hello through
// remote (remoteAt runs it at a path). Otherwise the far side's peerctl on
// PATH is asked (remoteAt with ""): used when it speaks this output
// protocol; else the channel's refusal (host_unreachable naming both
// versions and the fix). The caller records Path in the hosts file.
func InstallHost(ctx context.Context, exec ports.HostExec, remoteAt func(program string) ports.Remote, dest domain.Dest, plan InstallPlan, goos, goarch string) (InstallResult, error) {
	res := InstallResult{Dest: dest}
	un, err := exec.Exec(ctx, dest, []string{"uname", "-sm"}, nil, 4096)
	if err != nil {
		return res, err
	}
	res.Uname = strings.TrimSpace(string(un.Stdout))
	if f := strings.Fields(res.Uname); un.Code == 0 && len(f) == 2 {
		res.OS, res.Arch = unameOS[f[0]], unameArch[f[1]]
	}
	if res.OS != goos || res.Arch != goarch {
		v, err := remoteVersion(ctx, remoteAt(""), dest)
		if err != nil {
			return res, fmt.Errorf("%s is %q, this build is %s/%s, so it cannot go there; and %w", dest, res.Uname, goos, goarch, err)
		}
		res.RemoteVersion = v
		return res, nil
	}
	f, err := os.Open(plan.Self)
	if err != nil {
		return res, fmt.Errorf("read this build: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return res, fmt.Errorf("read this build: %w", err)
	}
	res.SHA256 = hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("read this build: %w", err)
	}
	dir := InstallDir(plan.Version, res.SHA256)
	out, err := exec.Exec(ctx, dest, []string{"sh", "-c", InstallScript, "peerctl-install", dir, res.SHA256}, f, 4096)
	if err != nil {
		return res, err
	}
	if out.Code != 0 {
		return res, domain.Refuse(domain.ReasonHostUnreachable, "install on %s failed (exit %d): %s", dest, out.Code, printableLine(out.Stderr))
	}
	word, path, _ := strings.Cut(strings.TrimSpace(string(out.Stdout)), " ")
	if (word != "installed" && word != "kept") || !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/"+dir+"/peerctl") ||
		strings.ContainsFunc(path, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return res, domain.Refuse(domain.ReasonHostUnreachable, "install on %s printed %q, not the installed path", dest, printableLine(out.Stdout))
	}
	res.Path, res.Kept = path, word == "kept"
	if res.RemoteVersion, err = remoteVersion(ctx, remoteAt(path), dest); err != nil {
		return res, fmt.Errorf("installed %s on %s, but it does not run: %w", path, dest, err)
	}
	return res, nil
}

// remoteVersion runs `version --json` through remote and returns the
// version its hello named (the channel refuses a peerctl that is missing
// or speaks another output protocol).
func remoteVersion(ctx context.Context, remote ports.Remote, dest domain.Dest) (string, error) {
	r, err := remote.Call(ctx, ports.RemoteCall{Dest: dest, Args: []string{"version", "--json"}, MaxOutput: 64 << 10})
	if err != nil {
		return "", err
	}
	if r.Code != 0 {
		return "", domain.Refuse(domain.ReasonHostUnreachable, "peerctl version on %s exited %d: %s", dest, r.Code, printableLine(r.Stderr))
	}
	return r.Version, nil
}

// printableLine is b's last non-empty line, escaped where not printable
// and at most 300 bytes: remote text in a message.
func printableLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	s := string(lines[len(lines)-1])
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// HostCheck is what `peerctl hosts check DEST` found, one row per step, in
// order: ssh (connects and logs in), host key, peerctl (the far side's,
// its version and output protocol), doctor (the far side's). A step after
// a failed one is skipped.
type HostCheck struct {
	Dest domain.Dest `json:"host"`
	Rows []CheckRow  `json:"checks"`
	// Unreachable is the refusal that stopped the check before the far
	// side's doctor (nil when peerctl answered there).
	Unreachable *domain.Refusal `json:"-"`
	// DoctorOK is the far side's doctor's verdict.
	DoctorOK bool `json:"doctorOk"`
}

// CheckRow is one step of a HostCheck.
type CheckRow struct {
	Name   string `json:"name"`
	Health string `json:"health"` // ok, fail, skipped
	Note   string `json:"note"`
}

// hostKeyTrouble are ssh's words (OpenSSH 9) for an unknown or changed host key.
var hostKeyTrouble = []string{"Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED", "No ED25519 host key is known", "host key is known for"}

// CheckHost says what works on the way to dest: ssh through exec (`true`
// there), then the far side's peerctl through remote (`version --json`),
// then its `doctor --json`. It never installs or writes anything.
func CheckHost(ctx context.Context, exec ports.HostExec, remote ports.Remote, dest domain.Dest, program string) HostCheck {
	c := HostCheck{Dest: dest}
	add := func(name, health, note string) { c.Rows = append(c.Rows, CheckRow{name, health, note}) }
	skip := func(names ...string) {
		for _, n := range names {
			add(n, "skipped", "an earlier step failed")
		}
	}
	if program == "" {
		program = "peerctl on the remote PATH"
	}
	_, err := exec.Exec(ctx, dest, []string{"true"}, nil, 4096)
	if r, ok := domain.AsRefusal(err); ok {
		c.Unreachable = r
		if containsAny(r.Detail, hostKeyTrouble) {
			add("ssh", "ok", "the server answers")
			add("host key", "fail", r.Detail+"; check the key and add it to known_hosts (e.g. ssh "+dest.String()+" once)")
		} else {
			add("ssh", "fail", r.Detail)
			skip("host key")
		}
		skip("peerctl", "doctor")
		return c
	} else if err != nil {
		c.Unreachable = domain.Refuse(domain.ReasonHostUnreachable, "%v", err)
		add("ssh", "fail", err.Error())
		skip("host key", "peerctl", "doctor")
		return c
	}
	add("ssh", "ok", "connects and logs in (batch mode, no prompt)")
	add("host key", "ok", "known (host-key checking on)")
	v, err := remote.Call(ctx, ports.RemoteCall{Dest: dest, Args: []string{"version", "--json"}, MaxOutput: 64 << 10})
	if err == nil && v.Code != 0 {
		err = domain.Refuse(domain.ReasonHostUnreachable, "peerctl version on %s exited %d: %s", dest, v.Code, printableLine(v.Stderr))
	}
	if err != nil {
		r, ok := domain.AsRefusal(err)
		if !ok {
			r = domain.Refuse(domain.ReasonHostUnreachable, "%v", err)
		}
		c.Unreachable = r
		add("peerctl", "fail", r.Detail)
		skip("doctor")
		return c
	}
	add("peerctl", "ok", fmt.Sprintf("%s, version %s, output protocol %d", program, v.Version, ports.RemoteProtocol))
	d, err := remote.Call(ctx, ports.RemoteCall{Dest: dest, Args: []string{"doctor", "--json"}, MaxOutput: 1 << 20})
	switch {
	case err != nil:
		add("doctor", "fail", err.Error())
	case d.Code == 0:
		c.DoctorOK = true
		add("doctor", "ok", "the far side's doctor found no problem")
	default:
		add("doctor", "fail", fmt.Sprintf("the far side's doctor exited %d: %s (%s)", d.Code, printableLine(d.Stderr), domain.ShellCommand("peerctl", "doctor", "--host", dest.String())))
	}
	return c
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
