#!/usr/bin/env bash
# Installs what the full test suite needs on a fresh Debian machine: tmux, npm, curl (install.sh's
# test) and shellcheck (make lint) from Debian's packages, only when missing (needs root or
# sudo), the Go modules, and the pinned Claude Code and Qwen Code releases (0.24.4, and 0.23.0
# whose messaging is off by default) from the npm registry into ${PEERCTL_CACHE:-~/.cache/peerctl}
# (cached between runs).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
if ((${#missing[@]})); then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
go mod download
# The pinned release, the newest one the live tests check the courier and the version matrix
# on (acceptance.KnownNewestClaudeCode), and 2.1.224 (no socket, no SendMessage to one).
go run ./test/livecc/cmd/install-claude
go run ./test/livecc/cmd/install-claude 2.1.332
go run ./test/livecc/cmd/install-claude 2.1.224
# Qwen Code: the pinned release and 0.23.0 (messaging off by default).
go run ./test/liveqwen/cmd/install-qwen
