package app_test

import (
	"path/filepath"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/app"
)

// testConfig is a Config that reads Claude Code's registry under configDir
// and Qwen Code's under configDir/qwen (absent unless a test makes it), so
// that no test reads this machine's homes.
func testConfig(configDir, transport string) app.Config {
	return app.Config{Transport: transport, Flags: map[string]string{
		claudecode.FlagConfigDir: configDir, qwencode.FlagHome: filepath.Join(configDir, "qwen")}}
}
