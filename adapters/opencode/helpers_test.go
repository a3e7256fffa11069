package opencode

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/peerctl/peerctl/ports"
)

func osGetpid() int { return os.Getpid() }

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// settings are HarnessSettings reading env instead of the environment.
func settings(env map[string]string) ports.HarnessSettings {
	return ports.HarnessSettings{Getenv: func(k string) string { return env[k] }}
}

// self stands for the process behind a made-up pid: the fake servers
// listen in this test process.
func self(int) int { return os.Getpid() }
