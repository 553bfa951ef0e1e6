#!/usr/bin/env bash
# redis-cluster.sh start|stop|status DIR
#
# Runs a throwaway Redis Cluster on loopback for the tests of package redis
# (BOXOFFICE_TEST_REDIS_CLUSTER). Nothing is persisted (--save "",
# --appendonly no); each node keeps its nodes.conf, log and pid file in
# DIR/<port>/.
#
#   start DIR   start the nodes, create the cluster, wait for cluster_state:ok,
#               print the node list (host:port,host:port,...) on stdout
#   stop DIR    stop the nodes started in DIR, by the pids recorded there
#   status DIR  print cluster_state of each node
#   cap DIR PCT put each node in a CPU cgroup of its own, limited to PCT % of
#               one core (root; cgroup v1 or v2): a stand-in, on a small
#               machine, for hosts where each primary's one thread is the
#               limit, so that spreading a hot key over primaries can be
#               measured (docs/benchmarks.md); stop removes the cgroups
#
# Environment:
#   PORTS     the ports, default "7000 7001 7002"
#   REPLICAS  replicas per primary, default 0 (with 6 ports and REPLICAS=1:
#             3 primaries and 3 replicas)
#   HOST      default 127.0.0.1
#
# Example:
#   export BOXOFFICE_TEST_REDIS_CLUSTER=$(scripts/redis-cluster.sh start /tmp/boxoffice-cluster)
#   go test ./redis
#   scripts/redis-cluster.sh stop /tmp/boxoffice-cluster
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z $cmd || -z $dir ]]; then
	echo "usage: $0 start|stop|status|cap DIR [PERCENT]" >&2
	exit 2
fi
PORTS=${PORTS:-"7000 7001 7002"}
REPLICAS=${REPLICAS:-0}
HOST=${HOST:-127.0.0.1}

log() { echo "redis-cluster: $*" >&2; }

answers() { redis-cli -h "$HOST" -p "$1" ping 2>/dev/null | grep -q PONG; }

# wait_until TRIES CMD...: run CMD every 0.1 s until it succeeds.
wait_until() {
	local tries=$1
	shift
	for ((i = 0; i < tries; i++)); do
		if "$@"; then return 0; fi
		sleep 0.1
	done
	return 1
}

# cluster_ok: every node sees cluster_state:ok and all the nodes, and every
# replica's link to its primary is up.
cluster_ok() {
	local p info n
	n=$(wc -w <<<"$PORTS")
	for p in $PORTS; do
		info=$(redis-cli -h "$HOST" -p "$p" cluster info 2>/dev/null | tr -d '\r')
		grep -q '^cluster_state:ok$' <<<"$info" || return 1
		grep -q "^cluster_known_nodes:$n\$" <<<"$info" || return 1
		info=$(redis-cli -h "$HOST" -p "$p" info replication 2>/dev/null | tr -d '\r')
		if grep -q '^role:slave$' <<<"$info"; then
			grep -q '^master_link_status:up$' <<<"$info" || return 1
		fi
	done
}

start() {
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local p nodes=()
	for p in $PORTS; do
		if answers "$p"; then
			log "port $p already answers; stop it first (or choose PORTS)"
			exit 1
		fi
	done
	for p in $PORTS; do
		mkdir -p "$dir/$p"
		rm -f "$dir/$p/nodes.conf"
		redis-server --port "$p" --bind "$HOST" \
			--cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" \
			--cluster-node-timeout 2000 \
			--save "" --appendonly no --dir "$dir/$p" \
			--daemonize yes --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log"
		nodes+=("$HOST:$p")
	done
	: >"$dir/pids"
	for p in $PORTS; do
		if ! wait_until 100 answers "$p"; then
			log "node $p did not start; see $dir/$p/redis.log"
			exit 1
		fi
		cat "$dir/$p/redis.pid" >>"$dir/pids"
	done
	redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$REPLICAS" --cluster-yes >"$dir/create.log" 2>&1 || {
		log "cluster create failed:"
		cat "$dir/create.log" >&2
		exit 1
	}
	if ! wait_until 300 cluster_ok; then
		log "cluster_state is not ok after 30 s"
		status >&2
		exit 1
	fi
	log "cluster ok: ${nodes[*]} (pids in $dir/pids)"
	(IFS=,; echo "${nodes[*]}")
}

stop() {
	local pf pid
	shopt -s nullglob
	for pf in "$dir"/*/redis.pid; do
		pid=$(cat "$pf")
		# A stale pid file may name some other process by now.
		if [[ $(ps -p "$pid" -o comm= 2>/dev/null) != redis-server* ]]; then
			rm -f "$pf"
			continue
		fi
		if kill "$pid" 2>/dev/null; then
			for ((i = 0; i < 100; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			if kill -0 "$pid" 2>/dev/null; then
				log "pid $pid did not stop; sending SIGKILL"
				kill -9 "$pid" 2>/dev/null || true
			fi
			log "stopped pid $pid ($pf)"
		fi
		rm -f "$pf"
	done
	rm -f "$dir/pids"
	uncap
}

# cgroup_dir PORT: where node PORT's CPU cgroup is (cgroup v1's cpu
# controller, else the v2 unified hierarchy).
cgroup_dir() {
	if [[ -d /sys/fs/cgroup/cpu ]]; then
		echo "/sys/fs/cgroup/cpu/boxoffice-redis-$1"
	else
		echo "/sys/fs/cgroup/boxoffice-redis-$1"
	fi
}

cap() {
	local pct=${1:-}
	if ! [[ $pct =~ ^[0-9]+$ ]] || ((pct < 1)); then
		echo "usage: $0 cap DIR PERCENT" >&2
		exit 2
	fi
	local p cg quota=$((pct * 1000))
	for p in $PORTS; do
		cg=$(cgroup_dir "$p")
		mkdir -p "$cg"
		if [[ -f $cg/cpu.cfs_quota_us ]]; then
			echo 100000 >"$cg/cpu.cfs_period_us"
			echo "$quota" >"$cg/cpu.cfs_quota_us"
		else
			echo "$quota 100000" >"$cg/cpu.max"
		fi
		cat "$dir/$p/redis.pid" >"$cg/cgroup.procs"
		log "node $p limited to $pct % of a core ($cg)"
	done
}

uncap() {
	local p cg
	for p in $PORTS; do
		cg=$(cgroup_dir "$p")
		# A cgroup goes once its last task has left, a moment after the kill.
		[[ -d $cg ]] && wait_until 50 rmdir "$cg" 2>/dev/null || true
	done
}

status() {
	local p
	for p in $PORTS; do
		echo "$HOST:$p $(redis-cli -h "$HOST" -p "$p" cluster info 2>/dev/null | grep '^cluster_state' | tr -d '\r' || echo down)"
	done
}

case $cmd in
start) start ;;
stop) stop ;;
status) status ;;
cap) cap "${3:-}" ;;
*)
	echo "usage: $0 start|stop|status|cap DIR [PERCENT]" >&2
	exit 2
	;;
esac
