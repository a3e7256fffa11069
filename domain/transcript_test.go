package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/domain"
)

func TestProjectSlug(t *testing.T) {
	tests := []struct{ cwd, want string }{
		{"/home/dev/src/shop", "-home-dev-src-shop"},
		{"/tmp/a.b_c d", "-tmp-a-b-c-d"},
		{"/srv/ünï", "-srv---n--"}, // every non-alphanumeric byte: ü and ï are 2 bytes each
		{"rel/Dir9", "rel-Dir9"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cwd, func(t *testing.T) {
			assert.Equal(t, tt.want, domain.ProjectSlug(tt.cwd))
		})
	}
}

func TestTranscriptPath(t *testing.T) {
	tests := []struct {
		name                 string
		config, cwd, session string
		want                 string
	}{
		{"normal", "/cfg", "/home/dev/src/shop", idA, "/cfg/projects/-home-dev-src-shop/" + idA + ".jsonl"},
		{"no config dir", "", "/x", idA, ""},
		{"no cwd", "/cfg", "", idA, ""},
		{"no session", "/cfg", "/x", "", ""},
		{"session with slash", "/cfg", "/x", "../../etc/passwd", ""},
		{"session with backslash", "/cfg", "/x", `a\b`, ""},
		{"session dot", "/cfg", "/x", ".", ""},
		{"session dotdot", "/cfg", "/x", "..", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, domain.TranscriptPath(tt.config, tt.cwd, tt.session))
		})
	}
}
