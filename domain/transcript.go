package domain

import (
	"path/filepath"
	"strings"
)

// ProjectSlug turns a session's cwd into the folder name Claude Code uses
// under <config dir>/projects/: every byte that is not an ASCII letter or
// digit becomes '-' (measured on Claude Code 2.1.328; see
// docs/CLAUDE-CODE-FACTS.md).
func ProjectSlug(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// TranscriptPath is where Claude Code keeps a session's transcript:
// <configDir>/projects/<ProjectSlug(cwd)>/<sessionID>.jsonl. It returns ""
// when cwd or sessionID is unknown or sessionID could escape the folder.
func TranscriptPath(configDir, cwd, sessionID string) string {
	if configDir == "" || cwd == "" || sessionID == "" || strings.ContainsAny(sessionID, `/\`) || sessionID == "." || sessionID == ".." {
		return ""
	}
	return filepath.Join(configDir, "projects", ProjectSlug(cwd), sessionID+".jsonl")
}
