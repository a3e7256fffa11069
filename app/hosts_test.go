package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// localExec runs the fixed commands here, as the far side's shell would,
// with HOME set to home; uname answers with the given line; mangle, when
// set, changes what travels on stdin (a transfer gone wrong).
type localExec struct {
	home, uname string
	mangle      func([]byte) []byte
	err         error
	calls       [][]string
}

func (l *localExec) Exec(ctx context.Context, _ domain.Dest, words []string, stdin io.Reader, _ int) (ports.RemoteResult, error) {
	l.calls = append(l.calls, words)
	if l.err != nil {
		return ports.RemoteResult{}, l.err
	}
	if words[0] == "uname" {
		return ports.RemoteResult{Stdout: []byte(l.uname + "\n")}, nil
	}
	var in []byte
	if stdin != nil {
		in, _ = io.ReadAll(stdin)
		if l.mangle != nil {
			in = l.mangle(in)
		}
	}
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	cmd.Env = []string{"HOME=" + l.home, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return ports.RemoteResult{}, err
	}
	return ports.RemoteResult{Stdout: out.Bytes(), Stderr: errOut.Bytes(), Code: cmd.ProcessState.ExitCode()}, nil
}

// versionRemote answers `version --json` with a hello's version, or err.
type versionRemote struct {
	version string
	err     error
	calls   *[]ports.RemoteCall
}

func (v versionRemote) Call(_ context.Context, c ports.RemoteCall) (ports.RemoteResult, error) {
	if v.calls != nil {
		*v.calls = append(*v.calls, c)
	}
	return ports.RemoteResult{Version: v.version, Stdout: []byte("{}")}, v.err
}

func (v versionRemote) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	return nil, errors.New("no stream")
}

func selfBuild(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "peerctl")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho this build\n"), 0o755))
	return p
}

func TestInstallHostPutsThisBuildThere(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	x := &localExec{home: home, uname: "Linux x86_64"}
	self := selfBuild(t)
	var programs []string
	remoteAt := func(p string) ports.Remote { programs = append(programs, p); return versionRemote{version: "v1.2.3"} }
	dest := mustDest(t, "box")
	r, err := app.InstallHost(ctx, x, remoteAt, dest, app.InstallPlan{Self: self, Version: "v1.2.3"}, "linux", "amd64")
	require.NoError(t, err)
	assert.Regexp(t, `^`+home+`/\.cache/peerctl/bin/v1\.2\.3-[0-9a-f]{12}/peerctl$`, r.Path)
	assert.False(t, r.Kept)
	assert.Equal(t, "v1.2.3", r.RemoteVersion)
	assert.Equal(t, []string{r.Path}, programs, "the installed program is what says hello")
	got, err := os.ReadFile(r.Path)
	require.NoError(t, err)
	want, _ := os.ReadFile(self)
	assert.Equal(t, want, got)
	entries, _ := os.ReadDir(filepath.Dir(r.Path))
	assert.Len(t, entries, 1, "no temporary file is left")

	again, err := app.InstallHost(ctx, x, remoteAt, dest, app.InstallPlan{Self: self, Version: "v1.2.3"}, "linux", "amd64")
	require.NoError(t, err)
	assert.True(t, again.Kept)
	assert.Equal(t, r.Path, again.Path)
}

func TestInstallHostRefusesWhatArrivedWrong(t *testing.T) {
	home := t.TempDir()
	x := &localExec{home: home, uname: "Linux x86_64", mangle: func(b []byte) []byte { return append(b, 'x') }}
	_, err := app.InstallHost(context.Background(), x, func(string) ports.Remote { return versionRemote{} }, mustDest(t, "box"),
		app.InstallPlan{Self: selfBuild(t), Version: "v1"}, "linux", "amd64")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
	assert.Contains(t, r.Detail, "nothing installed")
	matches, _ := filepath.Glob(filepath.Join(home, ".cache/peerctl/bin/*/*"))
	assert.Empty(t, matches, "nothing is left in place, not even the temporary file")
}

