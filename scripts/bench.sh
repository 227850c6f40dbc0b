#!/usr/bin/env bash
# Reproducible throughput run: `scripts/bench.sh [duration] [workers]`.
# HOOKVERIFY_BENCH_SERVER=path measures that server binary (an older build, say) with this
# tree's load generator, for before/after comparisons under the same conditions.
# HOOKVERIFY_BENCH_FLAGS adds flags to every `hookverify bench` (--repetitive-body, say, for
# the bodies of runs before the eighth session).
# Starts a throwaway PostgreSQL cluster on loopback (as the postgres user when run as root),
# runs hookverify on it and on the embedded store, and drives each with `hookverify bench`
# (new events, redeliveries, and the no-op gRPC baseline in the same run), then drives new events
# in an open loop at half the peak rate just measured, for the latency at that load, and twice
# more with 16 workers leasing and acking (one AckMany per lease, then one Ack per delivery),
# to see whether they keep up with that intake. Then
# redeliveries with the claim cache off (serve --claim-cache 0: each one read from the database),
# and last, new events on each store with group commit off (serve --commit-each-claim), the one
# commit per delivery figure to compare with. After each phase of new events it prints what the
# server's metrics say of its claim batches. Everything it starts is stopped at exit.
set -euo pipefail
duration=${1:-10s}
workers=${2:-32}
cd "$(dirname "$0")/.."
go build -o bin/hookverify ./cmd/hookverify
bin=$PWD/bin/hookverify
server_bin=${HOOKVERIFY_BENCH_SERVER:-$bin}
# A collector target above Go's default: fewer collections of the small live heap (README,
# --gc-percent). Empty for a server binary that predates the flag.
serve_flags=${HOOKVERIFY_BENCH_SERVE_FLAGS---gc-percent 400}
bench_flags=${HOOKVERIFY_BENCH_FLAGS:-}
# shellcheck disable=SC2086 # the flags are words
bench() { "$bin" bench $bench_flags "$@"; }
work=$(mktemp -d)
chmod 755 "$work"
pgbin=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | tail -n1)")")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	as_pg "$pgbin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$work/pg"
[ "$(id -u)" = 0 ] && chown postgres "$work/pg"
as_pg "$pgbin/initdb" -D "$work/pg" -A trust -U postgres >/dev/null
pgport=$(free_port)
as_pg "$pgbin/pg_ctl" -D "$work/pg" -w -o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" -l "$work/pg/log" start >/dev/null
export HOOKVERIFY_MASTER_KEY=$(head -c 32 /dev/urandom | base64)

