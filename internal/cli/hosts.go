package cli

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/adapters/hostsfile"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// loadHosts reads the hosts file; path is where it is.
func (c *cli) loadHosts() (hosts []hostsfile.Host, path string, err error) {
	if path, err = hostsfile.Path(c.getenv); err != nil {
		return nil, "", err
	}
	hosts, err = hostSchema.Load(path)
	return hosts, path, err
}

// configuredHosts are the hosts of the hosts file, as --host values.
func (c *cli) configuredHosts() ([]string, error) {
	hosts, _, err := c.loadHosts()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Dest.String()
	}
	return out, nil
}

// startOnHost starts a hosts command on the DEST arg (a usage error when
// it is not one).
func (c *cli) startOnHost(arg string, asJSON bool) (domain.Dest, error) {
	dest, err := parseDestArg(arg)
	if err != nil {
		return dest, err
	}
	c.started()
	c.jsonOut = asJSON
	return dest, nil
}

// parseDestArg is a DEST argument, a usage error when it is not one.
func parseDestArg(s string) (domain.Dest, error) {
	d, err := domain.ParseDest(s)
	if err != nil {
		return domain.Dest{}, usageError{err}
	}
	return d, nil
}

func (c *cli) hostsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "Keep the hosts peerctl reaches over ssh, install peerctl there, check them",
		Long:  helpLong(`Keep the hosts peerctl reaches over ssh ($XDG_CONFIG_HOME/peerctl/hosts), install peerctl there, check them`, "hosts"),
		Example: `  peerctl hosts add build-box --set config-dir=/home/dev/.claude
  peerctl hosts install build-box
  peerctl hosts check build-box
  peerctl list --hosts`,
	}
	cmd.AddCommand(c.hostsAddCmd(), c.hostsRemoveCmd(), c.hostsListCmd(), c.hostsCheckCmd(), c.hostsInstallCmd())
	return cmd
}

// editHosts loads the hosts file, lets edit change the list, and saves it.
func (c *cli) editHosts(edit func(hosts []hostsfile.Host) ([]hostsfile.Host, error)) error {
	_, err := c.editHostsAt(edit)
	return err
}

// editHostsAt is editHosts, also returning the hosts file's path.
func (c *cli) editHostsAt(edit func(hosts []hostsfile.Host) ([]hostsfile.Host, error)) (string, error) {
	hosts, path, err := c.loadHosts()
	if err != nil {
		return path, err
	}
	if hosts, err = edit(hosts); err != nil {
		return path, err
	}
	return path, hostSchema.Save(path, hosts)
}

