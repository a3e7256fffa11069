package codexapp

import (
	"context"
	"encoding/json"
)

// Thread is one row of thread/list (Codex 0.171.0's Thread, the fields
// peerctl reads).
type Thread struct {
	ID         string       `json:"id"`
	Cwd        string       `json:"cwd"`
	Name       *string      `json:"name"`
	Preview    string       `json:"preview"`
	Status     ThreadStatus `json:"status"`
	UpdatedAt  int64        `json:"updatedAt"` // Unix seconds
	CreatedAt  int64        `json:"createdAt"` // Unix seconds
	Path       *string      `json:"path"`
	CLIVersion string       `json:"cliVersion"`
	Ephemeral  bool         `json:"ephemeral"`
	// Source is where the thread was made ("cli", "vscode", "exec",
	// "appServer", or a sub-agent's object): kept raw.
	Source json.RawMessage `json:"source"`
}

// ThreadStatus is a thread's status: "notLoaded", "idle", "active" (with
// its activeFlags) or "systemError".
type ThreadStatus struct {
	Type        string   `json:"type"`
	ActiveFlags []string `json:"activeFlags,omitempty"`
}

// maxPages bounds the pages one ListThreads reads (pageSize threads each).
const (
	maxPages = 20
	pageSize = 100
)

// ListThreads reads thread/list, newest first, at most maxPages pages of
// pageSize rows, each thread once (a cursor already read ends the walk);
// more says a further page was left unread.
func (c *Conn) ListThreads(ctx context.Context) (threads []Thread, more bool, err error) {
	var cursor *string
	seen, cursors := map[string]bool{}, map[string]bool{}
	for range maxPages {
		var page struct {
			Data       []Thread `json:"data"`
			NextCursor *string  `json:"nextCursor"`
		}
		params := map[string]any{"limit": pageSize}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		if err := c.Call(ctx, "thread/list", params, &page); err != nil {
			return threads, false, err
		}
		for _, t := range page.Data {
			if !seen[t.ID] {
				seen[t.ID] = true
				threads = append(threads, t)
			}
		}
		if !nextPage(page.NextCursor, cursors) {
			return threads, false, nil
		}
		cursor = page.NextCursor
	}
	return threads, true, nil
}

// LoadedThreads reads thread/loaded/list: the ids of the threads the
// daemon holds in memory, each once (a cursor already read ends the walk).
func (c *Conn) LoadedThreads(ctx context.Context) ([]string, error) {
	var out []string
	var cursor *string
	seen, cursors := map[string]bool{}, map[string]bool{}
	for range maxPages {
		var page struct {
			Data       []string `json:"data"`
			NextCursor *string  `json:"nextCursor"`
		}
		params := map[string]any{}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		if err := c.Call(ctx, "thread/loaded/list", params, &page); err != nil {
			return out, err
		}
		for _, id := range page.Data {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		if !nextPage(page.NextCursor, cursors) {
			break
		}
		cursor = page.NextCursor
	}
	return out, nil
}

// nextPage says whether next names a page not read yet, and notes it: a
// daemon whose nextCursor repeats would otherwise be read maxPages times,
// every row again.
func nextPage(next *string, read map[string]bool) bool {
	if next == nil || *next == "" || read[*next] {
		return false
	}
	read[*next] = true
	return true
}
