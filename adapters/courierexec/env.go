package courierexec

import "strings"

// ScrubEnv returns env without the calling session's identity and without
// anything that would send the courier's requests elsewhere: CLAUDECODE,
// every CLAUDE_CODE_* variable (CLAUDE_CODE_ENTRYPOINT,
// CLAUDE_CODE_MESSAGING_SOCKET, the provider switches CLAUDE_CODE_USE_BEDROCK
// and the like, ...), CLAUDE_CONFIG_DIR, every ANTHROPIC_* variable
// (ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ...) and the HTTP proxy
// variables (upper and lower case). Everything else (PATH, HOME, TMPDIR,
// locale) is kept.
func ScrubEnv(env []string) []string {
	out := make([]string, 0, len(env)+8)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "CLAUDECODE", k == "CLAUDE_CONFIG_DIR",
			strings.HasPrefix(k, "CLAUDE_CODE_"), strings.HasPrefix(k, "ANTHROPIC_"):
			continue
		}
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// quietEnv turns off Claude Code's auto-updater and its non-essential
// traffic (telemetry, error reporting, feature flags, update checks): every
// claude peerctl starts, the courier and its probes, runs with it.
var quietEnv = []string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}

// CourierEnv is the courier's environment: env scrubbed (ScrubEnv), then
// its own config dir, the endpoint's base URL and key, no proxy for
// loopback, and quietEnv (Claude Code's DISABLE_AUTOUPDATER and
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).
func CourierEnv(env []string, configDir, baseURL, key string) []string {
	return append(append(ScrubEnv(env),
		"CLAUDE_CONFIG_DIR="+configDir,
		"ANTHROPIC_BASE_URL="+baseURL,
		"ANTHROPIC_API_KEY="+key,
		"NO_PROXY=127.0.0.1,localhost",
	), quietEnv...)
}
