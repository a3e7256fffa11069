//go:build !unix

package app

import "io/fs"

// fileOwner reports no owner: Windows files have no uid.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// fileID reports no identity: Claude Code's inbox is a named pipe there.
func fileID(fs.FileInfo) string { return "" }
