#!/bin/sh
# Run every fuzz target for a short fixed budget, one target per invocation
# (go test -fuzz accepts only one).
#
# FUZZTIME is the budget per target. The default is a count of executions
# (200000x, about 10-25 s each on a 2-core machine), not a duration: with a
# duration, Go 1.26's fuzz coordinator can report a spurious
# "context deadline exceeded" failure, with no failing input, when the
# deadline fires while a worker is mid-call (golang/go#75804, fixed in Go
# 1.27). A count never starts that deadline. FUZZTIME=1m still works for a
# long run by hand, with that caveat.
#
# FUZZMINIMIZETIME bounds how long a new interesting input is minimized
# (default 1s; Go's own default is 60s, which let targets whose inputs keep
# growing coverage spend the whole budget minimizing at 0 execs/sec).
# New failing inputs are written under the package's testdata/fuzz/ and
# become regression cases once committed.
set -eu
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-200000x}"
minimizetime="${FUZZMINIMIZETIME:-1s}"
status=0
while read -r pkg target; do
	echo "fuzz $target ($pkg, $fuzztime)"
	if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime="$minimizetime" -timeout=10m "$pkg"; then
		status=1
	fi
done <<'TARGETS'
./domain FuzzEndpointRoundTrip
./domain FuzzParseEndpoint
./domain FuzzHostEndpointRoundTrip
./adapters/fsregistry FuzzParse
./adapters/fsregistry FuzzReplaceInvalidUTF8
./adapters/fsregistry FuzzFastString
./adapters/fsregistry FuzzFastNumber
./adapters/qwenregistry FuzzParse
./ports/jsonexact FuzzUnmarshal
./adapters/transcript FuzzLineShortcuts
./adapters/courierexec FuzzEndpointAnswer
TARGETS
exit $status
