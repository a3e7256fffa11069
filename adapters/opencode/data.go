package opencode

import (
	"path/filepath"
	"strings"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

// maxEnviron bounds the environment read of one process (bytes).
const maxEnviron = 1 << 20

// DBEnv is the variable that overrides where opencode keeps its database.
const DBEnv = "OPENCODE_DB"

// Database is the opencode database an environment names (opencode-ai
// 1.18.33, `opencode db path`): $OPENCODE_DB when absolute, else
// <data>/opencode/<$OPENCODE_DB or opencode.db>, where <data> is
// $XDG_DATA_HOME, else $HOME/.local/share; "" when neither is set. Every
// opencode process of one database sees the same sessions: they are one
// opencode user, the one peerctl serves (relative $OPENCODE_DB values
// and $XDG_DATA_HOME are taken as the XDG rules say, not measured
// further). cwd resolves a relative XDG_DATA_HOME, as the process would.
func Database(getenv func(string) string, cwd string) string {
	db := getenv(DBEnv)
	if filepath.IsAbs(db) {
		return filepath.Clean(db)
	}
	if db == "" {
		db = "opencode.db"
	}
	data := getenv("XDG_DATA_HOME")
	switch {
	case data != "" && !filepath.IsAbs(data):
		data = filepath.Join(cwd, data)
	case data == "":
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(data, "opencode", db)
}

// databaseOf is the database process pid of t uses, read from its
// environment (at most maxEnviron bytes); "" when unreadable.
func databaseOf(t *procliveness.Table, pid int, cwd string) string {
	b, _ := t.File(pid, "environ", maxEnviron)
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			switch k {
			case DBEnv, "XDG_DATA_HOME", "HOME":
				env[k] = v
			}
		}
	}
	return Database(func(k string) string { return env[k] }, cwd)
}
