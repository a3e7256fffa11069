package transporttest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/peerctl/peerctl/domain"
)

// The contract names no harness: the fake's target is a record of a
// stand-in for the zero Harness, addressable when it has a name and an
// absolute socket.
func TestMain(m *testing.M) {
	domain.RegisterZeroHarness(domain.HarnessSpec{
		Word: "stand-in", Title: "Stand-in", Prefix: "standin-peer:v1:", Pins: "name",
		Key: func(r domain.Record) string { return r.Name },
		Unaddressable: func(r domain.Record) string {
			if r.Name == "" || !strings.HasPrefix(r.SocketPath, "/") {
				return "no name or no absolute socket"
			}
			return ""
		},
	})
	os.Exit(m.Run())
}
