package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteOnePagePerCommand(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	for _, page := range []string{"peerctl.1", "peerctl-send.1", "peerctl-list.1", "peerctl-mcp.1", "peerctl-endpoint-parse.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if assert.NoError(t, err, page) {
			assert.Contains(t, string(b), `.TH "PEERCTL" "1" "Jan 2026" "peerctl" "peerctl manual"`, page)
			assert.NotContains(t, string(b), "Auto generated", page)
		}
	}
	send, err := os.ReadFile(filepath.Join(dir, "peerctl-send.1"))
	require.NoError(t, err)
	assert.Contains(t, string(send), "await-reply", "the flags are on the page")
	// A flag's value when given without one, as help shows it; not its unset default.
	for _, want := range []string{`\fB--await-reply\fP[=10m0s]`, `\fB--wait\fP[=10m0s]`, `\fB--debug\fP[="send"]`} {
		assert.Contains(t, string(send), want)
	}
}

// The Homebrew cask (.goreleaser.yaml) names every man page, one by one:
// a cask's manpages take no pattern, so a new command's page would be
// left out.
func TestCaskNamesEveryPage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	pages, err := os.ReadDir(dir)
	require.NoError(t, err)
	config, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(config), "homebrew_casks:")
	for _, p := range pages {
		assert.Contains(t, string(config), "      - man/man1/"+p.Name()+"\n", "the cask's manpages")
	}
}
