// Package configfile locates and writes the files of peerctl's own
// config folder ($XDG_CONFIG_HOME/peerctl): the hosts file, the trust
// policy.
package configfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Path is the file name of peerctl's config folder:
// $XDG_CONFIG_HOME/peerctl/NAME when getenv finds XDG_CONFIG_HOME set (an
// absolute path), else os.UserConfigDir()/peerctl/NAME.
func Path(getenv func(string) string, name string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "peerctl", name), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate the %s file: %w", name, err)
	}
	return filepath.Join(dir, "peerctl", name), nil
}

// Write writes data to path whole: a temporary file (mode 0600) in the
// same folder (made 0700 when missing), renamed into place.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
