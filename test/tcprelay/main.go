// Command tcprelay stands in for a bastion in tests: as an ssh
// ProxyCommand (`tcprelay HOST PORT`) it connects to HOST:PORT and relays
// its stdin to the connection and the connection to its stdout, until
// the server closes it or its stdout is gone. Two aliases with one HostName reach two machines
// through two relays, as through two bastions.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: tcprelay HOST PORT")
		os.Exit(2)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(os.Args[1], os.Args[2]), 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcprelay:", err)
		os.Exit(1)
	}
	go func() { _, _ = io.Copy(conn, os.Stdin); _ = conn.(*net.TCPConn).CloseWrite() }()
	_, _ = io.Copy(os.Stdout, conn) // until the server ends, or ssh does
}
