package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// helloFlag is the hidden global flag a peerctl calling over ssh gives the
// far side's peerctl: --hello=<its output protocol>.
const helloFlag = "hello"

// helloJSON is the first stdout line of a peerctl run with --hello (the
// sshhost adapter reads it with exact keys).
type helloJSON struct {
	Hello          string `json:"hello"` // "peerctl"
	OutputProtocol int    `json:"outputProtocol"`
	Version        string `json:"version"`
}

// sayHello, with --hello=N, prints the hello line before the command runs
// (so the caller knows a peerctl of this output protocol started before it
// hands anything over), and refuses to run for a caller of another
// protocol: what it would print is not what the caller parses.
func (c *factory) sayHello(cmd *cobra.Command) error {
	if !cmd.Flags().Changed(helloFlag) {
		return nil
	}
	var b strings.Builder
	if err := wire.EncodeJSON(&b, helloJSON{Hello: "peerctl", OutputProtocol: ports.RemoteProtocol, Version: c.version().Version}, "", true); err != nil {
		return err
	}
	if _, err := io.WriteString(c.io.out, b.String()); err != nil {
		return err
	}
	if c.hello != ports.RemoteProtocol {
		return domain.Refuse(domain.ReasonHostUnreachable, "this peerctl (%s) speaks output protocol %d, the caller %d", c.version().Version, ports.RemoteProtocol, c.hello)
	}
	ctx, cancel := context.WithCancelCause(cmd.Context())
	cmd.SetContext(ctx)
	c.callerGone = cancel
	// A peerctl calling over ssh: its sends come in by the host entrance,
	// from the client address sshd names (docs/POLICY.md).
	c.entrance, c.callerDest = domain.EntranceHost, sshClient(c.getenv("SSH_CONNECTION"))
	switch {
	case cmd.Name() == "relay":
		// Its stdin is its requests: their end ends it.
	case cmd.Name() == "send" && c.stdinBytes >= 0:
		// Its text comes first (announcedText follows the caller after it).
	default:
		c.followCaller()
	}
	return nil
}

// sshClient is the client's address in sshd's SSH_CONNECTION ("client
// port server port"); "" when it is not one.
func sshClient(conn string) string {
	f := strings.Fields(conn)
	if len(f) != 4 || strings.ContainsAny(f[0], "*?[\\") {
		return ""
	}
	return f[0]
}

// errCallerGone is the cause of a command's end when the peerctl that ran
// it over ssh is gone.
var errCallerGone = errors.New("the calling peerctl is gone (its connection closed)")

// followCaller, for a command run over ssh (--hello), ends the command
// when its stdin ends: the caller holds it open for the whole call
// (ports.RemoteCall.Stdin), so its end means the caller timed out, was
// interrupted or killed, or its connection dropped, and nothing is left
// running here on its behalf. Without --hello it does nothing.
func (c *factory) followCaller() {
	if c.callerGone == nil {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, c.io.in)
		c.callerGone(errCallerGone)
	}()
}

// releaseVersion is the version a release build stamps in with
// -ldflags "-X github.com/peerctl/peerctl/internal/cli.releaseVersion=v1.2.3"
// (.goreleaser.yaml: "v" and goreleaser's version, e.g.
// "v0.0.0-SNAPSHOT-0123abc" for `make release`); empty in any other build.
var releaseVersion string

// versionJSON is `version --json` output (docs/OUTPUT.md). Fields come from
// runtime/debug.ReadBuildInfo: version is the release's stamped version
// (releaseVersion), else the main module's version ("v1.2.3" from
// `go install ...@v1.2.3`, a pseudo-version or "(devel)" from a checkout);
// revision, time and modified are the vcs.* build settings, empty when the
// binary was built without VCS information (time in wire.RFC3339's form;
// a vcs.time that is not RFC 3339 is kept as it is).
type versionJSON struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Time      string `json:"time"` // commit time, wire.RFC3339 (as every JSON time)
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// OutputProtocol is ports.RemoteProtocol: a peerctl on another machine
	// is used over ssh only when it speaks the same.
	OutputProtocol int `json:"outputProtocol"`
}

func (c *factory) version() versionJSON {
	v := versionJSON{Module: "github.com/peerctl/peerctl", Version: "(unknown)", OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version(),
		OutputProtocol: ports.RemoteProtocol}
	bi, ok := c.buildInfo()
	if !ok || bi == nil {
		bi = &debug.BuildInfo{}
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	switch {
	case c.releaseVersion != "":
		v.Version = c.releaseVersion
	case bi.Main.Version != "":
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
			if t, err := time.Parse(time.RFC3339Nano, s.Value); err == nil {
				v.Time = wire.RFC3339(t)
			}
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// short renders "v1.2.3 (abcdef012345, 2026-01-02T03:04:05Z, modified)"
// (the time as people's times are shown: shownStamp).
func (v versionJSON) short() string {
	var extra []string
	if v.Revision != "" {
		extra = append(extra, v.Revision[:min(12, len(v.Revision))])
	}
	if v.Time != "" {
		extra = append(extra, shownStamp(v.Time))
	}
	if v.Modified {
		extra = append(extra, "modified")
	}
	if len(extra) == 0 {
		return v.Version
	}
	return v.Version + " (" + strings.Join(extra, ", ") + ")"
}

// versionOptions are what version needs: the streams and this build.
type versionOptions struct {
	io      *iostreams
	version func() versionJSON
	json    bool
}

func newVersionCmd(f *factory) *cobra.Command {
	opts := &versionOptions{io: f.io, version: f.version}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print peerctl's version and the commit it was built from",
		Long: helpLong(`Print the module version and the commit, commit time and tree state it was built
from (a build without VCS information, go build -buildvcs=false, carries none:
--json's revision and time are then "")`, "version"),
		Example: `  peerctl version
  peerctl version --jq .revision
  peerctl --version`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.started()
			return runVersion(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	return cmd
}

// runVersion prints this build's version and what it was built from.
func runVersion(opts *versionOptions) error {
	v := opts.version()
	if opts.json {
		return opts.io.writeJSON(v)
	}
	// modified says what --json does: false when nothing says the tree was modified.
	revision, vtime, modified := v.Revision, shownStamp(v.Time), fmt.Sprint(v.Modified)
	// A build without VCS information (-buildvcs=false, or built outside
	// a checkout) carries none: say so, not that it is unknown.
	switch {
	case revision == "":
		revision, vtime = "none: this build carried no VCS information (go build -buildvcs=false, or outside a git checkout)", "none (no revision)"
	case vtime == "":
		vtime = "none recorded"
	}
	fmt.Fprintf(opts.io.out, "peerctl %s\nmodule:   %s\nrevision: %s\ntime:     %s\nmodified: %s\ngo:       %s %s/%s\n",
		v.Version, v.Module, revision, vtime, modified, v.GoVersion, v.OS, v.Arch)
	return nil
}
