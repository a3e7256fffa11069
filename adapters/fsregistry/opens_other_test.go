//go:build unix && !linux

package fsregistry

import "testing"

// openWatch needs Linux inotify's IN_OPEN events; elsewhere the tests that
// prove which files are opened are skipped.
type openWatch struct{}

func watchOpens(t *testing.T, _ ...string) *openWatch {
	t.Helper()
	t.Skip("proving which files are opened needs Linux inotify IN_OPEN")
	return nil
}

func (w *openWatch) opened(t *testing.T) map[string]bool { t.Helper(); return nil }
