//go:build unix

package opencode

import "os"

func getuid() int { return os.Getuid() }
