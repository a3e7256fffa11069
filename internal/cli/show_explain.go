package cli

// showGlosses say what a `show` row means, for the rows whose name alone
// does not (show --explain prints each under its row); a harness's own
// words for a row (ports.Glosser, wire.Show.Glosses) come first, and
// Claude Code's are the common ones.
var showGlosses = map[string]string{
	"verdict":      "whether the record is a live session: live, stale (its process is gone), reused (its pid is another process now), foreign, headless, … (peerctl list --help)",
	"status":       "what the session's record says it does (its last word when the process has ended): idle, busy, waiting (on its user: a dialog, a prompt) or unknown (not settled yet)",
	"kind":         "interactive is a session a person uses, and a peer; print, bg and daemon are headless runs",
	"updated":      "when the session last rewrote its record (UTC)",
	"procStart":    "the process's start as the record gives it: clock ticks since boot, field 22 of /proc/<pid>/stat; another start under the same pid means the pid was reused and the session is gone",
	"procStartFt":  "the start Claude Code checks instead of procStart when the record has both",
	"pidDomain":    "the machine and pid namespace the pid is counted in (machine-id, namespace inode): a pid from another machine or container says nothing about this one's processes",
	"tmux":         "the tmux pane the session runs in: session:@window.%pane",
	"peerProtocol": "the version of the messaging protocol the session speaks (0: it publishes none, and cannot be messaged)",
	"file":         "the record on disk: peerctl reads it and never writes it",
	"addressable":  "whether a message can reach the session now: live, with a messaging socket that is there",
	"endpoint":     "the address send takes that names this session alone (harness, pid, name or id, socket in one word)",
	"socket":       "the session's messaging (inbox) socket: where a message is handed over",
	"transcript":   "the session's conversation log: send reads it to see the message arrive (delivered)",
	"not checked":  "what the liveness check could not verify, and why: the session may be live or not",
}
