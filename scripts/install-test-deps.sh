#!/usr/bin/env bash
# Installs what the full test suite needs on a fresh Debian machine: tmux, npm, gcc (`go test
# -race` needs cgo, so a C compiler), ip (scripts/offline.sh brings loopback up with it), curl
# (install.sh's test), shellcheck (make lint), the OpenSSH server and client (the second machine of
# the live ssh tests, test/livessh) and chromium (the dashboard's browser tests) from Debian's packages, only when missing (needs root or sudo);
# the Go modules; and the pinned Claude Code, Qwen Code (0.24.4, and 0.23.0 whose messaging is off
# by default), Codex CLI (0.171.0) and opencode (opencode-ai 1.18.33) releases from the npm registry into
# ${PEERCTL_CACHE:-~/.cache/peerctl} (cached between runs). Everything that needs the network
# happens here: the live tests then run offline (scripts/offline.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if ((${#missing[@]})); then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
go mod download
# The pinned release, the newest one the live tests check the courier and the replies on
# (acceptance.KnownNewestClaudeCode), 2.1.224 (no socket, no SendMessage to one), and the newest
# on npm now, recorded for the version matrix (the tests themselves ask no registry).
go run ./test/livecc/cmd/install-claude
go run ./test/livecc/cmd/install-claude 2.1.332
go run ./test/livecc/cmd/install-claude 2.1.224
go run ./test/livecc/cmd/install-claude newest
# Qwen Code: the pinned release and 0.23.0 (messaging off by default).
go run ./test/liveqwen/cmd/install-qwen
# Codex CLI: the pinned release (its native binary; test/livecodex).
go run ./test/livecodex/cmd/install-codex
# opencode: the pinned release (its native binary; test/liveopencode).
go run ./test/liveopencode/cmd/install-opencode
