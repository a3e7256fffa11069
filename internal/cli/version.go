package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

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
// binary was built without VCS information.
type versionJSON struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Time      string `json:"time"` // RFC 3339 commit time
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func (c *cli) version() versionJSON {
	v := versionJSON{Module: "github.com/peerctl/peerctl", Version: "(unknown)", OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
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
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// short renders "v1.2.3 (abcdef012345, 2026-01-02T03:04:05Z, modified)".
func (v versionJSON) short() string {
	var extra []string
	if v.Revision != "" {
		extra = append(extra, v.Revision[:min(12, len(v.Revision))])
	}
	if v.Time != "" {
		extra = append(extra, v.Time)
	}
	if v.Modified {
		extra = append(extra, "modified")
	}
	if len(extra) == 0 {
		return v.Version
	}
	return v.Version + " (" + strings.Join(extra, ", ") + ")"
}

func (c *cli) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print peerctl's version and the commit it was built from",
		Long: `Print the module version and, when the binary was built from a checkout, the VCS
revision, its commit time and whether the tree had local changes (Go build info).
A binary built without VCS information (go build -buildvcs=false, or outside a checkout)
says "unknown" for these.

` + exitCodesFor(exitOK, exitUsage),
		Example: `  peerctl version
  peerctl version --json | jq -r .revision`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.started()
			v := c.version()
			if asJSON {
				return c.writeJSON(v)
			}
			revision, vtime, modified := v.Revision, v.Time, fmt.Sprint(v.Modified)
			if revision == "" {
				revision, modified = "unknown (built without VCS information)", "unknown"
			}
			if vtime == "" {
				vtime = "unknown"
			}
			fmt.Fprintf(c.stdout, "peerctl %s\nmodule:   %s\nrevision: %s\ntime:     %s\nmodified: %s\ngo:       %s %s/%s\n",
				v.Version, v.Module, revision, vtime, modified, v.GoVersion, v.OS, v.Arch)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	return cmd
}
