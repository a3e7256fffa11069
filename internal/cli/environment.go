package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/internal/wiring"
)

// EnvVar is one row of the environment table: the variables it names
// (one, or a group read together), what peerctl does with them (the man
// pages), and that in short for a line of `peerctl help environment`
// ("": the meaning is short enough).
type EnvVar struct {
	Names          []string
	Meaning, Short string
}

// Environment is the environment table (a copy), for the man pages.
func Environment() []EnvVar { return slices.Clone(environment) }

// File is one row of the files table: a path (with the default of the
// variables that move it) and what peerctl does with it.
type File struct {
	Path, Meaning string
}

// Files are the files and folders peerctl reads or writes, for the man
// pages' FILES section.
var Files = []File{
	{"~/.claude/sessions/*.json", "Claude Code's registry ($CLAUDE_CONFIG_DIR): read, never written; the *.key files beside them are never opened"},
	{"~/.qwen/sessions/", "Qwen Code's registry ($QWEN_HOME): read, never written"},
	{"~/.codex/", "Codex's home ($CODEX_HOME): read, never written"},
	{"~/.local/share/opencode/opencode.db", "opencode's database ($XDG_DATA_HOME, $OPENCODE_DB): read, never written"},
	{"~/.local/state/peerctl/" + wiring.OutboxFileName, "the outbox of send --durable ($XDG_STATE_HOME); peerctl serve is its one writer"},
	{"~/.local/state/peerctl/" + serveLogName, "the log of a peerctl serve started on demand"},
	{"$XDG_RUNTIME_DIR/peerctl/serve-*.sock", "peerctl serve's socket, one per state folder (else in ~/.cache/peerctl/run/)"},
	{"~/.config/peerctl/hosts", "the hosts file of peerctl hosts ($XDG_CONFIG_HOME)"},
	{"~/.config/peerctl/policy", "the trust policy of peerctl policy ($XDG_CONFIG_HOME)"},
}

