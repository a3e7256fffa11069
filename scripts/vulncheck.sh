#!/usr/bin/env bash
# vulncheck.sh: run govulncheck without reaching vuln.go.dev.
#
#   scripts/vulncheck.sh            (or: make vuln)
#
# govulncheck normally downloads its database from https://vuln.go.dev. Where
# that host is unreachable, this script builds the same database locally from
# the golang.org/x/vulndb module (fetched through the Go module proxy like any
# module): its data/osv/*.json reports are indexed by its own cmd/indexdb into
# ${PEERCTL_CACHE:-$HOME/.cache/peerctl}/vulndb/<vulndb version>, and
# govulncheck reads it with -db file://...
#
# Environment:
#   VULNDB_VERSION     the golang.org/x/vulndb version (default: pinned below;
#                      "latest" for the newest reports)
#   GOVULNCHECK_ONLINE=1  use vuln.go.dev instead of the local database
#
# Exit status: 0 when clean, non-zero when vulnerabilities are found in called code.
set -euo pipefail
GOVULNCHECK=golang.org/x/vuln/cmd/govulncheck@v1.9.0
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
cd "$(dirname "$0")/.."
if [[ ${GOVULNCHECK_ONLINE:-} == 1 ]]; then
  exec go run "$GOVULNCHECK" ./...
fi
dir=$(go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
version=$(basename "$dir"); version=${version#vulndb@}
[[ -d $dir/data/osv ]] || { echo "vulncheck: no data/osv in $dir" >&2; exit 1; }
db=${PEERCTL_CACHE:-$HOME/.cache/peerctl}/vulndb/$version
if [[ ! -f $db/index/db.json ]]; then
  rm -rf "$db.tmp"; mkdir -p "$(dirname "$db")"
  (cd "$dir" && GOFLAGS=-mod=mod go run ./cmd/indexdb -vulns data/osv -out "$db.tmp")
  rm -rf "$db"; mv "$db.tmp" "$db"
fi
echo "vulncheck: database golang.org/x/vulndb@$version ($db)" >&2
exec go run "$GOVULNCHECK" -db "file://$db" ./...
