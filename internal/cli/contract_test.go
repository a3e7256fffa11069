package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

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

var exitRow = regexp.MustCompile(`^  ( \d|\d\d)  (.*)$`)

// The printed table (peerctl help exit-codes) is wire.ExitCodes: every
// row, its codes and words in columns, each meaning its short one
// (exitShort: one for every code, none more), and no line wider than the
// width it is made for. (docs/OUTPUT.md's copy of the meanings in full is
// held to the table in ports/wire.)
func TestExitCodesTableLaidOut(t *testing.T) {
	require.Len(t, exitShort, len(wire.ExitCodes), "a short meaning for every code")
	const width = 80
	lines := strings.Split(exitCodesHelp(width), "\n")
	require.Equal(t, "Exit codes:", lines[0])
	var meaning strings.Builder
	code, rows := -1, 0
	flush := func() {
		if code >= 0 {
			assert.Equal(t, exitShort[code], strings.TrimSpace(meaning.String()), "exit code %d", code)
		}
		meaning.Reset()
	}
	indent := 0
	for _, l := range lines[1:] {
		assert.LessOrEqual(t, shownWidth(l), width, "%q", l)
		if m := exitRow.FindStringSubmatch(l); m != nil {
			flush()
			code, _ = strconv.Atoi(strings.TrimSpace(m[1]))
			rows++
			rest := m[2]
			if w := wire.ExitCodes[code].Word(); w != "" {
				require.True(t, strings.HasPrefix(rest, w+" "), "the word column: %q", l)
			}
			at := len(l) - len(strings.TrimLeft(rest[len(wire.ExitCodes[code].Word()):], " "))
			if indent == 0 {
				indent = at
			}
			assert.Equal(t, indent, at, "the meanings in one column: %q", l)
			meaning.WriteString(l[at:])
			continue
		}
		require.True(t, strings.HasPrefix(l, strings.Repeat(" ", indent)), "a meaning's next line is under its column: %q", l)
		meaning.WriteString(" " + strings.TrimSpace(l))
	}
	flush()
	assert.Equal(t, len(wire.ExitCodes), rows)
	for i, r := range wire.ExitCodes {
		assert.Equal(t, i, r.Code, "wire.ExitCodes is in the order of its codes (exitShort is indexed by them)")
		assert.NotEmpty(t, exitShort[r.Code], "exit code %d", r.Code)
	}
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