# batch_totals prints the server's claim batch counters (batches, claims, seconds committing),
# zeros for a server without them or without curl.
batch_totals() { # metrics port
	{ command -v curl >/dev/null && curl -s "http://127.0.0.1:$1/metrics" || true; } | awk '
		/^hookverify_storage_claim_batch_size_count / { n = $2 }
		/^hookverify_storage_claim_batch_size_sum / { c = $2 }
		/^hookverify_storage_claim_batch_duration_seconds_sum / { t = $2 }
		END { printf "%d %d %f\n", n, c, t }'
}
# measured runs a bench phase and then says how the claim pipeline behaved during it: claims per
# batch, and the share of the phase's $duration a batch was committing (near 100 %: claims queue
# behind the batch in flight). A --baseline phase before it commits nothing; the load
# generator's 64 priming claims count, a second's worth of batches at most.
measured() { # metrics port, bench arguments...
	local hport=$1; shift
	local before after
	before=$(batch_totals "$hport")
	bench "$@"
	after=$(batch_totals "$hport")
	echo "$before $after $phase_seconds" | awk '{
		n = $4 - $1; busy = ($6 - $3) / $7
		if (n == 0) exit
		printf "claim pipeline: %d batches, %.1f claims per batch, ", n, ($5 - $2) / n
		# With group commit off, claims commit concurrently (on SQLite, most of them wait for
		# the single writer): say how many were under way on average.
		if (busy <= 1.05) printf "committing %.0f %% of the phase\n", 100 * busy
		else printf "%.1f commits under way on average (running or waiting)\n", busy
	}'
}
phase_seconds=$(python3 -c '
import re, sys
units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
parts = re.findall(r"([0-9.]+)(ms|s|m|h)", sys.argv[1])
print(sum(float(v) * units[u] for v, u in parts) or 1)' "$duration")

run_on() { # name, extra serve flags...
	local name=$1; shift
	local port hport; port=$(free_port); hport=$(free_port)
	"$server_bin" serve --listen "127.0.0.1:$port" --http-listen "127.0.0.1:$hport" --log-level error $serve_flags "$@" 2>"$work/$name.log" &
	local pid=$!
	pids+=("$pid")
	# Each run ends with its server stopped and its data dropped (finish_run), so that no run
	# shares the machine with the background work of the ones before it: an idle server's
	# inbox monitor, PostgreSQL's autovacuum and checkpoint writes of a large inbox.
	for _ in $(seq 50); do "$bin" endpoint list --server "127.0.0.1:$port" >/dev/null 2>&1 && break; sleep 0.2; done
	# Other work on the machine distorts the figures; say how busy it was.
	echo "== $name: load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
	if [[ $name == *-each-claim ]]; then
		# Group commit off: the one-commit-per-delivery figure, for comparison.
		echo "== $name: new events, every claim committed alone =="
		measured "$hport" --server "127.0.0.1:$port" --duration "$duration" --workers "$workers" --mix new=100 --baseline
		echo
		finish_run "$name" "$pid"
		return
	fi
	if [[ $name == *-no-claim-cache ]]; then
		# Every redelivery read from the database: what one costs when the instance does not
		# remember its claim (another instance's, or an evicted one).
		echo "== $name: redeliveries, claim cache off =="
		bench --server "127.0.0.1:$port" --duration "$duration" --workers "$workers" --mix dup=100 --baseline
		echo
		finish_run "$name" "$pid"
		return
	fi
	echo "== $name: new events =="
	measured "$hport" --server "127.0.0.1:$port" --duration "$duration" --workers "$workers" --mix new=100 --baseline | tee "$work/$name.new"
	echo "== $name: redeliveries =="
	bench --server "127.0.0.1:$port" --duration "$duration" --workers "$workers" --mix dup=100 --baseline
	local half
	half=$(awk '$1 == "accepted" && NF >= 7 { printf "%d", $3 / 2; exit }' "$work/$name.new")
	if [ "$name" = postgres ] && [ -z "${HOOKVERIFY_BENCH_NO_CHECKPOINT:-}" ]; then
		# A fresh cluster has no WAL segments to recycle, so it creates and zero-fills a new 16 MiB
		# one every couple of seconds under this load, stalling commits for tens of ms each
		# time; a running server recycles them after every checkpoint. Checkpoint once, so the
		# latency phase sees that steady state (BENCHMARKS.md gives the figure without it).
		as_pg "$pgbin/psql" -h 127.0.0.1 -p "$pgport" -U postgres -qc checkpoint
	fi
	echo "== $name: new events, open loop at half the peak rate ($half/s) =="
	measured "$hport" --server "127.0.0.1:$port" --duration "$duration" --workers 64 --mix new=100 --rate "$half"
	# Intake is half the story: do workers keep up? The same load, with 16 workers leasing 10
	# deliveries at a time and acking them over gRPC, with one AckMany call per lease and then
	# with one Ack call per delivery; the backlog left at the end says whether they kept up.
	echo "== $name: the same, with 16 workers draining the inbox, one AckMany per lease =="
	bench --server "127.0.0.1:$port" --duration "$duration" --workers 64 --mix new=100 --rate "$half" --drain 16
	echo "== $name: the same, with 16 workers draining the inbox, one Ack per delivery =="
	bench --server "127.0.0.1:$port" --duration "$duration" --workers 64 --mix new=100 --rate "$half" --drain 16 --ack-each
	echo
	finish_run "$name" "$pid"
}
# finish_run stops a run's server and drops what it stored: the PostgreSQL database named after
# the run (then a checkpoint writes out what is left dirty), or the embedded data directory.
finish_run() { # name, server pid
	kill "$2" 2>/dev/null || true
	wait "$2" 2>/dev/null || true
	local kept=()
	for p in "${pids[@]}"; do [ "$p" = "$2" ] || kept+=("$p"); done
	pids=("${kept[@]}")
	if [[ $1 == postgres* ]]; then
		as_pg "$pgbin/psql" -h 127.0.0.1 -p "$pgport" -U postgres -v ON_ERROR_STOP=1 -q \
			-c "DROP DATABASE \"run-$1\" WITH (FORCE)" -c checkpoint
	else
		rm -rf "${work:?}/$1"
	fi
}
# pg_url creates a database for one run and prints its URL.
# (Called on a line of its own: set -e does not stop at a failing substitution inside arguments.)
pg_url() { # name
	as_pg "$pgbin/psql" -h 127.0.0.1 -p "$pgport" -U postgres -v ON_ERROR_STOP=1 -qc "CREATE DATABASE \"run-$1\"" >/dev/null
	echo "postgres://postgres@127.0.0.1:$pgport/run-$1?sslmode=disable"
}
url=$(pg_url postgres)
run_on postgres --database-url "$url"
run_on embedded --data-dir "$work/embedded"
url=$(pg_url postgres-no-claim-cache)
run_on postgres-no-claim-cache --claim-cache 0 --database-url "$url"
run_on embedded-no-claim-cache --claim-cache 0 --data-dir "$work/embedded-no-claim-cache"
url=$(pg_url postgres-each-claim)
run_on postgres-each-claim --commit-each-claim --database-url "$url"
run_on embedded-each-claim --commit-each-claim --data-dir "$work/embedded-each-claim"
