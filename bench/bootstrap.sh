#!/usr/bin/env bash
# Bootstrap wall time: `etcd-fleet bootstrap` of N etcd-agents vs a hand-written static bootstrap
# of N raw etcd processes on the same addresses and ports (127.0.0.11.., client 2379, peer 2380,
# the same etcd flags the agent generates), for N = 3, 5 and 7. Goal: ratio <= 1.3, flat in N.
#
# What is measured, both from the same starting point (nothing running, empty data dirs):
#   agent: start N etcd-agent processes, run `etcd-fleet bootstrap` (reach, preflight, plan,
#          apply, wait until every member is healthy and one leads); the clock stops when the
#          command exits 0. Agent start-up is included.
#   raw:   start N etcd processes with --initial-cluster, poll `etcd-fleet endpoint health` on all
#          N endpoints every 10 ms until it succeeds.
# Rounds alternate agent / raw, and the medians are compared.
# Every line of each size's last bootstrap is printed behind its time since the agents started.
# Usage: bench/bootstrap.sh BUILD_DIR [ROUNDS] [SIZES]   (defaults: 5 rounds, sizes "3 5 7")
set -euo pipefail
BUILD=$(cd "${1:?usage: bootstrap.sh BUILD_DIR [ROUNDS] [SIZES]}" && pwd)
ROUNDS=${2:-5}
SIZES=${3:-"3 5 7"}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
WORK=$(mktemp -d /tmp/bench-bootstrap.XXXXXX)
PIDS=()
# Private copies: a rebuild of the build directory during the run must not swap the binaries.
cp "$BUILD/agent/etcd-agent" "$BUILD/fleetctl/etcd-fleet" "$WORK/"
AGENT="$WORK/etcd-agent"
FLEET="$WORK/etcd-fleet"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"  # now, stamp

stop_all() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
cleanup() { stop_all; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
ms() { date +%s%3N; }
host() { echo "127.0.0.$((10 + $1))"; }

# ports_free N: bounded (10 s) wait until nothing listens on the addresses' ports any more.
ports_free() {
  for _ in $(seq 1 1000); do
    local busy=0
    for i in $(seq 1 "$1"); do
      for p in 2377 2378 2379 2380; do
        if (exec 3<>"/dev/tcp/$(host "$i")/$p") 2>/dev/null; then busy=1; fi
      done
    done
    [ "$busy" -eq 0 ] && return 0
    sleep 0.01
  done
  echo "ports on 127.0.0.11.. stay in use; stop whatever listens there (ss -ltnp)" >&2
  return 1
}

# The rounds run in this shell (not in $(...)): the processes they start are in PIDS here, so
# that a failing round, an interrupt or the end stops them all.
run_agents() {  # run_agents N DIR -> ELAPSED_MS; DIR/bootstrap.out: its lines, stamped
  local n=$1 d=$2 hosts="" t0 t1 t0s
  ports_free "$n"
  # The agents' config files are written first: on real hosts the package and the operator put
  # them there, as the raw reference's command lines are prepared before its clock starts.
  for i in $(seq 1 "$n"); do
    local h; h=$(host "$i")
    mkdir -p "$d/m$i"
    cat >"$d/m$i/agent.toml" <<EOT
[member]
name = "m$i"
advertise_host = "$h"
client_port = 2379
peer_port = 2380
data_root = "$d/m$i/data"
[agent]
api_listen = "$h:2378"
insecure = true
http_listen = "$h:2377"
api_socket = "$d/m$i/api.sock"
[etcd]
binary = "$ETCD"
EOT
    hosts+="${hosts:+,}$h"
  done
  t0=$(ms)
  t0s=$(now)
  for i in $(seq 1 "$n"); do
    "$AGENT" --config "$d/m$i/agent.toml" >"$d/m$i/agent.log" 2>&1 &
    PIDS+=($!)
  done
  # Every line of the bootstrap behind the seconds since the agents were started: the per-step
  # trace (printed for each size's last round).
  if ! "$FLEET" bootstrap --hosts "$hosts" --cluster bench --fleet "$d/fleet.toml" 2>&1 |
    stamp "$t0s" >"$d/bootstrap.out"; then
    echo "bootstrap of $n agents failed:" >&2; cat "$d/bootstrap.out" >&2
    for i in $(seq 1 "$n"); do echo "--- m$i agent log" >&2; tail -5 "$d/m$i/agent.log" >&2; done
    return 1
  fi
  t1=$(ms)
  stop_all
  ELAPSED_MS=$((t1 - t0))
}

run_raw() {  # run_raw N DIR -> ELAPSED_MS
  local n=$1 d=$2 initial="" endpoints="" t0 t1
  for i in $(seq 1 "$n"); do
    initial+="${initial:+,}m$i=http://$(host "$i"):2380"
    endpoints+="${endpoints:+,}$(host "$i"):2379"
  done
  ports_free "$n"
  for i in $(seq 1 "$n"); do mkdir -p "$d/m$i"; done
  t0=$(ms)
  for i in $(seq 1 "$n"); do
    local h; h=$(host "$i")
    # The command line etcd-agent generates for a static plan (agent/supervisor/etcd_flags.cpp).
    "$ETCD" --name="m$i" --data-dir="$d/m$i/data" --listen-client-urls="http://$h:2379" \
      --advertise-client-urls="http://$h:2379" --listen-peer-urls="http://$h:2380" \
      --initial-advertise-peer-urls="http://$h:2380" --initial-cluster="$initial" \
      --initial-cluster-state=new --initial-cluster-token=bench --auto-compaction-mode=periodic \
      --auto-compaction-retention=24h --quota-backend-bytes=8589934592 \
      --strict-reconfig-check=true --logger=zap --log-outputs=stderr >"$d/m$i/etcd.log" 2>&1 &
    PIDS+=($!)
  done
  local ok=0
  for _ in $(seq 1 3000); do  # bounded: 30 s of 10 ms polls (plus the polls' own time)
    if "$FLEET" --endpoints "$endpoints" --dial-timeout 200ms --command-timeout 1s \
      endpoint health >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.01
  done
  t1=$(ms)
  stop_all
  [ "$ok" -eq 1 ] || { echo "raw etcd cluster of $n never became healthy" >&2; return 1; }
  ELAPSED_MS=$((t1 - t0))
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
for n in $SIZES; do
  echo "== bootstrap of $n members on 127.0.0.11..$((10 + n)) ($ROUNDS rounds, alternating)"
  ta=(); tr=()
  for r in $(seq 1 "$ROUNDS"); do
    run_agents "$n" "$WORK/a$n-$r"
    ta+=("$ELAPSED_MS")
    run_raw "$n" "$WORK/r$n-$r"
    tr+=("$ELAPSED_MS")
  done
  echo "trace of round $ROUNDS (seconds since its agents were started):"
  sed 's/^/  /' "$WORK/a$n-$ROUNDS/bootstrap.out"
  ma=$(median "${ta[@]}"); mr=$(median "${tr[@]}")
  echo "etcd-fleet bootstrap (agents started + bootstrap): median ${ma} ms (${ta[*]})"
  echo "raw static etcd (started + polled healthy): median ${mr} ms (${tr[*]})"
  awk -v a="$ma" -v r="$mr" -v n="$n" \
    'BEGIN { printf "ratio agent/raw, %d members: %.2f (goal <= 1.30)\n", n, a / r }'
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
