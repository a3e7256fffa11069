package courierexec

import "strings"

// keptClaudeCode lists CLAUDE_CODE_* variables that configure the provider
// or credentials rather than identify the calling session; they are kept.
var keptClaudeCode = []string{
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
	"CLAUDE_CODE_SKIP_BEDROCK_AUTH", "CLAUDE_CODE_SKIP_VERTEX_AUTH", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
	"CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_CLIENT_CERT", "CLAUDE_CODE_CLIENT_KEY",
}

// ScrubEnv returns env without the calling session's identity: CLAUDECODE
// and every CLAUDE_CODE_* variable (CLAUDE_CODE_ENTRYPOINT,
// CLAUDE_CODE_MESSAGING_SOCKET, CLAUDE_CODE_MESSAGING_TOKEN, ...) except the
// provider and credential settings in keptClaudeCode. Everything else (PATH,
// HOME, ANTHROPIC_*, proxies, locale) is kept. When configDir is non-empty
// CLAUDE_CONFIG_DIR is set to it, so the courier reads the same registry.
func ScrubEnv(env []string, configDir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "CLAUDECODE":
			continue
		case strings.HasPrefix(k, "CLAUDE_CODE_") && !kept(k):
			continue
		case configDir != "" && k == "CLAUDE_CONFIG_DIR":
			continue
		}
		out = append(out, kv)
	}
	if configDir != "" {
		out = append(out, "CLAUDE_CONFIG_DIR="+configDir)
	}
	return out
}

func kept(k string) bool {
	for _, x := range keptClaudeCode {
		if k == x {
			return true
		}
	}
	return false
}
