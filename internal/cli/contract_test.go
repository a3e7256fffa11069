package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/ports/wire"
)

// TestEveryCommandHasAnExample walks the whole command tree.
func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRootCmd(newFactory(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, func(string) string { return "" }))
	var walk func(*cobra.Command)
	seen := 0
	walk = func(cmd *cobra.Command) {
		if cmd.Runnable() && !cmd.Hidden {
			seen++
			assert.NotEmpty(t, strings.TrimSpace(cmd.Example), "%q has no Example in its --help", cmd.CommandPath())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.GreaterOrEqual(t, seen, 10, "the walk reached every command")
}

var exitRow = regexp.MustCompile(`^  ( \d|\d\d)  (\S.*)$`)

// exitTable is wire.ExitCodes as code -> [word, meaning].
func exitTable(t *testing.T) map[int][2]string {
	t.Helper()
	rows := map[int][2]string{}
	for _, r := range wire.ExitCodes {
		rows[r.Code] = [2]string{r.Word(), r.Meaning}
	}
	return rows
}

// The printed table (peerctl help exit-codes) is wire.ExitCodes: every
// row, its codes and words in columns, each meaning the table's, and no
// line wider than exitCodesWidth. (docs/OUTPUT.md's copy is held to the
// same table in ports/wire.)
func TestExitCodesTableLaidOut(t *testing.T) {
	lines := strings.Split(exitCodesHelp(), "\n")
	require.Equal(t, "Exit codes:", lines[0])
	var meaning strings.Builder
	code := -1
	flush := func() {
		if code >= 0 {
			assert.Equal(t, exitTable(t)[code][1], strings.TrimSpace(meaning.String()), "exit code %d", code)
		}
		meaning.Reset()
	}
	for _, l := range lines[1:] {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), exitCodesWidth, "%q", l)
		if m := exitRow.FindStringSubmatch(l); m != nil {
			flush()
			code, _ = strconv.Atoi(strings.TrimSpace(m[1]))
			rest := m[2]
			if w := exitTable(t)[code][0]; w != "" {
				require.True(t, strings.HasPrefix(rest, fmt.Sprintf("%-19s  ", w)), "the word column: %q", l)
				rest = rest[21:]
			}
			meaning.WriteString(rest)
			continue
		}
		require.True(t, strings.HasPrefix(l, "      "), "a meaning's next line is indented: %q", l)
		meaning.WriteString(" " + strings.TrimSpace(l))
	}
	flush()
	assert.Equal(t, len(wire.ExitCodes), strings.Count(exitCodesHelp(), "\n")-strings.Count(exitCodesHelp(), "\n      "))
}

// TestOutputDocNamesEveryField keeps docs/OUTPUT.md honest: every JSON
// field the commands print is documented.
func TestOutputDocNamesEveryField(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OUTPUT.md"))
	require.NoError(t, err)
	for _, v := range []any{wire.Session{}, wire.Show{}, wire.Receipt{}, wire.RefusalBody{}, endpointJSON{}, wire.Doctor{},
		claudecode.DoctorJSON{}, claudecode.FlagJSON{}, wire.DoctorRegistry{}, wire.DoctorSocket{}, wire.DoctorSession{}, claudecode.CourierJSON{}, wire.DoctorReach{}, wire.DoctorUnreachable{}, qwencode.DoctorJSON{}, wire.DoctorMCP{}, wire.DoctorRow{}, whoamiJSON{}, versionJSON{},
		wire.Inbound{}, relayIn{}, wire.RelayReady{}, wire.RelayReceipt{}, wire.RelayRefusal{}, wire.RelayInbound{}} {
		for _, name := range jsonNames(v) {
			// `name`, or nested as `parent.name` / `parent[].name`.
			documented := regexp.MustCompile("[`.]" + regexp.QuoteMeta(name) + "[`.\\[]").Match(doc)
			assert.True(t, documented, "%T field %q is not in docs/OUTPUT.md", v, name)
		}
	}
}

func jsonNames(v any) []string {
	var out []string
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				out = append(out, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return out
}
