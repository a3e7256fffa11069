package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestNewMessage(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		refused string // part of the detail; "" means accepted
	}{
		{"plain", "tests are green", ""},
		{"leading and trailing space kept", "  hi \n", ""},
		{"non-ASCII", "ünï ☃ 日本", ""},
		{"exactly 64 KiB", strings.Repeat("a", domain.MaxMessageBytes), ""},
		{"64 KiB of multi-byte runes", strings.Repeat("é", domain.MaxMessageBytes/2), ""},
		{"empty", "", "empty or whitespace"},
		{"spaces", "   ", "empty or whitespace"},
		{"tabs and newlines", "\t\n\r\n ", "empty or whitespace"},
		{"unicode whitespace only", "\u00a0\u2003", "empty or whitespace"},
		{"NUL", "a\x00b", "NUL byte at offset 1"},
		{"invalid UTF-8", "ok\xffno", "not valid UTF-8 (first bad byte at offset 2)"},
		{"truncated rune", "é"[:1] + "x", "not valid UTF-8 (first bad byte at offset 0)"},
		{"64 KiB + 1", strings.Repeat("a", domain.MaxMessageBytes+1), "65537 bytes, over the 65536-byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := domain.NewMessage(tt.text)
			if tt.refused == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.text, m.Text(), "text is kept byte for byte")
				assert.Equal(t, len(tt.text), m.Len())
				assert.False(t, m.IsZero())
				return
			}
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, domain.ReasonInvalidMessage, r.Reason)
			assert.Equal(t, "invalid_message", r.Reason.String())
			assert.Contains(t, r.Detail, tt.refused)
			assert.True(t, m.IsZero())
		})
	}
}

func TestMessageStringDoesNotPrintText(t *testing.T) {
	m, err := domain.NewMessage("secret plan")
	require.NoError(t, err)
	assert.Equal(t, "message(11 bytes)", m.String())
}

func TestReasonWordsRoundTrip(t *testing.T) {
	want := []string{"harness_unsupported", "not_live", "identity_mismatch", "delivery_failed", "not_addressable", "invalid_message", "no_reply", "wait_timeout", "outcome_unknown", "host_unreachable", "outbox_unavailable", "key_conflict", "not_found", "wrong_state", "not_allowed"}
	var got []string
	for _, r := range domain.Reasons() {
		got = append(got, r.String())
		back, err := domain.ParseReason(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, back)
	}
	assert.Equal(t, want, got)
	_, err := domain.ParseReason("nope")
	assert.Error(t, err)
}
