package cli

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// configuredHosts are the hosts of the hosts file, as --host values.
func configuredHosts(getenv func(string) string) ([]string, error) {
	hosts, _, err := wiring.LoadHosts(getenv)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Dest.String()
	}
	return out, nil
}

// parseDestArg is a DEST argument, a usage error when it is not one.
func parseDestArg(s string) (domain.Dest, error) {
	d, err := domain.ParseDest(s)
	if err != nil {
		return domain.Dest{}, usageError{err}
	}
	return d, nil
}

// hostsOptions are what the hosts commands need: the streams, the hosts
// file (read with getenv), the ssh channel, and the host and flags given.
type hostsOptions struct {
	io     *iostreams
	getenv func(string) string
	// channel is the ssh channel; with atProgram, every host's peerctl is
	// that program instead ("": the one on the remote PATH).
	channel func(atProgram *string) (wiring.SSHChannel, error)
	book    ports.HostBook
	// executable is this build (hosts install).
	executable func() (string, error)
	version    string
	dest       domain.Dest
	json       bool
	// sets are hosts add's --set KEY=VALUE, checked.
	sets []hostSetting
}

// hostSetting is one --set KEY=VALUE of hosts add.
type hostSetting struct{ key, value string }

// newHostsOptions are the hosts commands' options from f.
func newHostsOptions(f *factory) *hostsOptions {
	return &hostsOptions{io: f.io, getenv: f.getenv, channel: f.sshChannel, book: f.hostBook, executable: f.executable}
}

// hostsRunE is the RunE of a hosts command on one DEST: a bad DEST is a
// usage error; then run runs.
func hostsRunE(f *factory, opts *hostsOptions, run func(context.Context, *hostsOptions) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		dest, err := parseDestArg(args[0])
		if err != nil {
			return err
		}
		opts.dest = dest
		f.started()
		f.io.jsonOut = opts.json
		return run(cmd.Context(), opts)
	}
}

func newHostsCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "Keep the hosts reached over ssh; install peerctl there, check them",
		Long:  helpLong(`Keep the hosts peerctl reaches over ssh ($XDG_CONFIG_HOME/peerctl/hosts), install peerctl there, check them`, "hosts"),
		Example: `  peerctl hosts add build-box --set config-dir=/home/dev/.claude
  peerctl hosts install build-box
  peerctl hosts check build-box
  peerctl list --hosts`,
	}
	cmd.AddCommand(newHostsAddCmd(f), newHostsRemoveCmd(f), newHostsListCmd(f), newHostsCheckCmd(f), newHostsInstallCmd(f))
	return cmd
}

// editHosts loads the hosts file, lets edit change the list, saves it,
// and returns its path.
func editHosts(getenv func(string) string, edit func(hosts []wiring.Host) ([]wiring.Host, error)) (string, error) {
	hosts, path, err := wiring.LoadHosts(getenv)
	if err != nil {
		return path, err
	}
	if hosts, err = edit(hosts); err != nil {
		return path, err
	}
	return path, wiring.SaveHosts(path, hosts)
}

// hostEntry is dest's entry of hosts, added at the end when there is
// none; added says which.
func hostEntry(hosts []wiring.Host, dest domain.Dest) (_ []wiring.Host, i int, added bool) {
	i = slices.IndexFunc(hosts, func(h wiring.Host) bool { return h.Dest == dest })
	if i >= 0 {
		return hosts, i, false
	}
	return append(hosts, wiring.Host{Dest: dest}), len(hosts), true
}

