package cli

import "os"

// isTTY is true on Windows: a character device is taken for a console.
func isTTY(*os.File) bool { return true }

// terminalColumns is 0 on Windows: --help takes its width from $COLUMNS,
// else 120.
func terminalColumns(any) int { return 0 }
