//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTTY reports whether f answers TIOCGWINSZ (tty_ioctl(4)), as every
// terminal does and /dev/null does not (ENOTTY).
func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return err == nil
}

// terminalColumns is the width of the terminal w is (TIOCGWINSZ on its
// file, tty_ioctl(4)), or 0 when w is not a terminal or tells no width.
func terminalColumns(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