func (c *cli) hostsAddCmd() *cobra.Command {
	var sets []string
	cmd := &cobra.Command{
		Use:   "add DEST",
		Short: "Add a host, or change its settings",
		Long:  helpLong(`Add DEST (an ssh alias, host or user@host) to the hosts file, or change its settings (--set KEY=VALUE; KEY= removes one)`, "hosts-add"),
		Example: `  peerctl hosts add build-box
  peerctl hosts add dev@10.0.0.7 --set config-dir=/home/dev/.claude --set claude=/opt/claude/bin/claude
  peerctl hosts add build-box --set claude=`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := parseDestArg(args[0])
			if err != nil {
				return err
			}
			type kv struct{ k, v string }
			var changes []kv
			for _, s := range sets {
				k, v, ok := strings.Cut(s, "=")
				if !ok || (k != hostsfile.KeyPeerctl && !slices.Contains(hostSchema.Keys(), k)) {
					return usageError{fmt.Errorf("--set %q: want KEY=VALUE, KEY one of %s, %s", s, hostsfile.KeyPeerctl, strings.Join(hostSchema.Keys(), ", "))}
				}
				changes = append(changes, kv{k, v})
			}
			c.started()
			added := false
			path, err := c.editHostsAt(func(hosts []hostsfile.Host) ([]hostsfile.Host, error) {
				i := slices.IndexFunc(hosts, func(h hostsfile.Host) bool { return h.Dest == dest })
				if i < 0 {
					hosts = append(hosts, hostsfile.Host{Dest: dest})
					i = len(hosts) - 1
					added = true
				}
				h := &hosts[i]
				for _, ch := range changes {
					switch {
					case ch.k == hostsfile.KeyPeerctl:
						h.Peerctl = ch.v
					case ch.v == "":
						delete(h.Settings, ch.k)
					default:
						if h.Settings == nil {
							h.Settings = map[string]string{}
						}
						h.Settings[ch.k] = ch.v
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
			fmt.Fprintf(c.stderr, "peerctl: %s host %s in %s\n", what, safe(dest.String()), safe(path))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE: a setting of the host ("+hostsfile.KeyPeerctl+", "+strings.Join(hostSchema.Keys(), ", ")+"); repeatable")
	return cmd
}

func (c *cli) hostsRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove DEST",
		Short: "Remove a host from the hosts file (nothing on the host is touched)",
		Long:  helpLong(`Remove DEST and its settings from the hosts file; nothing on the host itself is touched`, "hosts-remove"),
		Example: `  peerctl hosts remove build-box
  peerctl hosts remove dev@10.0.0.7
  peerctl hosts list --json | jq -r '.[].host' | xargs -n1 peerctl hosts remove`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := parseDestArg(args[0])
			if err != nil {
				return err
			}
			c.started()
			return c.editHosts(func(hosts []hostsfile.Host) ([]hostsfile.Host, error) {
				i := slices.IndexFunc(hosts, func(h hostsfile.Host) bool { return h.Dest == dest })
				if i < 0 {
					return nil, usageError{fmt.Errorf("no host %q in the hosts file (peerctl hosts list)", dest)}
				}
				return slices.Delete(hosts, i, i+1), nil
			})
		},
	}
}

// hostJSON is one host of `hosts list --json`.
type hostJSON struct {
	Host     string            `json:"host"`
	Peerctl  string            `json:"peerctl"`
	Settings map[string]string `json:"settings"`
}

func (c *cli) hostsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the hosts of the hosts file and their settings",
		Long:  helpLong(`List the hosts of the hosts file ($XDG_CONFIG_HOME/peerctl/hosts) and their settings`, "hosts-list"),
		Example: `  peerctl hosts list
  peerctl hosts list --json | jq -r '.[].host'
  peerctl list --hosts`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.started()
			c.jsonOut = asJSON
			hosts, path, err := c.loadHosts()
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]hostJSON, 0, len(hosts))
				for _, h := range hosts {
					s := h.Settings
					if s == nil {
						s = map[string]string{}
					}
					out = append(out, hostJSON{Host: h.Dest.String(), Peerctl: h.Peerctl, Settings: s})
				}
				return c.writeJSON(out)
			}
			if len(hosts) == 0 {
				fmt.Fprintf(c.stderr, "peerctl: no hosts in %s (peerctl hosts add DEST)\n", safe(path))
				return nil
			}
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "HOST\tPEERCTL\tSETTINGS")
			for _, h := range hosts {
				p := h.Peerctl
				if p == "" {
					p = "peerctl on PATH"
				}
				var s []string
				for _, k := range hostSchema.Keys() {
					if v, ok := h.Settings[k]; ok {
						s = append(s, k+"="+v)
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", safe(h.Dest.String()), safe(p), safe(strings.Join(s, " ")))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {host, peerctl, settings}")
	return cmd
}

// hostChannel is the ssh channel with the hosts file as its book; with
// atProgram, every host's peerctl is that program instead ("": the one
// on the remote PATH).
func (c *cli) hostChannel(atProgram *string) (hostChannel, error) {
	book := c.hostBook
	if atProgram != nil {
		book = programBook{book, *atProgram}
	}
	return c.sshChannel(book)
}

// hostChannel is what the hosts commands need of the ssh channel.
type hostChannel interface {
	ports.Remote
	ports.HostExec
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

func (c *cli) hostsCheckCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check DEST",
		Short: "Say what works on the way to a host: ssh, host key, peerctl there, its doctor",
		Long:  helpLong(`Say what works on the way to DEST (ssh, the host key, the far side's peerctl and version, its doctor); nothing is written`, "hosts-check"),
		Example: `  peerctl hosts check build-box
  peerctl hosts check --json build-box | jq '.checks[] | select(.health != "ok")'
  PEERCTL_SSH="ssh -F ~/work/ssh_config" peerctl hosts check lab`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := c.startOnHost(args[0], asJSON)
			if err != nil {
				return err
			}
			ch, err := c.hostChannel(nil)
			if err != nil {
				return err
			}
			settings, err := c.hostBook.Host(dest)
			if err != nil {
				return err
			}
			r := app.CheckHost(cmd.Context(), ch, ch, dest, settings.Program)
			if asJSON {
				if err := c.writeJSON(r); err != nil {
					return err
				}
			} else {
				w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
				for _, row := range r.Rows {
					fmt.Fprintf(w, "%s\t%s\t%s\n", row.Name, row.Health, safe(row.Note))
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
			switch {
			case r.Unreachable != nil:
				if asJSON {
					fmt.Fprintf(c.stderr, "peerctl: %s\n", refusalText(r.Unreachable))
					return silentError{wire.ExitCode(r.Unreachable.Reason)}
				}
				return r.Unreachable
			case !r.DoctorOK:
				return silentError{wire.ExitError}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: host, checks [{name, health, note}], doctorOk")
	return cmd
}

func (c *cli) hostsInstallCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "install DEST",
		Short: "Put this very build on a host (same OS and architecture) and use it there",
		Long:  helpLong(`Put this very build on DEST (same OS and architecture) under ~/.cache/peerctl/bin, checked by SHA-256 there, and use it`, "hosts-install"),
		Example: `  peerctl hosts install build-box
  peerctl hosts install --json dev@10.0.0.7
  peerctl hosts install build-box && peerctl list --host build-box`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := c.startOnHost(args[0], asJSON)
			if err != nil {
				return err
			}
			self, err := c.executable()
			if err != nil {
				return fmt.Errorf("locate this build: %w", err)
			}
			exec, err := c.hostChannel(nil)
			if err != nil {
				return err
			}
			remoteAt := func(program string) ports.Remote {
				ch, err := c.hostChannel(&program)
				if err != nil {
					return failingRemote{err}
				}
				return ch
			}
			r, err := app.InstallHost(cmd.Context(), exec, remoteAt, dest, app.InstallPlan{Self: self, Version: c.version().Version}, runtime.GOOS, runtime.GOARCH)
			if err != nil {
				return err
			}
			if err := c.editHosts(func(hosts []hostsfile.Host) ([]hostsfile.Host, error) {
				i := slices.IndexFunc(hosts, func(h hostsfile.Host) bool { return h.Dest == dest })
				if i < 0 {
					hosts = append(hosts, hostsfile.Host{Dest: dest})
					i = len(hosts) - 1
				}
				hosts[i].Peerctl = r.Path
				return hosts, nil
			}); err != nil {
				return err
			}
			if asJSON {
				return c.writeJSON(r)
			}
			switch {
			case r.Path == "":
				fmt.Fprintf(c.stdout, "%s: %s, not this build's %s/%s: using peerctl %s on its PATH\n", safe(dest.String()), safe(r.Uname), runtime.GOOS, runtime.GOARCH, safe(r.RemoteVersion))
			case r.Kept:
				fmt.Fprintf(c.stdout, "%s: already there: %s (peerctl %s)\n", safe(dest.String()), safe(r.Path), safe(r.RemoteVersion))
			default:
				fmt.Fprintf(c.stdout, "%s: installed %s (peerctl %s, sha256 %s)\n", safe(dest.String()), safe(r.Path), safe(r.RemoteVersion), r.SHA256)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: host, os, arch, uname, path, kept, sha256, remoteVersion")
	return cmd
}

// failingRemote is a Remote that could not be built.
type failingRemote struct{ err error }

func (f failingRemote) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	return ports.RemoteResult{}, f.err
}

func (f failingRemote) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	return nil, f.err
}
