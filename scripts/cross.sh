#!/usr/bin/env bash
# Cross-platform check (make cross): for every GOOS/GOARCH peerctl supports,
# go vet, go build, and compile every package's tests without running them
# (go test -run '^$' -exec true: each test binary is built, then "run" by
# true). The build and test caches make a second run fast: an unchanged
# package is neither recompiled nor relinked (its "test result" is cached).
# TARGETS overrides the list, e.g. TARGETS="darwin/arm64" scripts/cross.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TARGETS=${TARGETS:-"linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64"}
true_bin=$(command -v true)
for t in $TARGETS; do
	goos=${t%/*} goarch=${t#*/}
	echo "== $goos/$goarch"
	export GOOS=$goos GOARCH=$goarch CGO_ENABLED=0
	"$GO" vet ./...
	"$GO" build ./...
	"$GO" test -run '^$' -exec "$true_bin" ./... >/dev/null
done
echo "cross: all of $TARGETS build, vet and compile their tests"
