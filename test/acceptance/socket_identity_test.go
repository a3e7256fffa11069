//go:build linux

package acceptance

// What a socket path is counts, not its text: two live records whose
// sockets are one socket (a hard link, a linked folder) are refused with
// both named, and a socket another user bound is not addressable.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSendRefusesOneSocketUnderTwoPaths(t *testing.T) {
	for _, how := range []string{"hard link", "linked folder"} {
		t.Run(how, func(t *testing.T) {
			p := newCatPair(t)
			alias := filepath.Join(p.dir, "alias.sock")
			if how == "hard link" {
				require.NoError(t, os.Link(filepath.Join(p.dir, "a.sock"), alias))
			} else {
				linked := filepath.Join(catSocketDir(t), "linked")
				require.NoError(t, os.Symlink(p.dir, linked))
				alias = filepath.Join(linked, "a.sock")
			}
			a := catRecord(t, os.Getpid(), "alpha", filepath.Join(p.dir, "a.sock"))
			b := catRecord(t, p.other, "beta", alias)
			catWriteJSON(t, p.sessions, catFile(os.Getpid()), a)
			catWriteJSON(t, p.sessions, catFile(p.other), b)
			for _, addr := range []string{a["sessionId"].(string), b["sessionId"].(string)} {
				r := catSend(t, p.config, p.sessions, runOpts{}, "--json", addr, "hello")
				assert.Equal(t, 4, r.Code, "stdout %s stderr %s", r.Stdout, r.Stderr)
				assert.Contains(t, string(r.Stdout), "identity_mismatch")
				assert.Contains(t, string(r.Stdout), a["sessionId"].(string))
				assert.Contains(t, string(r.Stdout), b["sessionId"].(string))
			}
			assert.Zero(t, p.la.Conns(), "nothing may be posted to a socket two records publish")

			// list says so before anyone sends.
			live := catList(t, p.config, p.sessions, false)
			require.Len(t, live, 2)
			for _, e := range live {
				assert.False(t, e.Addressable, "%s", e.Name)
				assert.Contains(t, e.Unaddressable, "are one socket", "%s", e.Name)
			}
		})
	}
}

func TestAnotherUsersSocketIsNotAddressable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a socket to another uid")
	}
	p := newCatPair(t)
	sock := filepath.Join(p.dir, "a.sock")
	require.NoError(t, os.Chmod(p.dir, 0o777))
	require.NoError(t, os.Lchown(sock, 65534, 65534))
	a := catRecord(t, os.Getpid(), "alpha", sock)
	catWriteJSON(t, p.sessions, catFile(os.Getpid()), a)

	live := catList(t, p.config, p.sessions, false)
	require.Len(t, live, 1)
	assert.False(t, live[0].Addressable)
	assert.Contains(t, live[0].Unaddressable, "owned by uid 65534")

	r := catSend(t, p.config, p.sessions, runOpts{}, "--json", a["sessionId"].(string), "hello")
	assert.Equal(t, 7, r.Code, "stdout %s stderr %s", r.Stdout, r.Stderr)
	assert.Contains(t, string(r.Stdout), "not_addressable")
	assert.Contains(t, string(r.Stdout), "uid 65534")
	assert.Zero(t, p.la.Conns(), "nothing may be posted to another user's socket")
}
