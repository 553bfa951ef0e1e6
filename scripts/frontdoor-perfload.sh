#!/usr/bin/env bash
# frontdoor-perfload.sh [REPS] [DURATION]
#
# The front door (issue 14) as the issues measure it: perf-load's client
# against a bare net/http handler, boxoffice embedded and boxoffice on
# PostgreSQL + Redis + kafka-fake, each server its own process, interleaved
# (bare, embedded, production) REPS times, 256 in flight (INFLIGHT=N for
# another figure), a fresh user per request on a queued event of 70 x 1,000
# seats (no booking workers: the front door alone). The line "ratio N" is
# each system's rps over the bare rps of the same repetition. Also prints the CPU
# the production processes used in each run (ticks of 1/100 s, warm-up
# included), per request, and how idle the machine was. With
# PROFILE=FILE, the production server's CPU profile of each run is written
# to FILE.1, FILE.2, ... (read with go tool pprof). BOXOFFICE=BINARY runs
# that build of boxoffice instead of this checkout's (one without
# --pprof-addr can run without PROFILE). With PERF=FILE (as root), the
# whole machine is sampled by perf during each production run (FILE.1, ...;
# PostgreSQL's and Redis's time included: perf report -i FILE.1). With
# REDIS_STATS=1, Redis's commands of each production run, per request; with
# PG_STATS=1, PostgreSQL's costliest statements of each production run, per
# request (needs pg_stat_statements in shared_preload_libraries).
#
# The direct reserve of issue 13, the same way: SALE=direct INFLIGHT=64 with
# WORKLOAD=A (one random seat of 70,000) or WORKLOAD=B (the 10 hot seats).
# Each repetition has events of its own.
#
# Needs: PERF_LOAD (default ../shared/perf-load, the load client's source),
# PostgreSQL on 127.0.0.1:5432 with trust auth (the database bo_frontdoor is
# created, and dropped at the end), redis-server (a throwaway one on port 6391). Ports
# 26001, 26010, 26020, 26030 and 9193 must be free. Everything it starts it stops.
set -euo pipefail

REPS=${1:-3}
DUR=${2:-6s}
PERF_LOAD=${PERF_LOAD:-$(cd "$(dirname "$0")/../.." && pwd)/shared/perf-load}
B=$(mktemp -d)
cd "$(dirname "$0")/.."
(cd "$PERF_LOAD" && go build -o "$B/perf-load" .)
if [ -n "${BOXOFFICE:-}" ]; then
	cp "$BOXOFFICE" "$B/boxoffice" # another build, e.g. a base to compare with
else
	go build -o "$B/boxoffice" ./cmd/boxoffice
fi
export BOXOFFICE_AUTH_SECRET=frontdoor-perfload-secret-0123456789
DB=bo_frontdoor
psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" 2>/dev/null
pg() { psql -qAt -h 127.0.0.1 -U postgres -d "$DB" "$@"; }
if [ -n "${PG_STATS:-}" ] && ! pg -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "SELECT 1 FROM pg_stat_statements LIMIT 1" >/dev/null; then
	echo "PG_STATS needs pg_stat_statements in PostgreSQL's shared_preload_libraries (and a restart)" >&2
	exit 1
fi

pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	redis-cli -p 6391 shutdown nosave >/dev/null 2>&1 || true
	wait 2>/dev/null || true
	psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null || true
	rm -rf "$B"
}
trap cleanup EXIT
redis-server --port 6391 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --logfile "$B/redis.log"
"$B/boxoffice" kafka-fake --addr 127.0.0.1:9193 >"$B/kafka.log" 2>&1 &
kafka=$!
pids+=("$kafka")
"$B/perf-load" bare -addr 127.0.0.1:26001 &
bare=$!
pids+=("$bare")
common=(--rate-per-user 0 --rate-per-address 0 --rate-reads-per-user 0 --demo=false --workers 0)
"$B/boxoffice" serve --addr 127.0.0.1:26010 --postgres "postgres://postgres@127.0.0.1:5432/$DB" \
	--redis 127.0.0.1:6391 --kafka 127.0.0.1:9193 ${PROFILE:+--pprof-addr 127.0.0.1:26030} "${common[@]}" >"$B/production.log" 2>&1 &
prod=$!
pids+=("$prod")
"$B/boxoffice" serve --addr 127.0.0.1:26020 --data "$B/data" "${common[@]}" >"$B/embedded.log" 2>&1 &
pids+=($!)
for port in 26001 26010 26020; do
	for _ in $(seq 60); do
		curl -s -o /dev/null "http://127.0.0.1:$port/openapi.json" && break
		sleep 1
	done
done