func TestInstallHostOtherPlatformUsesPATH(t *testing.T) {
	x := &localExec{home: t.TempDir(), uname: "Darwin arm64"}
	var programs []string
	ok := func(p string) ports.Remote { programs = append(programs, p); return versionRemote{version: "v1.0.0"} }
	r, err := app.InstallHost(context.Background(), x, ok, mustDest(t, "mac"), app.InstallPlan{Self: selfBuild(t), Version: "v1"}, "linux", "amd64")
	require.NoError(t, err)
	assert.Equal(t, "", r.Path)
	assert.Equal(t, "darwin", r.OS)
	assert.Equal(t, "arm64", r.Arch)
	assert.Equal(t, []string{""}, programs, "the peerctl on the remote PATH")
	assert.Len(t, x.calls, 1, "nothing but uname ran there")

	refusal := domain.Refuse(domain.ReasonHostUnreachable, "mac runs peerctl v0.1 (output protocol 0), this is peerctl v1 (output protocol 1); fix: peerctl hosts install mac")
	_, err = app.InstallHost(context.Background(), x, func(string) ports.Remote { return versionRemote{err: refusal} }, mustDest(t, "mac"),
		app.InstallPlan{Self: selfBuild(t), Version: "v1"}, "linux", "amd64")
	r2, isRefusal := domain.AsRefusal(err)
	require.True(t, isRefusal, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r2.Reason)
	assert.Contains(t, err.Error(), `"Darwin arm64"`)
	assert.Contains(t, err.Error(), "v0.1")
}

func TestInstallDir(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	assert.Equal(t, "v1.2.3-abababababab", app.InstallDir("v1.2.3", sum))
	assert.Equal(t, "devel-abababababab", app.InstallDir("(devel)", sum))
	assert.Equal(t, "v0.0.0-2026_x-abababababab", app.InstallDir("v0.0.0-2026 x", sum))
	assert.Equal(t, "devel-abababababab", app.InstallDir("../..", sum))
}

func TestCheckHost(t *testing.T) {
	ctx := context.Background()
	dest := mustDest(t, "box")
	rows := func(c app.HostCheck) map[string]string {
		m := map[string]string{}
		for _, r := range c.Rows {
			m[r.Name] = r.Health
		}
		return m
	}
	hostKey := &localExec{err: domain.Refuse(domain.ReasonHostUnreachable, "ssh box failed (exit 255): Host key verification failed.")}
	c := app.CheckHost(ctx, hostKey, versionRemote{}, dest, "")
	assert.Equal(t, map[string]string{"ssh": "ok", "host key": "fail", "peerctl": "skipped", "doctor": "skipped"}, rows(c))
	require.NotNil(t, c.Unreachable)

	down := &localExec{err: domain.Refuse(domain.ReasonHostUnreachable, "ssh box failed (exit 255): Connection refused")}
	c = app.CheckHost(ctx, down, versionRemote{}, dest, "")
	assert.Equal(t, map[string]string{"ssh": "fail", "host key": "skipped", "peerctl": "skipped", "doctor": "skipped"}, rows(c))

	up := &localExec{home: t.TempDir()}
	c = app.CheckHost(ctx, up, versionRemote{err: domain.Refuse(domain.ReasonHostUnreachable, "no peerctl; fix: peerctl hosts install box")}, dest, "")
	assert.Equal(t, map[string]string{"ssh": "ok", "host key": "ok", "peerctl": "fail", "doctor": "skipped"}, rows(c))

	var calls []ports.RemoteCall
	c = app.CheckHost(ctx, up, versionRemote{version: "v9", calls: &calls}, dest, "/opt/peerctl")
	assert.Equal(t, map[string]string{"ssh": "ok", "host key": "ok", "peerctl": "ok", "doctor": "ok"}, rows(c))
	assert.Nil(t, c.Unreachable)
	assert.True(t, c.DoctorOK)
	require.Len(t, calls, 2)
	assert.Equal(t, []string{"doctor", "--json"}, calls[1].Args)
	assert.Equal(t, [][]string{{"true"}}, up.calls[len(up.calls)-1:], "ssh is checked with true alone")
}

func mustDest(t *testing.T, s string) domain.Dest {
	t.Helper()
	d, err := domain.ParseDest(s)
	require.NoError(t, err)
	return d
}
