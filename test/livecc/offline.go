//go:build unix

package livecc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// Offline reports whether the tests claim to run offline: PEERCTL_OFFLINE=1,
// which scripts/offline.sh sets inside its network namespace.
func Offline() bool { return os.Getenv("PEERCTL_OFFLINE") == "1" }

// offlineProbes are documentation addresses (RFC 5737, RFC 3849): a route to
// them is a route off this machine.
var offlineProbes = []string{"192.0.2.1:9", "[2001:db8::1]:9"}

// CheckOffline returns nil when no network but loopback is reachable from
// here: every interface that is up is a loopback one, and the kernel has no
// route to a non-loopback address (a UDP "connect" to each of offlineProbes
// fails; it only looks the route up and sends nothing). Otherwise it returns
// an error naming what leaves the machine.
func CheckOffline() error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list interfaces: %w", err)
	}
	var problems []string
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp != 0 && ifc.Flags&net.FlagLoopback == 0 {
			problems = append(problems, "interface "+ifc.Name+" is up")
		}
	}
	for _, addr := range offlineProbes {
		c, err := net.Dial("udp", addr)
		if err == nil {
			problems = append(problems, "a route to "+addr+" goes out from "+c.LocalAddr().String())
			c.Close()
		}
	}
	if len(problems) > 0 {
		return errors.New("not offline: " + strings.Join(problems, "; "))
	}
	return nil
}

// RequireOffline fails t when the tests claim to run offline (Offline) but
// CheckOffline finds a way out: a live test must not go green on the open
// network while CI says it ran without one.
func RequireOffline(t testing.TB) {
	t.Helper()
	if !Offline() {
		return
	}
	if err := CheckOffline(); err != nil {
		t.Fatalf("PEERCTL_OFFLINE=1 but %v (run the live tests with scripts/offline.sh)", err)
	}
}
