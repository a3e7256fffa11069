package domain

import "fmt"

// claudeCodeSpec is Claude Code's (2.1.x; docs/CLAUDE-CODE-FACTS.md): its
// endpoints pin the session's name, its records are classified by
// classifyClaude, and a reply names its sender by the sender's socket.
var claudeCodeSpec = HarnessSpec{
	Word: "claude-code", Title: "Claude Code", Prefix: EndpointPrefix, Pins: "name",
	Key: func(r Record) string { return r.Name },
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint names %q but pid %d is now named %q", pinned, pid, now)
	},
	Classify:  classifyClaude,
	ReplyFrom: func(in Inbound, target Session) bool { return in.IsFrom(target.SocketPath()) },
}
