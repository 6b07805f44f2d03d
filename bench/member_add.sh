#!/usr/bin/env bash
# `etcd-fleet member add --host` right after `etcd-fleet bootstrap`: etcd (--strict-reconfig-check)
# refuses MemberAdd until the member asked has been connected to every other voter for 5 s, so the
# add must wait exactly that long, saying why, and no longer. Each round: four etcd-agents on
# 127.0.0.21-24, a 3-member bootstrap of the first three, then at once the add of the fourth; its
# lines are printed behind the seconds since the bootstrap began (the per-step trace), and the
# round reports when the bootstrap ended, when etcd took the MemberAdd and when the add ended.
# Everything started here is stopped by PID on exit.
# Usage: bench/member_add.sh BUILD_DIR [ROUNDS]   (default 3)
set -euo pipefail
BUILD=$(cd "${1:?usage: member_add.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
HOSTS=(127.0.0.21 127.0.0.22 127.0.0.23 127.0.0.24)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init member-add
bench_copy_binaries "$BUILD"

for r in $(seq 1 "$ROUNDS"); do
  dir="$WORK/round-$r"
  apis=()
  mkdir -p "$dir"
  for i in 0 1 2 3; do
    bench_start_agent "$dir" "m$((i + 1))" "${HOSTS[$i]}" "bench-add-$r"
    apis+=("$BENCH_AGENT_API")
  done
  fleet=("$FLEET" --fleet "$dir/fleet.toml")
  t0=$(now)
  "${fleet[@]}" bootstrap --hosts "${apis[0]},${apis[1]},${apis[2]}" --agent-timeout 20s \
    --cluster "bench-add-$r" 2>&1 | stamp "$t0" >"$dir/bootstrap.log" ||
    { echo "bootstrap failed:" >&2; cat "$dir/bootstrap.log" >&2; exit 1; }
  booted=$(elapsed "$t0" "$(now)")
  "${fleet[@]}" member add --host "${apis[3]}" 2>&1 | stamp "$t0" >"$dir/add.log" ||
    { echo "member add failed:" >&2; cat "$dir/add.log" >&2; exit 1; }
  ended=$(elapsed "$t0" "$(now)")
  echo "round $r:"
  sed 's/^/  /' "$dir/add.log"
  added=$(awk '/added learner/ { print $1; exit }' "$dir/add.log")
  echo "round $r: bootstrap done at $booted s, MemberAdd taken at $added s, add done at $ended s"
  bench_stop_pids
  rm -rf "$dir"
done
