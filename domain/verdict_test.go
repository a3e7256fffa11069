package domain_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/domain"
)

// rec is a complete, addressable interactive record for pid.
func rec(pid int, id, name string) domain.Record {
	return domain.Record{
		File: strconv.Itoa(pid) + ".json", PID: pid, SessionID: id, Name: name, Kind: domain.KindInteractive,
		ProcStart: "100", SocketPath: "/tmp/cc-socks/" + strconv.Itoa(pid) + ".sock", Version: "2.1.328",
		Cwd: "/home/dev/src/shop",
	}
}

var alive = domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}

func TestVerdictWords(t *testing.T) {
	var got []string
	for _, v := range domain.Verdicts() {
		got = append(got, v.String())
	}
	assert.Equal(t, []string{"live", "stale", "reused", "foreign", "misnamed", "headless", "malformed", "unreadable", "unsupported", "ambiguous"}, got)
	assert.Equal(t, "unknown", domain.VerdictUnknown.String())
	assert.Equal(t, "verdict(99)", domain.Verdict(99).String())
}

func TestTriWords(t *testing.T) {
	assert.Equal(t, "yes", domain.Yes.String())
	assert.Equal(t, "no", domain.No.String())
	assert.Equal(t, "unknown", domain.Unknown.String())
}

func TestMillisToTime(t *testing.T) {
	tm, ok := domain.MillisToTime(1796027521308)
	assert.True(t, ok)
	assert.Equal(t, int64(1796027521308), tm.UnixMilli())
	_, ok = domain.MillisToTime(1796027521) // seconds, not ms
	assert.False(t, ok)
	tm, ok = domain.MillisToTime(0)
	assert.False(t, ok)
	assert.True(t, tm.IsZero())
}
