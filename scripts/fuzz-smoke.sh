#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time each: `scripts/fuzz-smoke.sh 5s`.
set -euo pipefail
fuzztime=${1:-5s}
cd "$(dirname "$0")/.."
count=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" >/tmp/fuzz-$$.log 2>&1 || { cat /tmp/fuzz-$$.log; exit 1; }
		count=$((count + 1))
	done
done
rm -f /tmp/fuzz-$$.log
echo "fuzz smoke: $count targets ran for $fuzztime each"
