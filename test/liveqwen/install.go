//go:build unix

package liveqwen

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// DefaultVersion is the Qwen Code release the live tests pin;
// PEERCTL_QWEN_VERSION overrides it.
const DefaultVersion = "0.24.4"

// MessagingOffVersion is the release whose cross-session messaging is off
// by default (it writes a record without ipcPath).
const MessagingOffVersion = "0.23.0"

// Version is $PEERCTL_QWEN_VERSION, else DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv("PEERCTL_QWEN_VERSION")); v != "" {
		return v
	}
	return DefaultVersion
}

// Enabled reports whether live tests should run: PEERCTL_LIVE=1.
func Enabled() bool { return os.Getenv("PEERCTL_LIVE") == "1" }

// CacheDir is ${PEERCTL_CACHE:-$HOME/.cache/peerctl}/qwen-code; each release
// is an npm prefix in CacheDir()/<version>.
func CacheDir() (string, error) {
	base := os.Getenv("PEERCTL_CACHE")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locate cache: %w", err)
		}
		base = filepath.Join(home, ".cache", "peerctl")
	}
	return filepath.Join(base, "qwen-code"), nil
}

// FindCLI returns the qwen program (a JavaScript file run with node) in an
// npm prefix dir.
func FindCLI(dir string) (string, error) {
	bin := filepath.Join(dir, "node_modules", ".bin", "qwen")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no qwen code install in %s: %w", dir, err)
	}
	return bin, nil
}

// Install makes sure @qwen-code/qwen-code@<version> is installed in
// CacheDir()/<version> and returns its qwen program. An install runs in a
// temporary sibling renamed into place when complete, under an flock of
// CacheDir()/<version>.lock, as the Claude Code installer does.
func Install(version string) (string, error) {
	if version == "" || strings.ContainsAny(version, "/\\ \t\n") || strings.HasPrefix(version, ".") {
		return "", fmt.Errorf("install qwen code: bad version %q", version)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, version)
	if bin, err := FindCLI(dir); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("install qwen code %s: %w", version, err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("install qwen code %s: %w", version, err)
	}
	defer lock.Close()
	for {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("install qwen code %s: lock: %w", version, err)
	}
	if bin, err := FindCLI(dir); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("install qwen code %s: npm not found: %w", version, err)
	}
	tmp, err := os.MkdirTemp(cache, version+".tmp-")
	if err != nil {
		return "", fmt.Errorf("install qwen code %s: %w", version, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte("{\"private\": true}\n"), 0o644); err != nil {
		return "", fmt.Errorf("install qwen code %s: %w", version, err)
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error",
		"@qwen-code/qwen-code@"+version)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("install qwen code %s: npm install: %w\n%s", version, err, out)
	}
	if _, err := FindCLI(tmp); err != nil {
		return "", fmt.Errorf("install qwen code %s: %w\nnpm said:\n%s", version, err, out)
	}
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("install qwen code %s: remove broken install: %w", version, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("install qwen code %s: %w", version, err)
	}
	return FindCLI(dir)
}

var installs sync.Map // version -> *installResult

type installResult struct {
	once sync.Once
	bin  string
	err  error
}

// Require gates a live test: without PEERCTL_LIVE=1 it skips; with it, a
// missing tmux or node, or a failed install, fails the test (CI must not
// go green by skipping). It returns the qwen program of version.
func Require(t testing.TB, version string) string {
	t.Helper()
	if !Enabled() {
		t.Skip("live Qwen Code test: set PEERCTL_LIVE=1 to run it (needs tmux, node, npm and the npm registry)")
	}
	for _, p := range []string{"tmux", "node"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("PEERCTL_LIVE=1 but %s is missing: %v", p, err)
		}
	}
	v, _ := installs.LoadOrStore(version, &installResult{})
	r := v.(*installResult)
	r.once.Do(func() { r.bin, r.err = Install(version) })
	if r.err != nil {
		t.Fatalf("PEERCTL_LIVE=1 but Qwen Code %s is not available: %v", version, r.err)
	}
	return r.bin
}
