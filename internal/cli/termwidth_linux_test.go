package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/ports/wire"
)

// openPTY opens a pseudo-terminal pair (pty(7)) whose window is cols wide:
// the controlling side, read by the test, and the terminal a program writes to.
func openPTY(t *testing.T, cols uint16) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = ptm.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(ptm.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pts.Close() })
	require.NoError(t, unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: cols}))
	return ptm, pts
}

// TestHelpFitsTheTerminalItIsOn: on a terminal 80 columns wide with no
// $COLUMNS (bash sets it but does not export it), every --help wraps its
// text and its command rows to the terminal's width, and fits helpBound
// lines of that terminal, examples wrapped by the terminal counted: before,
// --help took 120 columns there and the terminal broke its lines mid-word
// (send --help took 54 lines of the screen).
func TestHelpFitsTheTerminalItIsOn(t *testing.T) {
	root := newRootCmd(newFactory(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }))
	var paths []string
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if !cmd.Hidden {
			paths = append(paths, cmd.CommandPath())
		}
	}
	walk(root)
	require.Greater(t, len(paths), 20)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			out := helpOnTerminal(t, 80, append(strings.Fields(path)[1:], "--help")...)
			cmd, _, err := root.Find(strings.Fields(path)[1:])
			require.NoError(t, err)
			if screenOf(cmd) == helpBound { // a help topic has no usage
				require.Contains(t, out, "Usage:")
			}
			screen, examples := 0, false
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				n := utf8.RuneCountInString(l)
				screen += max(1, (n+79)/80)
				switch {
				case l == "Examples:", l == "Usage:": // command lines, wrapped by the terminal
					examples = true
				case l == "":
					examples = false
				case !examples && strings.HasPrefix(l, commandsDocURL+"#"):
					// The one line let through wider than the terminal:
					// the "In full:" address of the command's section
					// (70 columns before its anchor, up to 88 in all),
					// alone on its line, since a URL broken in two is no
					// link. The terminal wraps it and it is counted so.
					assert.NotContains(t, l, " ", "the address alone on its line: %q", l)
				case !examples:
					assert.LessOrEqual(t, n, 80, "a line wider than the terminal: %q", l)
				}
			}
			assert.LessOrEqual(t, screen, screenOf(cmd), "lines of an 80-column terminal:\n%s", out)
		})
	}
}

// helpOnTerminal runs peerctl ARGS with its stdout on a terminal cols
// wide and no $COLUMNS, and returns what the terminal got.
func helpOnTerminal(t *testing.T, cols uint16, args ...string) string {
	t.Helper()
	ptm, pts := openPTY(t, cols)
	var got bytes.Buffer
	done := make(chan struct{})
	go func() { defer close(done); _, _ = io.Copy(&got, ptm) }()
	c := newFactory(strings.NewReader(""), pts, io.Discard, func(string) string { return "" })
	code := execute(context.Background(), c, args)
	require.Equal(t, wire.ExitOK, code)
	require.NoError(t, pts.Close())
	<-done // the read ends when the terminal's side is closed (EIO)
	return strings.ReplaceAll(got.String(), "\r\n", "\n")
}

// send TARGET - with stdin /dev/null (a character device, but no
// terminal) reads it without a prompt: no one is there to type.
func TestSendDashFromDevNullSaysNothing(t *testing.T) {
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	t.Cleanup(func() { _ = null.Close() })
	var out, errOut bytes.Buffer
	ios := newIOStreams(null, &out, &errOut, func(string) string { return "" })
	_, err = messageText(ios, []string{"quiet", "-"}, -1, nil)
	require.ErrorContains(t, err, "stdin was empty")
	assert.Empty(t, errOut.String(), "no prompt when stdin is no terminal")
	assert.False(t, ios.colourOn(null), "nor is /dev/null a terminal for colour")
}

// send TARGET - with stdin a terminal says on stderr what it waits for
// (the message, ended with Ctrl-D), then takes what is typed.
func TestSendDashAtATerminalSaysWhatItWaitsFor(t *testing.T) {
	ptm, pts := openPTY(t, 80)
	var out, errOut bytes.Buffer
	ios := newIOStreams(pts, &out, &errOut, func(string) string { return "" })
	_, err := ptm.WriteString("hello\n\x04")
	require.NoError(t, err)
	text, err := messageText(ios, []string{"quiet", "-"}, -1, nil)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", text)
	assert.Equal(t, "peerctl: type the message, then Ctrl-D on a line of its own to send it (Ctrl-C gives up)\n", errOut.String())
}
