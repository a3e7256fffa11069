package cli

// terminalColumns is 0 on Windows: --help takes its width from $COLUMNS,
// else 120.
func terminalColumns(any) int { return 0 }
