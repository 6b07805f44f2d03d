#!/usr/bin/env bash
# etcd-agent's own footprint while it supervises a healthy member, idle: RSS and CPU of the agent
# process (not etcd) over an interval (default 60 s). Goal: RSS < 15 MB, CPU < 0.5 %.
# Also: time from starting etcd-agent (with an accepted plan) to a healthy member, vs a raw etcd
# started by hand with the same flags, as a ratio (goal <= 1.1).
# Usage: bench/agent_footprint.sh BUILD_DIR [SECONDS] [ROUNDS]
set -euo pipefail
BUILD=$(cd "${1:?usage: agent_footprint.sh BUILD_DIR [SECONDS] [ROUNDS]}" && pwd)
SECONDS_IDLE=${2:-60}
ROUNDS=${3:-5}
AGENT="$BUILD/agent/etcd-agent"
FLEET="$BUILD/fleetctl/etcd-fleet"
WORK=$(mktemp -d /tmp/bench-agent.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ms() { date +%s%3N; }

# wait_healthy ENDPOINT: bounded (30 s) poll until a linearizable read answers.
wait_healthy() {
  for _ in $(seq 1 3000); do
    "$FLEET" --endpoints "$1" --dial-timeout 200ms endpoint health >/dev/null 2>&1 && return 0
    sleep 0.01
  done
  echo "member at $1 never became healthy" >&2; return 1
}

setup_agent() {  # setup_agent DIR -> writes config + an accepted plan; prints "CP AP"
  local d=$1 cp pp ap hp
  cp=$(port); pp=$(port); ap=$(port); hp=$(port)
  mkdir -p "$d/data/m1"
  cat >"$d/agent.toml" <<EOT
[member]
name = "m1"
client_port = $cp
peer_port = $pp
data_root = "$d/data"
[agent]
api_listen = "127.0.0.1:$ap"
insecure = true
http_listen = "127.0.0.1:$hp"
api_socket = "$d/api.sock"
EOT
  cat >"$d/data/m1/state.json" <<EOT
{"version": 1, "plan": {"mode": "PLAN_MODE_NEW", "cluster_token": "bench", "member_name": "m1",
 "client_port": $cp, "peer_port": $pp, "initial_cluster": "m1=http://127.0.0.1:$pp"}}
EOT
  echo "$cp $pp"
}

echo "== start-up: agent with an accepted plan -> healthy member, vs raw etcd with the same flags"
ta=(); tr=()
for r in $(seq 1 "$ROUNDS"); do
  d="$WORK/a$r"; read -r cp pp < <(setup_agent "$d")
  t0=$(ms); "$AGENT" --config "$d/agent.toml" >"$d/agent.log" 2>&1 & apid=$!; PIDS+=("$apid")
  wait_healthy "127.0.0.1:$cp"; t1=$(ms); ta+=($((t1 - t0)))
  kill "$apid"; wait "$apid" 2>/dev/null || true
  # the same etcd command line the agent ran, by hand
  d="$WORK/r$r"; mkdir -p "$d"; cp2=$(port); pp2=$(port)
  t0=$(ms)
  etcd --name=m1 --data-dir="$d/data" --listen-client-urls="http://127.0.0.1:$cp2" \
    --advertise-client-urls="http://127.0.0.1:$cp2" --listen-peer-urls="http://127.0.0.1:$pp2" \
    --initial-advertise-peer-urls="http://127.0.0.1:$pp2" --initial-cluster="m1=http://127.0.0.1:$pp2" \
    --initial-cluster-state=new --initial-cluster-token=bench --auto-compaction-mode=periodic \
    --auto-compaction-retention=24h --quota-backend-bytes=8589934592 --strict-reconfig-check=true \
    --logger=zap --log-outputs=stderr >"$d/etcd.log" 2>&1 & epid=$!; PIDS+=("$epid")
  wait_healthy "127.0.0.1:$cp2"; t1=$(ms); tr+=($((t1 - t0)))
  kill "$epid"; wait "$epid" 2>/dev/null || true
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ma=$(median "${ta[@]}"); mr=$(median "${tr[@]}")
echo "agent -> healthy: median ${ma} ms (${ta[*]})"
echo "raw etcd -> healthy: median ${mr} ms (${tr[*]})"
awk -v a="$ma" -v r="$mr" 'BEGIN { printf "ratio agent/raw: %.2f (goal <= 1.10)\n", a / r }'

echo "== idle footprint over ${SECONDS_IDLE}s"
d="$WORK/idle"; read -r cp pp < <(setup_agent "$d")
"$AGENT" --config "$d/agent.toml" >"$d/agent.log" 2>&1 & apid=$!; PIDS+=("$apid")
wait_healthy "127.0.0.1:$cp"
sleep 2
tck=$(getconf CLK_TCK)
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$apid/stat")
sleep "$SECONDS_IDLE"
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$apid/stat")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$apid/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$apid/status")
awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v t="$tck" -v secs="$SECONDS_IDLE" -v rss="$rss" -v hwm="$hwm" \
  'BEGIN { printf "agent CPU: %.3f %% of one core; RSS %.1f MB (peak %.1f MB) (goals: < 0.5 %%, < 15 MB)\n", (u + s) / t / secs * 100, rss / 1024, hwm / 1024 }'
