#!/bin/sh
# make release, then checks dist/ (test/acceptance: TestReleaseArchives) and installs from it
# with install.sh served on 127.0.0.1 (TestInstallScript). Run by make ci.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
make release
echo "make release took $(($(date +%s) - start))s"
PEERCTL_DIST="$PWD/dist" go test -race -count=1 -run '^(TestReleaseArchives|TestInstallScript)$' ./test/acceptance
