package cli

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/internal/wiring"
)

// unitBus is getenv with serve's bus flags (f, as given to cmd) in place
// of the variables they override, the credentials file made absolute: a
// unit printed with --nats, --node or --nats-creds joins that bus.
func unitBus(cmd *cobra.Command, getenv func(string) string, f busFlags) func(string) string {
	return func(k string) string {
		switch k {
		case natsEnv:
			return flagOrEnv(cmd, getenv, "nats", f.urls, natsEnv)
		case nodeEnv:
			return flagOrEnv(cmd, getenv, "node", f.node, nodeEnv)
		case natsCredsEnv:
			creds := flagOrEnv(cmd, getenv, "nats-creds", f.creds, natsCredsEnv)
			if abs, err := filepath.Abs(creds); err == nil && creds != "" {
				return abs
			}
			return creds
		}
		return getenv(k)
	}
}

// unitVar is one variable of the environment a service definition gives
// peerctl serve: Value is written; Why, when not "", says why it is only
// named (a secret, or a value of the login).
type unitVar struct {
	Name, Value, Why string
}

// unitEnv is the environment peerctl serve needs to be the service the
// commands of this shell reach and to run what they would run: the
// variables that decide its folders (state, socket, hosts file, each
// harness's registry and home), its fleet's bus (unitBus) and the
// programs it starts (PATH, each
// harness's program, ssh), with this shell's values, in a fixed order;
// those not set here (getenv) are left out. A harness's secrets, a bus
// URL with a password or token (busSecret) and the ssh agent's socket are
// named without their values.
func unitEnv(getenv func(string) string) []unitVar {
	names := []string{"PATH", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PEERCTL_SSH", hostTimeoutEnv, retentionEnv,
		natsEnv, nodeEnv, natsCredsEnv}
	var secrets []string
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			names = append(names, f.Env)
		}
		names = append(names, p.Env...)
		secrets = append(secrets, p.SecretEnv...)
	}
	var out []unitVar
	seen := map[string]bool{}
	for _, k := range names {
		v := getenv(k)
		if k == "" || seen[k] || v == "" {
			continue
		}
		seen[k] = true
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			out = append(out, unitVar{Name: k, Why: "its value here holds a control character: give it by hand"})
			continue
		}
		if k == natsEnv && busSecret(v) {
			out = append(out, unitVar{Name: k, Why: "its URL holds a password or token: set it where only you can read it, or use --nats-creds"})
			continue
		}
		out = append(out, unitVar{Name: k, Value: v})
	}
	for _, k := range secrets {
		if !slices.ContainsFunc(out, func(u unitVar) bool { return u.Name == k }) {
			out = append(out, unitVar{Name: k, Why: "a secret: set it where only you can read it, if the service needs it"})
		}
	}
	return append(out, unitVar{Name: "SSH_AUTH_SOCK", Why: "your ssh agent's socket changes with each login: set it if a host needs the agent"})
}

// systemdEnv is the [Service] lines of the unit's environment: an
// Environment= line per value (quoted as systemd.exec(5) reads it: \ and "
// escaped, % doubled), a comment per variable only named.
func systemdEnv(vars []unitVar) string {
	var b strings.Builder
	b.WriteString("# The environment of the shell that printed this unit: the folders peerctl reads and the\n" +
		"# programs it starts. A service for another state folder ($XDG_STATE_HOME) is another service.\n")
	for _, v := range vars {
		if v.Why == "" {
			q := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%").Replace(v.Name + "=" + v.Value)
			fmt.Fprintf(&b, "Environment=\"%s\"\n", q)
		}
	}
	for _, v := range vars {
		if v.Why != "" {
			fmt.Fprintf(&b, "# Not written: %s (%s); systemctl --user edit peerctl adds it\n", v.Name, v.Why)
		}
	}
	return b.String()
}

// launchdEnv is the plist's EnvironmentVariables entry and a comment per
// variable only named.
func launchdEnv(vars []unitVar) string {
	var b strings.Builder
	b.WriteString("  <!-- The environment of the shell that printed this: the folders peerctl reads and the programs it starts. -->\n")
	b.WriteString("  <key>EnvironmentVariables</key><dict>\n")
	for _, v := range vars {
		if v.Why == "" {
			fmt.Fprintf(&b, "    <key>%s</key><string>%s</string>\n", xmlEscape(v.Name), xmlEscape(v.Value))
		}
	}
	b.WriteString("  </dict>\n")
	for _, v := range vars {
		if v.Why != "" {
			fmt.Fprintf(&b, "  <!-- Not written: %s (%s) -->\n", v.Name, v.Why)
		}
	}
	return b.String()
}

// busSecret reports whether a server list (URL[,URL...]) holds a user's
// password or a token (nats://USER:PASS@HOST, nats://TOKEN@HOST): a secret
// a service definition, a file others may read, must not hold.
func busSecret(urls string) bool {
	for _, s := range strings.Split(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(s)); err != nil || u.User != nil {
			return true // unreadable: it may hold one
		}
	}
	return false
}
