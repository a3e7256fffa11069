//go:build unix

// Package liveopencode runs real opencode sessions for live tests: it
// installs the pinned opencode-ai release from the npm registry into a
// cache, gives it a stand-in OpenAI-compatible model written here (Model),
// and starts `opencode serve` servers and `--port` or plain TUIs (in tmux,
// each on a tmux server of its own), every one in a home of its own under a
// temporary root (HOME and every XDG_* folder), offline: the models fetch,
// updates, sharing, LSP downloads and default plug-ins are switched off by
// their variables, and the first start's background plug-in install is
// pointed at a closed loopback port (it logs a warning and nothing else
// changes). Measured on opencode-ai 1.18.33, linux-x64.
//
// Live tests run only with PEERCTL_LIVE=1; without it they skip.
package liveopencode
