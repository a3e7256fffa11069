package domain

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The domain holds no harness's spec: every harness's comes from its
// plug-in package. Its tests register a stand-in as the zero Harness,
// worded as Claude Code's (whose plug-in supplies the zero Harness's spec
// in the program) so that the refusals and endpoints the tests read are
// the ones people see, but judged by the shared rule: Claude Code's own
// classifier is tested beside it, in adapters/fsregistry.
func TestMain(m *testing.M) {
	RegisterZeroHarness(standIn)
	os.Exit(m.Run())
}

// StandInPrefix starts the stand-in's endpoints.
const StandInPrefix = "cc-peer:v1:"

// NewStandInEndpoint builds an endpoint of the stand-in (the zero Harness).
func NewStandInEndpoint(pid int, name, socket string) (Endpoint, error) {
	return NewHarnessEndpoint(0, pid, name, socket)
}

var standIn = HarnessSpec{
	Word: "claude-code", Title: "Claude Code", Prefix: StandInPrefix, Pins: "name",
	Key: func(r Record) string { return r.Name },
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint names %q but pid %d is now named %q", pinned, pid, now)
	},
	Unaddressable: func(r Record) string {
		switch {
		case r.SessionID == "":
			return "record has no sessionId"
		case r.Name == "":
			return "record has no name"
		case r.SocketPath == "":
			return "record has no messagingSocketPath"
		case !strings.HasPrefix(r.SocketPath, "/"):
			return fmt.Sprintf("messagingSocketPath %q is not an absolute path", r.SocketPath)
		}
		return ""
	},
	ReplyFrom: func(in Inbound, target Session) bool { return in.IsFrom(target.SocketPath()) },
}