func newHostsAddCmd(f *factory) *cobra.Command {
	opts := newHostsOptions(f)
	var sets []string
	cmd := &cobra.Command{
		Use:   "add DEST",
		Short: "Add a host, or change its settings",
		Long:  helpLong(`Add DEST (an ssh alias, host or user@host) to the hosts file, or change its settings (--set KEY=VALUE; KEY= removes one)`, "hosts-add"),
		Example: `  peerctl hosts add build-box
  peerctl hosts add dev@10.0.0.7 --set config-dir=/home/dev/.claude \
    --set claude=/opt/claude/bin/claude
  peerctl hosts add build-box --set claude=`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := parseDestArg(args[0])
			if err != nil {
				return err
			}
			for _, s := range sets {
				k, v, ok := strings.Cut(s, "=")
				if !ok || (k != wiring.HostKeyPeerctl && !slices.Contains(wiring.HostSchema.Keys(), k)) {
					return usageError{fmt.Errorf("--set %q: want KEY=VALUE, KEY one of %s, %s", s, wiring.HostKeyPeerctl, strings.Join(wiring.HostSchema.Keys(), ", "))}
				}
				opts.sets = append(opts.sets, hostSetting{k, v})
			}
			opts.dest = dest
			f.started()
			return runHostsAdd(opts)
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE: a setting of the host ("+wiring.HostKeyPeerctl+", "+strings.Join(wiring.HostSchema.Keys(), ", ")+"); repeatable")
	return cmd
}

// runHostsAdd adds opts.dest to the hosts file, or changes its settings.
func runHostsAdd(opts *hostsOptions) error {
	added := false
	path, err := editHosts(opts.getenv, func(hosts []wiring.Host) ([]wiring.Host, error) {
		var i int
		hosts, i, added = hostEntry(hosts, opts.dest)
		h := &hosts[i]
		for _, ch := range opts.sets {
			switch {
			case ch.key == wiring.HostKeyPeerctl:
				h.Peerctl = ch.value
			case ch.value == "":
				delete(h.Settings, ch.key)
			default:
				if h.Settings == nil {
					h.Settings = map[string]string{}
				}
				h.Settings[ch.key] = ch.value
			}
		}
		return hosts, nil
	})
	if err != nil {
		return err
	}
	// A confirmation, on stderr (stdout is for data), as gh's commands give.
	what := "added"
	if !added {
		what = "updated"
	}
	fmt.Fprintf(opts.io.errOut, "peerctl: %s host %s in %s\n", what, safe(opts.dest.String()), safe(path))
	return nil
}

func newHostsRemoveCmd(f *factory) *cobra.Command {
	opts := newHostsOptions(f)
	return &cobra.Command{
		Use:   "remove DEST",
		Short: "Remove a host from the hosts file (nothing on the host is touched)",
		Long:  helpLong(`Remove DEST and its settings from the hosts file; nothing on the host itself is touched`, "hosts-remove"),
		Example: `  peerctl hosts remove build-box
  peerctl hosts remove dev@10.0.0.7
  peerctl hosts list --jq '.[].host' | xargs -n1 peerctl hosts remove`,
		Args: exactArgs(1),
		RunE: hostsRunE(f, opts, runHostsRemove),
	}
}

// runHostsRemove removes opts.dest from the hosts file.
func runHostsRemove(_ context.Context, opts *hostsOptions) error {
	_, err := editHosts(opts.getenv, func(hosts []wiring.Host) ([]wiring.Host, error) {
		i := slices.IndexFunc(hosts, func(h wiring.Host) bool { return h.Dest == opts.dest })
		if i < 0 {
			return nil, domain.Refuse(domain.ReasonNotFound, "no host %q in the hosts file (peerctl hosts list)", opts.dest)
		}
		return slices.Delete(hosts, i, i+1), nil
	})
	return err
}

// hostJSON is one host of `hosts list --json`.
type hostJSON struct {
	Host     string            `json:"host"`
	Peerctl  string            `json:"peerctl"`
	Settings map[string]string `json:"settings"`
}

func newHostsListCmd(f *factory) *cobra.Command {
	opts := newHostsOptions(f)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the hosts of the hosts file and their settings",
		Long:  helpLong(`List the hosts of the hosts file ($XDG_CONFIG_HOME/peerctl/hosts) and their settings`, "hosts-list"),
		Example: `  peerctl hosts list
  peerctl hosts list --jq '.[].host'
  peerctl list --hosts`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.started()
			f.io.jsonOut = opts.json
			return runHostsList(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print a JSON array of {host, peerctl, settings}")
	return cmd
}

// runHostsList prints the hosts of the hosts file and their settings.
func runHostsList(opts *hostsOptions) error {
	hosts, path, err := wiring.LoadHosts(opts.getenv)
	if err != nil {
		return err
	}
	if opts.json {
		out := make([]hostJSON, 0, len(hosts))
		for _, h := range hosts {
			s := h.Settings
			if s == nil {
				s = map[string]string{}
			}
			out = append(out, hostJSON{Host: h.Dest.String(), Peerctl: h.Peerctl, Settings: s})
		}
		return opts.io.writeJSON(out)
	}
	if len(hosts) == 0 {
		fmt.Fprintf(opts.io.errOut, "peerctl: no hosts in %s (peerctl hosts add DEST)\n", safe(path))
		return nil
	}
	var t table
	t.add("HOST", "PEERCTL", "SETTINGS")
	for _, h := range hosts {
		p := h.Peerctl
		if p == "" {
			p = "peerctl on PATH"
		}
		var s []string
		for _, k := range wiring.HostSchema.Keys() {
			if v, ok := h.Settings[k]; ok {
				s = append(s, k+"="+v)
			}
		}
		t.add(safe(h.Dest.String()), safe(p), safe(strings.Join(s, " ")))
	}
	return t.write(opts.io.out)
}

// programBook is a book whose every host runs program as its peerctl.
type programBook struct {
	ports.HostBook
	program string
}

func (b programBook) Host(dest domain.Dest) (ports.HostSettings, error) {
	s, err := b.HostBook.Host(dest)
	s.Program = b.program
	return s, err
}

func newHostsCheckCmd(f *factory) *cobra.Command {
	opts := newHostsOptions(f)
	cmd := &cobra.Command{
		Use:   "check DEST",
		Short: "Check the way to a host: ssh, host key, peerctl there, its doctor",
		Long:  helpLong(`Say what works on the way to DEST (ssh, the host key, the far side's peerctl and version, its doctor); nothing is written`, "hosts-check"),
		Example: `  peerctl hosts check build-box
  peerctl hosts check build-box --jq '.checks[] | select(.health != "ok")'
  PEERCTL_SSH="ssh -F ~/work/ssh_config" peerctl hosts check lab`,
		Args: exactArgs(1),
		RunE: hostsRunE(f, opts, runHostsCheck),
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object: host, checks [{name, health, note}], doctorOk")
	return cmd
}

// runHostsCheck says what works on the way to opts.dest (app.CheckHost).
func runHostsCheck(ctx context.Context, opts *hostsOptions) error {
	ch, err := opts.channel(nil)
	if err != nil {
		return err
	}
	settings, err := opts.book.Host(opts.dest)
	if err != nil {
		return err
	}
	r := app.CheckHost(ctx, ch, ch, opts.dest, settings.Program)
	if opts.json {
		if err := opts.io.writeJSON(r); err != nil {
			return err
		}
	} else {
		on := opts.io.colourOn(opts.io.out)
		var t table
		for _, row := range r.Rows {
			t.add(row.Name, paint(on, stateColour(row.Health), row.Health), safe(row.Note))
		}
		if err := t.write(opts.io.out); err != nil {
			return err
		}
	}
	switch {
	case r.Unreachable != nil:
		if opts.json {
			fmt.Fprintf(opts.io.errOut, "peerctl: %s\n", refusalText(r.Unreachable, true))
			return silentError{wire.ExitCode(r.Unreachable.Reason)}
		}
		return r.Unreachable
	case !r.DoctorOK:
		return silentError{wire.ExitError}
	}
	return nil
}

func newHostsInstallCmd(f *factory) *cobra.Command {
	opts := newHostsOptions(f)
	cmd := &cobra.Command{
		Use:   "install DEST",
		Short: "Put this build on a host (same OS and architecture) and use it",
		Long:  helpLong(`Put this very build on DEST (same OS and architecture) under ~/.cache/peerctl/bin, checked by SHA-256 there, and use it`, "hosts-install"),
		Example: `  peerctl hosts install build-box
  peerctl hosts install --json dev@10.0.0.7
  peerctl hosts install build-box && peerctl list --host build-box`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.version = f.version().Version
			return hostsRunE(f, opts, runHostsInstall)(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object: host, os, arch, uname, path, kept, sha256, remoteVersion")
	return cmd
}

// runHostsInstall puts this build on opts.dest (app.InstallHost) and
// makes it the host's peerctl in the hosts file.
func runHostsInstall(ctx context.Context, opts *hostsOptions) error {
	dest := opts.dest
	self, err := opts.executable()
	if err != nil {
		return fmt.Errorf("locate this build: %w", err)
	}
	exec, err := opts.channel(nil)
	if err != nil {
		return err
	}
	remoteAt := func(program string) ports.Remote {
		ch, err := opts.channel(&program)
		if err != nil {
			return failingRemote{err}
		}
		return ch
	}
	r, err := app.InstallHost(ctx, exec, remoteAt, dest, app.InstallPlan{Self: self, Version: opts.version}, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return err
	}
	if _, err := editHosts(opts.getenv, func(hosts []wiring.Host) ([]wiring.Host, error) {
		hosts, i, _ := hostEntry(hosts, dest)
		hosts[i].Peerctl = r.Path
		return hosts, nil
	}); err != nil {
		return err
	}
	if opts.json {
		return opts.io.writeJSON(r)
	}
	switch {
	case r.Path == "":
		fmt.Fprintf(opts.io.out, "%s: %s, not this build's %s/%s: using peerctl %s on its PATH\n", safe(dest.String()), safe(r.Uname), runtime.GOOS, runtime.GOARCH, safe(r.RemoteVersion))
	case r.Kept:
		fmt.Fprintf(opts.io.out, "%s: already there: %s (peerctl %s)\n", safe(dest.String()), safe(r.Path), safe(r.RemoteVersion))
	default:
		fmt.Fprintf(opts.io.out, "%s: installed %s (peerctl %s, sha256 %s)\n", safe(dest.String()), safe(r.Path), safe(r.RemoteVersion), r.SHA256)
	}
	return nil
}

// failingRemote is a Remote that could not be built.
type failingRemote struct{ err error }

func (f failingRemote) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	return ports.RemoteResult{}, f.err
}

func (f failingRemote) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	return nil, f.err
}
