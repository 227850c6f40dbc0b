#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time each: `scripts/fuzz-smoke.sh 5s`.
#
# Go's fuzzer can end a clean run with "context deadline exceeded" when -fuzztime runs out while
# it is still minimizing a new interesting input (no crash, no failing input written). Such a
# run is repeated, up to twice; a real failure (a failing input written, a panic) fails at once.
set -euo pipefail
fuzztime=${1:-5s}
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
count=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		for attempt in 1 2 3; do
			if go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" >"$log" 2>&1; then
				break
			fi
			if grep -q 'context deadline exceeded' "$log" && ! grep -qE 'Failing input written|panic:' "$log" && [ "$attempt" -lt 3 ]; then
				echo "  (ended by the fuzz deadline while minimizing; running again)"
				continue
			fi
			cat "$log"
			exit 1
		done
		count=$((count + 1))
	done
done
echo "fuzz smoke: $count targets ran for $fuzztime each"
