//go:build !unix

package policyfile

import "io/fs"

// fileOwner reports no owner: Windows files have no uid.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