// environment is every environment variable peerctl reads, written once:
// `peerctl help environment` prints it and the man pages' ENVIRONMENT
// section is made from it (EnvironmentHelp); a test holds that every
// variable the code reads is here.
var environment = []EnvVar{
	{[]string{"CLAUDE_CONFIG_DIR"}, "Claude Code's config dir, whose sessions/ is its registry (--config-dir; else ~/.claude)", "Claude Code's config (--config-dir; ~/.claude)"},
	{[]string{"QWEN_HOME"}, "Qwen Code's home folder (--qwen-home; else ~/.qwen)", "Qwen Code's home (--qwen-home; else ~/.qwen)"},
	{[]string{"CODEX_HOME"}, "Codex's home folder (--codex-home; else ~/.codex)", "Codex's home (--codex-home; else ~/.codex)"},
	{[]string{"XDG_DATA_HOME"}, "where opencode's database is looked for ($XDG_DATA_HOME/opencode; else ~/.local/share/opencode)", "where opencode's data is (else ~/.local/share)"},
	{[]string{"OPENCODE_DB"}, "opencode's database file (a name without a folder: in its data folder; default opencode.db)", "opencode's database file (default opencode.db)"},
	{[]string{"OPENCODE_SERVER_PASSWORD"}, "the password of an opencode server that asks for one (never printed)", "an opencode server's password (never printed)"},
	{[]string{"OPENCODE_SERVER_USERNAME"}, "its user name (else opencode's default)", ""},
	{[]string{"PEERCTL_CLAUDE"}, "the claude program the courier runs (else claude on PATH)", "the courier's claude (else claude on PATH)"},
	{[]string{"PEERCTL_QWEN"}, "the qwen program doctor checks (else qwen on PATH)", "the qwen doctor checks (else qwen on PATH)"},
	{[]string{"PEERCTL_CODEX"}, "the codex program the queue transport runs (else codex on PATH)", "the codex program to run (else codex on PATH)"},
	{[]string{"PEERCTL_DEBUG"}, "as --debug: log to stderr what a send does (send), or the dependency wiring (fx)", "as --debug: log what a send does, or fx's wiring"},
	{[]string{"PEERCTL_SERVE"}, "off: never start or use peerctl serve (send --durable and outbox cancel/retry then refuse)", "off: never start or use peerctl serve"},
	{[]string{"PEERCTL_SSH"}, "the ssh command line --host runs (split at blanks; else ssh)", "the ssh command --host runs (else ssh)"},
	{[]string{"PEERCTL_OUTBOX_RETENTION"}, "how long peerctl serve keeps a finished message when --retention is not given (a Go duration; default 720h; 0 keeps every one)", "as serve --retention (default 720h; 0: keep all)"},
	{[]string{"PEERCTL_NATS"}, "the fleet's NATS servers, comma-separated, when --nats is not given (serve, list --fleet, --host nats:NODE; docs/FLEET.md)", "as --nats: the fleet's NATS servers"},
	{[]string{"PEERCTL_NODE"}, "this machine's unique name on the fleet's bus when --node is not given, and the sender's name of its requests to other nodes (default: the host name)", "as --node: this machine's name on the bus"},
	{[]string{"PEERCTL_NATS_CREDS"}, "a NATS .creds or nkey seed file when --nats-creds is not given", "as --nats-creds: a NATS .creds or nkey seed file"},
	{[]string{"PEERCTL_HOST_TIMEOUT"}, "how long a --host call without a --timeout of its own may take (a Go duration; default 1m)", "a --host call's time-out without --timeout (1m)"},
	{[]string{"PEERCTL_SEND_EVENTS", "PEERCTL_SEND_SETTLED"}, "1 (set by a peerctl calling over ssh): send --json prints its events first; send hands over only to a session that has settled (a durable message), refusing one still starting not_addressable", "set by a calling peerctl"},
	{[]string{"SSH_CONNECTION"}, "set by sshd: a far side's call names its machine's address (the trust policy's host:DEST)", "set by sshd: the caller, for the trust policy"},
	{[]string{"CLAUDE_CODE_MESSAGING_SOCKET"}, "whoami: the Claude Code session this shell runs inside", "whoami: the Claude Code session this shell is in"},
	{[]string{"CODEX_THREAD_ID"}, "whoami: the Codex thread this shell runs inside", "whoami: the Codex thread this shell is in"},
	{[]string{"OPENCODE_PID"}, "whoami: the opencode process this shell runs inside", "whoami: the opencode process this shell is in"},
	{[]string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_EXECPATH", "CODEX_SESSION_ID", "OPENCODE"},
		"whoami: the marks of running inside a session (the courier's environment is scrubbed of Claude Code's)", "whoami: the marks of running in a session"},
	{[]string{"HOME"}, "the ~ of every default folder named here (~/.claude, ~/.qwen, ~/.codex, ~/.local/share, ~/.local/state, ~/.config, ~/.cache)", "the ~ of every default folder here"},
	{[]string{"XDG_STATE_HOME"}, "the outbox's folder ($XDG_STATE_HOME/peerctl; else ~/.local/state/peerctl)", "the outbox's folder (~/.local/state/peerctl)"},
	{[]string{"XDG_RUNTIME_DIR"}, "peerctl serve's socket, the ssh control sockets and Qwen Code's inbox sockets (else the cache or temp folder)", "serve's, ssh's and Qwen Code's sockets"},
	{[]string{"XDG_CACHE_HOME"}, "the cache folder (else ~/.cache): the service's socket without XDG_RUNTIME_DIR", "the cache folder (else ~/.cache)"},
	{[]string{"XDG_CONFIG_HOME"}, "the hosts file and the trust policy file ($XDG_CONFIG_HOME/peerctl/hosts and .../policy; else in ~/.config/peerctl/)", "the hosts and trust policy files (~/.config)"},
	{[]string{"PATH"}, "where claude, qwen, codex, opencode and ssh are found", "where the harnesses' programs and ssh are found"},
	{[]string{"COLUMNS"}, "the width --help wraps to (60 to 120; else 120)", ""},
	{[]string{"NO_COLOR", "CLICOLOR", "TERM"}, "not empty, CLICOLOR=0 or TERM=dumb: no colour, even on a terminal (https://no-color.org)", "not empty, CLICOLOR=0 or TERM=dumb: no colour"},
	{[]string{"CLICOLOR_FORCE"}, "not empty nor 0: colour on a pipe or file too (unless colour is off as above)", "not empty nor 0: colour on a pipe too"},
	{[]string{"GOMEMLIMIT"}, "peerctl serve's soft memory limit (else 64 MiB)", ""},
}

// EnvironmentHelp is the environment table as `peerctl help environment`
// prints it: a row's first name, then its meaning in short (naming the
// row's other names), wrapped to width under its own start.
func EnvironmentHelp(width int) string {
	var t table
	for _, v := range environment {
		short := v
		if v.Short != "" {
			short.Meaning = v.Short
		}
		t.add("  "+v.Names[0], short.Text())
	}
	t.wrapLast(width)
	var b strings.Builder
	_ = t.write(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

// Text is the row's meaning, with its other names after it.
func (v EnvVar) Text() string {
	if len(v.Names) == 1 {
		return v.Meaning
	}
	return v.Meaning + " (also " + strings.Join(v.Names[1:], ", ") + ")"
}

// environmentTopic is "peerctl help environment" (a help topic, as
// exit-codes is).
func environmentTopic(f *factory) *cobra.Command {
	return newHelpTopic(f, "environment", "The environment variables peerctl reads",
		`Every environment variable peerctl reads; a flag given on the command line wins over its
variable. Each in full: man peerctl (ENVIRONMENT); which folder is read for what:
docs/COMMANDS.md.

`, EnvironmentHelp)
}
