#!/usr/bin/env bash
# Wall time of `etcd-fleet member replace m2 --with HOST` (a lost member replaced onto a fresh
# host: add learner, start it, catch up, promote, remove the old member) with 10 MB and with
# 200 MB of data in the cluster, and how it grows (ratio 200 MB / 10 MB). Goal: 10 MB in < 1.5 s.
#
# Each round: four etcd-agents on 127.0.0.21-24 (free ports), a 3-member cluster formed by
# `etcd-fleet bootstrap` on the first three, N MB written as 1 MiB values (`etcd-fleet put` from
# stdin; etcd takes at most 1.5 MiB per request), at least 6 s after the bootstrap (below) m2's
# agent killed (its etcd follows) and its etcd gone, then the timed replace onto the fourth agent.
# Every line of the replace is printed behind the seconds since it started: the per-step trace.
# Everything started here is stopped by PID on exit.
# Usage: bench/member_replace.sh BUILD_DIR [SMALL_MB] [LARGE_MB]
set -euo pipefail
BUILD=$(cd "${1:?usage: member_replace.sh BUILD_DIR [SMALL_MB] [LARGE_MB]}" && pwd)
SMALL=${2:-10}
LARGE=${3:-200}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
HOSTS=(127.0.0.21 127.0.0.22 127.0.0.23 127.0.0.24)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init replace
bench_copy_binaries "$BUILD"

head -c 1048576 /dev/urandom >"$WORK/value"

# round MB: sets SECONDS_TAKEN to the replace's wall time.
round() {
  local mb=$1 dir="$WORK/round-$1" apis=() agent_pids=()
  mkdir -p "$dir"
  for i in 0 1 2 3; do
    bench_start_agent "$dir" "m$((i + 1))" "${HOSTS[$i]}" "bench-replace-$mb"
    agent_pids+=("$BENCH_AGENT_PID")
    apis+=("$BENCH_AGENT_API")
  done
  local fleet=("$FLEET" --fleet "$dir/fleet.toml") formed
  # The agents answer within a second or two of starting; bootstrap waits for them (bounded).
  "${fleet[@]}" bootstrap --hosts "${apis[0]},${apis[1]},${apis[2]}" --agent-timeout 20s \
    --cluster "bench-replace-$mb" >"$dir/bootstrap.log" 2>&1 ||
    { echo "bootstrap failed:" >&2; cat "$dir/bootstrap.log" >&2; return 1; }
  formed=$(now)

  for k in $(seq 1 "$mb"); do
    "${fleet[@]}" put "bench/value$k" <"$WORK/value" >/dev/null
  done
  local size
  size=$("${fleet[@]}" endpoint status -w json | python3 -c \
    'import json,sys; print(max(e["Status"]["dbSize"] for e in json.load(sys.stdin)) // 1048576)')
  echo "  $mb MB written (db size ${size} MiB)"

  # A settled cluster: etcd refuses membership changes ("unhealthy cluster") until its members
  # have been connected to each other for 5 s, which only a replace right after a bootstrap meets
  # (member add waits it out, saying so); an operator replaces a member of a cluster that has run.
  # That state cannot be observed from outside, so the bench lets 6 s pass since the bootstrap.
  sleep "$(awk -v a="$formed" -v b="$(now)" 'BEGIN { d = 6 - (b - a); print (d > 0 ? d : 0) }')"
  local m2_client
  m2_client=$("$FLEET" agent status --host "${apis[1]}" -w json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["client_urls"][0])')
  kill -9 "${agent_pids[1]}"  # m2's host is lost: its etcd dies with its agent (parent-death signal)
  wait "${agent_pids[1]}" 2>/dev/null || true
  local _
  for _ in $(seq 1 100); do  # until m2's etcd is gone (bounded: 10 s)
    "$FLEET" --endpoints "$m2_client" endpoint health --dial-timeout 1s >/dev/null 2>&1 || break
    sleep 0.1
  done

  local t0 t1
  t0=$(now)
  # Each line of the replace stamped with the seconds since it started: the per-step trace.
  "${fleet[@]}" member replace m2 --with "${apis[3]}" --promote-timeout 10m 2>&1 | stamp "$t0" \
    >"$dir/replace.log" || { echo "member replace failed:" >&2; cat "$dir/replace.log" >&2; return 1; }
  t1=$(now)
  sed 's/^/    /' "$dir/replace.log"
  local n
  n=$("${fleet[@]}" get bench/ --prefix --count-only)
  [ "$n" = "$mb" ] || { echo "expected $mb keys after the replace, found $n" >&2; return 1; }

  for p in "${agent_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${agent_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
  SECONDS_TAKEN=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

echo "member replace --with a fresh host, ${SMALL} MB of data ..."
round "$SMALL"
A=$SECONDS_TAKEN
echo "member replace --with a fresh host, ${LARGE} MB of data ..."
round "$LARGE"
B=$SECONDS_TAKEN
echo "member replace wall time: ${SMALL} MB ${A} s, ${LARGE} MB ${B} s"
awk -v a="$A" -v b="$B" -v s="$SMALL" -v l="$LARGE" 'BEGIN {
  printf "growth %d MB / %d MB: %.2fx time for %.0fx data\n", l, s, b / a, l / s }'
