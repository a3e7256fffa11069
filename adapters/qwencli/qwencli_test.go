package qwencli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMessagingDecision(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		version string
		setting *bool
		want    string
	}{
		{"0.24.4", nil, "on"}, {"0.24.0", nil, "on"}, {"1.0.0", nil, "on"},
		{"0.23.0", nil, "off"}, {"0.21.10", nil, "off"}, {"", nil, "unknown"},
		{"0.23.0", &yes, "on"}, {"0.24.4", &no, "off"}, {"", &yes, "on"},
	}
	for _, c := range cases {
		got, why := messaging(c.version, c.setting, nil, "/h")
		assert.Equal(t, c.want, got, "%s %v: %s", c.version, c.setting, why)
		assert.NotEmpty(t, why)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "qwen")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho 0.23.0\n"), 0o755))
	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(home, 0o700))
	p := (&Prober{Program: prog, Home: home}).ProbeQwen(context.Background())
	require.NoError(t, p.Err)
	assert.Equal(t, "0.23.0", p.Version)
	assert.Equal(t, "off", p.Messaging)

	require.NoError(t, os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"agents":{"crossSessionMessaging":true}}`), 0o600))
	p = (&Prober{Program: prog, Home: home}).ProbeQwen(context.Background())
	assert.Equal(t, "on", p.Messaging)

	p = (&Prober{Program: filepath.Join(dir, "absent"), Home: home}).ProbeQwen(context.Background())
	assert.Error(t, p.Err)
	assert.Empty(t, p.Path)

	// The program is named once: "find "qwen": executable file not found
	// in $PATH", not again by exec's own "exec: "qwen": ...".
	t.Setenv("PATH", dir)
	p = (&Prober{Program: "qwen-absent", Home: home}).ProbeQwen(context.Background())
	require.Error(t, p.Err)
	assert.Equal(t, 1, strings.Count(p.Err.Error(), "qwen-absent"), p.Err.Error())
}
