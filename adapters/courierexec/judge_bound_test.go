package courierexec

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileOutputs are outputs where every line looks like the start of JSON
// and a decode reads far before it fails: trying each line is quadratic.
func hostileOutputs() map[string][]byte {
	const mib = 1 << 20
	return map[string][]byte{
		"open brackets":      bytes.Repeat([]byte("[\n"), mib/2),
		"open braces":        bytes.Repeat([]byte("{\n"), mib/2),
		"unterminated array": append([]byte("["), bytes.Repeat([]byte("[1,\n"), mib/4)...),
	}
}

// TestParseOutputIsBounded: a courier's flood of JSON-looking lines costs at
// most MaxCandidates decodes, and ends in an error, not a result.
func TestParseOutputIsBounded(t *testing.T) {
	for name, stdout := range hostileOutputs() {
		t.Run(name, func(t *testing.T) {
			require.GreaterOrEqual(t, len(stdout), 1<<20)
			_, tries, err := parseOutput(stdout)
			assert.Error(t, err)
			assert.LessOrEqual(t, tries, MaxCandidates)
		})
	}
}

// TestParseOutputCandidates: the JSON is found after up to MaxCandidates-1
// JSON-looking junk lines, and not after more.
func TestParseOutputCandidates(t *testing.T) {
	const obj = `{"type":"result","subtype":"success","is_error":false,"result":"SENT"}`
	for _, tt := range []struct {
		junk  int
		found bool
	}{
		{0, true}, {1, true}, {MaxCandidates - 1, true}, {MaxCandidates, false},
	} {
		t.Run(fmt.Sprintf("junk=%d", tt.junk), func(t *testing.T) {
			stdout := strings.Repeat("[nvm] banner\n", tt.junk) + "plain banner\n" + obj + "\n"
			out, tries, err := parseOutput([]byte(stdout))
			if !tt.found {
				assert.Error(t, err)
				assert.Equal(t, MaxCandidates, tries)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "SENT", *out.Result.Result)
			assert.Equal(t, tt.junk+1, tries)
		})
	}
}

// BenchmarkParseOutputHostile: per-byte cost on 1 MiB of JSON-looking junk
// (compare ns/op across sizes: linear, not quadratic).
func BenchmarkParseOutputHostile(b *testing.B) {
	for _, kib := range []int{64, 1024} {
		stdout := bytes.Repeat([]byte("[\n"), kib<<9)
		b.Run(fmt.Sprintf("brackets=%dKiB", kib), func(b *testing.B) {
			b.SetBytes(int64(len(stdout)))
			for b.Loop() {
				if _, err := ParseOutput(stdout); err == nil {
					b.Fatal("parsed junk")
				}
			}
		})
	}
}
