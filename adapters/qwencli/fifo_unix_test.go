//go:build unix

package qwencli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// A FIFO at settings.json is reported, never waited on (before the shared
// reader, doctor hung in the open).
func TestProbeRefusesAFIFOSettings(t *testing.T) {
	home := t.TempDir()
	assert.NoError(t, unix.Mkfifo(filepath.Join(home, "settings.json"), 0o600))
	p := (&Prober{Program: filepath.Join(home, "absent"), Home: home}).ProbeQwen(context.Background())
	assert.Equal(t, "unknown", p.Messaging)
	assert.Contains(t, p.MessagingWhy, "not a regular file")
}
