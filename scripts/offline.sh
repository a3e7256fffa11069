#!/usr/bin/env bash
# Runs a command offline: in a network namespace of its own whose only interface is loopback
# (brought up), so every connection to another address fails at once ("network is unreachable")
# while loopback works (the live tests' stand-in models, inbox sockets, tmux).
#
#   scripts/offline.sh CMD [ARG...]        e.g. scripts/offline.sh go test ./test/acceptance
#
# As root it uses `unshare --net`. Otherwise a user namespace maps you to root just long enough
# to bring lo up, and a nested one maps you back to your own uid and gid (this needs unprivileged
# user namespaces; supplementary groups are dropped inside). The command sees PEERCTL_OFFLINE=1
# (every live test then checks that no route leaves the machine), GOPROXY=off and -mod=readonly
# added to GOFLAGS: Go downloads nothing, so run `make deps` (which downloads the modules
# and installs Claude Code, Qwen Code and the Codex CLI) before.
set -euo pipefail
if (($# == 0)); then
  echo "usage: scripts/offline.sh CMD [ARG...]" >&2
  exit 2
fi
for p in unshare ip; do
  if ! command -v "$p" >/dev/null 2>&1; then
    echo "scripts/offline.sh: $p is missing (make deps installs it)" >&2
    exit 2
  fi
done
export PEERCTL_OFFLINE=1 GOPROXY=off GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"
uid=$(id -u)
gid=$(id -g)
if ((uid == 0)); then
  ns=(unshare --net --)
  inner='ip link set lo up && shift && exec "$@"'
else
  ns=(unshare --user --map-root-user --net --)
  inner='ip link set lo up && u=$0 g=$1 && shift && exec unshare --user --map-user="$u" --map-group="$g" -- "$@"'
fi
# "$0" and "$1" of the inner shell are the uid and gid, then the command.
if ! "${ns[@]}" true 2>/dev/null; then
  echo "scripts/offline.sh: cannot make a network namespace here (${ns[*]} failed);" \
    "run the live tests on the open network with: make test-live OFFLINE=" >&2
  exit 2
fi
exec "${ns[@]}" sh -c "$inner" "$uid" "$gid" "$@"