admin=$("$B/boxoffice" token --sub organiser --role admin)
opens=$(date -u -d '-1 min' +%Y-%m-%dT%H:%M:%SZ)
starts=$(date -u -d '+30 days' +%Y-%m-%dT%H:%M:%SZ)
# event PORT SECTION ROWS PER_ROW: an event (SALE: queued or direct), on
# sale since a minute.
event() {
	curl -sf -X POST "http://127.0.0.1:$1/events" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
		-d "{\"name\":\"front door $2\",\"venue\":\"Hall\",\"starts_at\":\"$starts\",\"sale_opens_at\":\"$opens\",\"sale_mode\":\"${SALE:-queued}\",\"sections\":[{\"name\":\"$2\",\"price_tier\":\"t\",\"price_cents\":5000,\"rows\":$3,\"seats_per_row\":$4}]}" |
		sed -E 's/.*"event_id":"([0-9]+)".*/\1/'
}
ticks() { for p in "$@"; do awk '{printf "%d ", $14+$15}' "/proc/$p/stat"; done; }
# pgticks: the CPU ticks of every PostgreSQL process (the server's and
# its backends', whoever they serve).
pgticks() { cat /proc/[0-9]*/stat 2>/dev/null | awk '$2 == "(postgres)" {s += $14 + $15} END {print s + 0}'; }
# stat: the machine's busy and idle ticks (all cores), for how idle it was.
stat() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
redis_pid=$(redis-cli -p 6391 info server | awk -F: '/^process_id/{print $2}' | tr -d '\r')
load=("$B/perf-load" -c "${INFLIGHT:-256}" -w "${WORKLOAD:-A}" -dur "$DUR" -rows 70 -perrow 1000 -section S -secret "$BOXOFFICE_AUTH_SECRET")
warm=(-warm 2s -warm-rows 10 -warm-perrow 1000 -warm-section W)
for r in $(seq "$REPS"); do
	# Fresh events each repetition: a direct sale's seats stay held.
	pe=$(event 26010 S 70 1000)
	pw=$(event 26010 W 10 1000)
	ee=$(event 26020 S 70 1000)
	ew=$(event 26020 W 10 1000)
	b0=($(ticks "$bare"))
	out=$("${load[@]}" -system bare -url http://127.0.0.1:26001 -cell "b$r" | tail -1)
	b1=($(ticks "$bare"))
	echo "bare $r $out"
	echo "cpu $r bare: $(((b1[0] - b0[0]) * 10000 / $(sed -E 's/.*"requests":([0-9]+).*/\1/' <<<"$out"))) µs a request"
	emb=$("${load[@]}" -system bo -url http://127.0.0.1:26020 -event "$ee" -warm-event "$ew" "${warm[@]}" -cell "e$r" | tail -1)
	echo "embedded $r $emb"
	redis-cli -p 6391 config resetstat >/dev/null
	[ -z "${PG_STATS:-}" ] || pg -c "SELECT pg_stat_statements_reset()" >/dev/null
	t0=($(ticks "$prod" "$kafka" "$redis_pid") $(stat) $(pgticks))
	profiling=
	if [ -n "${PROFILE:-}" ]; then
		curl -s -o "$PROFILE.$r" "http://127.0.0.1:26030/debug/pprof/profile?seconds=${DUR%s}" &
		profiling=$!
	fi
	if [ -n "${PERF:-}" ]; then
		# The whole machine's profile (PostgreSQL's and Redis's time
		# included) over the run, past the warm-up: perf report -i FILE.r.
		(sleep 2 && perf record -q -a -g -F 499 -o "$PERF.$r" -- sleep "$((${DUR%s} - 1))" 2>/dev/null) &
		profiling="$profiling $!"
	fi
	all=$("${load[@]}" -system bo -url http://127.0.0.1:26010 -event "$pe" -warm-event "$pw" "${warm[@]}" -cell "p$r")
	t1=($(ticks "$prod" "$kafka" "$redis_pid") $(stat) $(pgticks))
	[ -z "$profiling" ] || wait $profiling
	echo "production $r $(tail -1 <<<"$all")"
	# The issues' figure: each system's rps over the bare handler's, this repetition.
	rps() { sed -E 's/.*"rps":([0-9.]+).*/\1/' <<<"$1"; }
	echo "ratio $r: embedded $(awk -v a="$(rps "$emb")" -v b="$(rps "$out")" 'BEGIN {printf "%.2f", a / b}')x," \
		"production $(awk -v a="$(rps "$(tail -1 <<<"$all")")" -v b="$(rps "$out")" 'BEGIN {printf "%.2f", a / b}')x the bare handler"
	# Requests of both phases (warm-up and run), as the ticks cover both.
	n=$(sed -E 's/.*"requests":([0-9]+).*/\1/' <<<"$all" | awk '{s += $1} END {print s}')
	us() { echo "$(($1 * 10000 / n))"; }
	echo "cpu $r of $n requests: serve $((t1[0] - t0[0])) kafka-fake $((t1[1] - t0[1])) redis $((t1[2] - t0[2])) ticks;" \
		"µs a request: serve $(us $((t1[0] - t0[0]))) kafka-fake $(us $((t1[1] - t0[1]))) redis $(us $((t1[2] - t0[2]))) postgres $(us $((t1[5] - t0[5])));" \
		"machine idle $(((t1[4] - t0[4]) * 100 / (t1[3] - t0[3] + t1[4] - t0[4]))) %"
	if [ -n "${PG_STATS:-}" ]; then
		# PostgreSQL's statements of the production run, the costliest
		# first: calls, execution µs and WAL records a request.
		pg -F ' | ' -c "SELECT calls, round((total_exec_time * 1000 / $n)::numeric, 1),
			round(wal_records::numeric / $n, 1), left(regexp_replace(query, '\s+', ' ', 'g'), 70)
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$DB')
			ORDER BY total_exec_time DESC LIMIT 12" | sed 's/^/postgres /'
	fi
	if [ -n "${REDIS_STATS:-}" ]; then
		# What Redis ran for the production run, per request.
		redis-cli -p 6391 info commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$n" \
			'/^cmdstat_/ {printf "redis %s: %.2f calls, %.2f µs a request\n", substr($1, 9), $3 / n, $5 / n}'
	fi
done
