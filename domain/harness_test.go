package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestHarnessWords(t *testing.T) {
	for _, h := range domain.Harnesses() {
		got, err := domain.ParseHarness(h.String())
		require.NoError(t, err)
		assert.Equal(t, h, got)
	}
	assert.Equal(t, "claude-code", domain.Harness(0).String(), "a record built without a harness is Claude Code's")
	_, err := domain.ParseHarness("qwen")
	assert.Error(t, err)
}

// Every harness has an endpoint prefix, and ParseEndpoint's error for a
// string with none names each.
func TestEveryHarnessEndpointPrefixIsNamed(t *testing.T) {
	_, err := domain.ParseEndpoint("codex:v1:xyz")
	require.Error(t, err)
	for _, h := range domain.Harnesses() {
		require.NotEmpty(t, h.EndpointPrefix(), h.String())
		assert.Contains(t, err.Error(), h.EndpointPrefix(), h.String())
	}
	assert.Contains(t, err.Error(), domain.HostEndpointPrefix)
}

// The zero Harness's spec is supplied once: a second supply is a
// programming error.
func TestZeroHarnessIsSuppliedOnce(t *testing.T) {
	assert.Panics(t, func() {
		domain.RegisterZeroHarness(domain.HarnessSpec{Word: "again", Title: "Again", Prefix: "again-peer:v1:", Pins: "name",
			Unaddressable: func(domain.Record) string { return "" }})
	})
	assert.Equal(t, domain.Harness(0), domain.Harnesses()[0])
}
