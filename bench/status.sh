#!/usr/bin/env bash
# Wall time of `etcd-fleet status` over fleets of 3, 10 and 50 agents: a 3-member cluster formed by
# `etcd-fleet bootstrap` on 127.0.2.1-3, plus idle etcd-agents (waiting for a plan) on 127.0.2.4..50
# listed in the inventory as hosts without a member yet. status asks every agent, the member list
# and each member's etcd at once, so its time should barely grow with the fleet (goal: 50 agents
# under 1 s, growing sub-linearly: the 50/3 ratio well below 50/3 = 16.7).
# Rounds alternate the sizes; every round is printed, then the medians and the ratios to 3 agents.
# Everything started here is stopped by PID on exit.
# Usage: bench/status.sh BUILD_DIR [ROUNDS]   (default 11 rounds)
set -euo pipefail
BUILD=$(cd "${1:?usage: status.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-11}
SIZES=(3 10 50)
ETCD=$(command -v etcd || echo /usr/bin/etcd)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init status
bench_copy_binaries "$BUILD"

apis=()
for i in $(seq 1 50); do
  bench_start_agent "$WORK" "m$i" "127.0.2.$i" bench-status
  apis+=("$BENCH_AGENT_API")
done
"$FLEET" --fleet "$WORK/fleet-3.toml" bootstrap --hosts "${apis[0]},${apis[1]},${apis[2]}" \
  --agent-timeout 20s --cluster bench-status >"$WORK/bootstrap.log" 2>&1 ||
  { echo "bootstrap failed:" >&2; cat "$WORK/bootstrap.log" >&2; exit 1; }
# The larger fleets: the same inventory, plus the idle agents as hosts without a member yet.
for n in 10 50; do
  cp "$WORK/fleet-3.toml" "$WORK/fleet-$n.toml"
  for i in $(seq 4 "$n"); do
    printf '\n[[member]]\nname = "m%d"\nhost = "127.0.2.%d"\nagent = "%s"\n' "$i" "$i" \
      "${apis[$((i - 1))]}" >>"$WORK/fleet-$n.toml"
  done
done
for n in "${SIZES[@]}"; do
  "$FLEET" --fleet "$WORK/fleet-$n.toml" status >"$WORK/status-$n.txt" 2>&1 ||
    { echo "status of $n agents failed:" >&2; cat "$WORK/status-$n.txt" >&2; exit 1; }
done
grep -c 'waiting' "$WORK/status-50.txt" >/dev/null ||
  { echo "the idle agents are not in the status of 50:" >&2; cat "$WORK/status-50.txt" >&2; exit 1; }

declare -A times
for r in $(seq 1 "$ROUNDS"); do
  line="round $r:"
  for n in "${SIZES[@]}"; do
    t0=${EPOCHREALTIME//[!0-9]/}
    "$FLEET" --fleet "$WORK/fleet-$n.toml" status >/dev/null 2>&1
    t1=${EPOCHREALTIME//[!0-9]/}
    ms=$(((10#$t1 - 10#$t0) / 1000))
    times[$n]+="$ms "
    line+=$(printf '  %2d agents %5d ms' "$n" "$ms")
  done
  echo "$line"
  # The next round starts with another size, so that drift hits every size alike.
  SIZES=("${SIZES[@]:1}" "${SIZES[0]}")
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# shellcheck disable=SC2086 # the times are a list of numbers
m3=$(median ${times[3]})
for n in 3 10 50; do
  # shellcheck disable=SC2086
  m=$(median ${times[$n]})
  awk -v n="$n" -v m="$m" -v b="$m3" \
    'BEGIN { printf "status, %2d agents: median %5d ms, %.2fx the 3-agent time (agents %.1fx)\n", n, m, m / b, n / 3 }'
done
