package acceptance

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShowProcStartFt: show prints the record's procStart as written and
// its procStartFt apart (the one checked), never one under the other's name.
func TestShowProcStartFt(t *testing.T) {
	config, sessions := catRegistry(t)
	self := os.Getpid()
	r := catRecord(t, self, "ft", "/tmp/cc-socks/ft.sock")
	r["procStartFt"], r["procStart"] = r["procStart"], "1"
	catWriteJSON(t, sessions, catFile(self), r)
	res := catRun(t, sessions, runOpts{}, "--config-dir", config, "show", "--json", "ft")
	require.Equal(t, 0, res.Code, "stderr %s", res.Stderr)
	var out struct {
		Verdict     string `json:"verdict"`
		ProcStart   string `json:"procStart"`
		ProcStartFt string `json:"procStartFt"`
	}
	require.NoError(t, json.Unmarshal(res.Stdout, &out))
	assert.Equal(t, "live", out.Verdict, "procStartFt is right, so the record is live")
	assert.Equal(t, "1", out.ProcStart)
	assert.Equal(t, regProcStart(t, self), out.ProcStartFt)
	res = catRun(t, sessions, runOpts{}, "--config-dir", config, "show", "ft")
	require.Equal(t, 0, res.Code)
	assert.Contains(t, string(res.Stdout), "procStartFt")
}
