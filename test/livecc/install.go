//go:build unix

package livecc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultVersion is the Claude Code release the live tests pin by default.
// PEERCTL_CLAUDE_VERSION overrides it (see Version).
const DefaultVersion = "2.1.328"

// Version returns the Claude Code version live tests should use:
// $PEERCTL_CLAUDE_VERSION when set, else DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv("PEERCTL_CLAUDE_VERSION")); v != "" {
		return v
	}
	return DefaultVersion
}

// CacheDir returns the folder that holds installed Claude Code releases:
// CacheRoot("claude-code"). Each release lives in CacheDir()/<version> as an
// ordinary npm prefix (package.json, node_modules/).
func CacheDir() (string, error) { return CacheRoot("claude-code") }

// CacheRoot is ${PEERCTL_CACHE:-$HOME/.cache/peerctl}/<program>: where the
// live tests keep the releases of one program they install (Claude Code,
// Qwen Code, Codex), each an npm prefix in <version>.
func CacheRoot(program string) (string, error) {
	base := os.Getenv("PEERCTL_CACHE")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locate cache: %w", err)
		}
		base = filepath.Join(home, ".cache", "peerctl")
	}
	return filepath.Join(base, program), nil
}

// Install makes sure @anthropic-ai/claude-code@<version> is installed in
// CacheDir()/<version> and returns the path of the program to run as `claude`.
//
// An existing install is reused. Otherwise npm installs into a temporary sibling
// folder that is renamed into place only when complete, under an exclusive
// flock(2) on CacheDir()/<version>.lock, so two test processes installing the
// same version at once neither collide nor see a half-written install.
//
// The program is the native binary of the platform package
// (node_modules/@anthropic-ai/claude-code-linux-<arch>[-musl]/claude, as shipped
// by 2.1.224 up to at least 2.1.332); for releases that ship a JavaScript CLI
// instead (the "bin" of the main package, e.g. cli.js in 2.0.x) it is that file,
// which runs through its node shebang.
func Install(version string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return NPMInstall(cache, "@anthropic-ai/claude-code", version, FindBinary)
}

// NPMInstall makes sure npm package pkg@version is installed in
// cache/<version> and returns the program find locates in that npm prefix
// folder. An existing install is reused. Otherwise npm installs into a
// temporary sibling folder that is renamed into place only when complete,
// under an exclusive flock(2) on cache/<version>.lock, so two test processes
// installing the same version at once neither collide nor see a
// half-written install. npm runs with the calling session's variables
// scrubbed (Scrub). The Claude Code and Qwen Code installers share it.
func NPMInstall(cache, pkg, version string, find func(dir string) (string, error)) (string, error) {
	what := pkg + "@" + version
	if version == "" || strings.ContainsAny(version, "/\\ \t\n") || strings.HasPrefix(version, ".") {
		return "", fmt.Errorf("install %s: bad version %q", pkg, version)
	}
	dir := filepath.Join(cache, version)
	if bin, err := find(dir); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	defer unlock()
	// Another process may have finished while we waited for the lock.
	if bin, err := find(dir); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("install %s: npm not found: %w", what, err)
	}
	tmp, err := os.MkdirTemp(cache, version+".tmp-")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	defer os.RemoveAll(tmp)
	// A package.json of its own keeps npm from installing into a parent project.
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte("{\"private\": true}\n"), 0o644); err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error", what)
	cmd.Dir = tmp
	cmd.Env = Scrub(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("install %s: npm install: %w\n%s", what, err, out)
	}
	if _, err := find(tmp); err != nil {
		return "", fmt.Errorf("install %s: %w\nnpm said:\n%s", what, err, out)
	}
	// A leftover without a usable program (an interrupted install from before
	// temp-and-rename) would block the rename: move it out of the way.
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("install %s: remove broken install: %w", what, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("install %s: %w", what, err)
	}
	return find(dir)
}

// FindBinary returns the Claude Code program inside an npm prefix dir (one that
// holds node_modules/@anthropic-ai/claude-code): the native binary of this
// platform's package when present, else the main package's "bin" entry when it
// is a JavaScript file. It returns an error when neither is there.
func FindBinary(dir string) (string, error) {
	scope := filepath.Join(dir, "node_modules", "@anthropic-ai")
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	for _, suffix := range []string{"", "-musl"} {
		bin := filepath.Join(scope, "claude-code-"+runtime.GOOS+"-"+arch+suffix, "claude")
		if isExecutable(bin) {
			return bin, nil
		}
	}
	main := filepath.Join(scope, "claude-code")
	raw, err := os.ReadFile(filepath.Join(main, "package.json"))
	if err != nil {
		return "", fmt.Errorf("no claude code install in %s: %w", dir, err)
	}
	var pkg struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Join(main, "package.json"), err)
	}
	var rel string
	var bins map[string]string
	if err := json.Unmarshal(pkg.Bin, &bins); err == nil {
		rel = bins["claude"]
	} else if err := json.Unmarshal(pkg.Bin, &rel); err != nil {
		return "", fmt.Errorf("read bin of %s: %w", main, err)
	}
	// bin/claude.exe is the native binary only after the postinstall step copied
	// it there; without a platform package it is a stub, so only a .js/.cjs/.mjs
	// CLI counts here.
	if ext := filepath.Ext(rel); ext == ".js" || ext == ".cjs" || ext == ".mjs" {
		bin := filepath.Join(main, filepath.FromSlash(rel))
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	return "", errors.New("no native claude binary for " + runtime.GOOS + "-" + arch + " and no JavaScript cli in " + dir)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// lockFile takes an exclusive flock on path (creating it) and returns the unlock.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// newestFile is CacheDir()/newest: the version InstallNewest installed last.
const newestFile = "newest"

// InstallNewest asks npm for the newest @anthropic-ai/claude-code release
// (`npm view … version`, bounded by 60 s), installs it (Install) and writes
// its version to CacheDir()/newest, where Newest reads it. It is a network
// step of `make deps`; the live tests, which run offline, only read.
func InstallNewest() (version, bin string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "view", "--no-update-notifier", "@anthropic-ai/claude-code", "version")
	cmd.Env = Scrub(os.Environ())
	out, err := cmd.Output()
	version = strings.TrimSpace(string(out))
	if err != nil || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(version) {
		return "", "", fmt.Errorf("npm view @anthropic-ai/claude-code version: %v (printed %q)", err, version)
	}
	if bin, err = Install(version); err != nil {
		return "", "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(cache, newestFile), []byte(version+"\n"), 0o644); err != nil {
		return "", "", fmt.Errorf("record newest: %w", err)
	}
	return version, bin, nil
}

// Newest returns the version InstallNewest recorded, or "" when it never ran
// (or its record is not a version).
func Newest() string {
	cache, err := CacheDir()
	if err != nil {
		return ""
	}
	raw, err := os.ReadFile(filepath.Join(cache, newestFile))
	if v := strings.TrimSpace(string(raw)); err == nil && regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		return v
	}
	return ""
}
