package transporttest_test

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

func TestFakeTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, c transporttest.Case) transporttest.Setup {
		f := &transporttest.Fake{Far: c.Far, Timeout: c.Timeout}
		return transporttest.Setup{
			Transport: f,
			Target: transporttest.Session(t, domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
				SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: "/nonexistent/4242.sock"}),
			Received: f.Received,
		}
	})
}

func TestTrickyTextsAreValidMessages(t *testing.T) {
	for name, text := range transporttest.TrickyTexts() {
		_, err := domain.NewMessage(text)
		assert.NoError(t, err, name)
	}
	big := transporttest.TrickyTexts()["exactly 64 KiB"]
	require.Len(t, big, domain.MaxMessageBytes)
	assert.True(t, utf8.ValidString(big))
	for _, n := range []int{5, 100, 4097, domain.MaxMessageBytes} {
		s := transporttest.Exactly(n)
		assert.Len(t, s, n)
		assert.True(t, utf8.ValidString(s), "Exactly(%d) is not UTF-8", n)
	}
}
