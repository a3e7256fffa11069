#!/bin/sh
# Run every fuzz target for a short fixed time, one target per invocation
# (go test -fuzz accepts only one). FUZZTIME overrides the budget per target.
# FUZZMINIMIZETIME bounds how long a new interesting input is minimized
# (default 1s; Go's own default is 60s, which let targets whose inputs keep
# growing coverage spend the whole budget minimizing at 0 execs/sec).
# New failing inputs are written under the package's testdata/fuzz/ and
# become regression cases once committed.
set -eu
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-15s}"
minimizetime="${FUZZMINIMIZETIME:-1s}"
status=0
while read -r pkg target; do
	echo "fuzz $target ($pkg, $fuzztime)"
	if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime="$minimizetime" "$pkg"; then
		status=1
	fi
done <<'TARGETS'
./domain FuzzEndpointRoundTrip
./domain FuzzParseEndpoint
./adapters/fsregistry FuzzParse
./adapters/courierexec FuzzParseOutput
./adapters/courierexec FuzzJudge
TARGETS
exit $status
