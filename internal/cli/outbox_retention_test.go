package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
)

// serve's --retention: the flag, else PEERCTL_OUTBOX_RETENTION, else 30
// days; 0 keeps every message; a negative or unreadable one is a usage
// error naming where it came from.
func TestRetentionFlag(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		want      time.Duration
		bad       string
	}{
		{name: "default", want: app.DefaultRetention},
		{name: "flag", args: []string{"--retention", "72h"}, want: 72 * time.Hour},
		{name: "flag over env", env: "1h", args: []string{"--retention=2h"}, want: 2 * time.Hour},
		{name: "env", env: "168h", want: 168 * time.Hour},
		{name: "zero keeps all", args: []string{"--retention=0"}, want: 0},
		{name: "negative flag", args: []string{"--retention=-1h"}, bad: "--retention -1h0m0s"},
		{name: "bad env", env: "a month", bad: "PEERCTL_OUTBOX_RETENTION=a month"},
		{name: "negative env", env: "-5m", bad: "PEERCTL_OUTBOX_RETENTION -5m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			c := newFactory(strings.NewReader(""), &out, &out, func(k string) string {
				if k == retentionEnv {
					return tc.env
				}
				return ""
			})
			cmd := &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error { return nil }}
			get := retentionFlag(cmd, c.getenv)
			require.NoError(t, cmd.ParseFlags(tc.args))
			d, err := get()
			if tc.bad != "" {
				var u usageError
				require.ErrorAs(t, err, &u)
				assert.Contains(t, err.Error(), tc.bad)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
		})
	}
}
