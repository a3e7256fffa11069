package qwencode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/adapters/qwencode"
)

func TestTranscriptPath(t *testing.T) {
	assert.Equal(t, "/h/projects/-tmp-qa-qwork-a/chats/s1.jsonl", qwencode.TranscriptPath("/h", "/tmp/qa/qwork/a", "s1"))
	assert.Empty(t, qwencode.TranscriptPath("/h", "/w", "../x"))
	assert.Empty(t, qwencode.TranscriptPath("", "/w", "s"))
}
