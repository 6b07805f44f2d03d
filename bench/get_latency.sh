#!/usr/bin/env bash
# Process wall time of one-shot commands against their floor, alternating runs (so drift hits
# both sides equally), every round printed, then medians and ratios:
#   `etcd-fleet get foo` vs `etcdctl get foo`, against the same local etcd member (goal <= 0.4)
#   `etcd-fleet version` vs `/bin/true` (the cost of starting the binary at all; goal <= 1.5)
# Usage: bench/get_latency.sh BUILD_DIR [RUNS]
set -euo pipefail
BUILD=${1:?usage: get_latency.sh BUILD_DIR [RUNS]}
RUNS=${2:-41}
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init get
bench_copy_binaries "$BUILD"
export ETCDCTL_API=3

CP=$(port 127.0.0.1); PP=$(port 127.0.0.1)
etcd --name b --data-dir "$WORK/d" --listen-client-urls "http://127.0.0.1:$CP" \
  --advertise-client-urls "http://127.0.0.1:$CP" --listen-peer-urls "http://127.0.0.1:$PP" \
  --initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "b=http://127.0.0.1:$PP" \
  >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
EP="127.0.0.1:$CP"
for _ in $(seq 1 100); do ETCDCTL_API=3 etcdctl --endpoints "$EP" put foo bar >/dev/null 2>&1 && break; sleep 0.1; done
ETCDCTL_API=3 etcdctl --endpoints "$EP" get foo >/dev/null

# Microseconds from bash itself ($EPOCHREALTIME without its decimal separator, whatever the
# locale's): no process is started to read the clock, so a round times the command alone (plus
# bash's fork and exec, alike for both sides).
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# pair NAME REF_LABEL FLEET_LABEL GOAL REF_CMD... -- FLEET_CMD...: RUNS alternating rounds, each
# printed in microseconds, then the medians and their ratio against GOAL.
pair() {
  local name=$1 ref_label=$2 fleet_label=$3 goal=$4
  shift 4
  local ref=() fleet=() seen=0 a
  for a in "$@"; do
    if [ "$a" = -- ]; then seen=1; continue; fi
    if [ "$seen" -eq 0 ]; then ref+=("$a"); else fleet+=("$a"); fi
  done
  local A=() B=() t0 t1 t2 i
  for i in $(seq 1 "$RUNS"); do
    t0=${EPOCHREALTIME//[!0-9]/}; "${ref[@]}" >/dev/null; t1=${EPOCHREALTIME//[!0-9]/}
    "${fleet[@]}" >/dev/null; t2=${EPOCHREALTIME//[!0-9]/}
    A+=($((10#$t1 - 10#$t0))); B+=($((10#$t2 - 10#$t1)))
    printf '%s round %2d: %-22s %6d us   %-22s %6d us\n' "$name" "$i" "$ref_label" "${A[-1]}" \
      "$fleet_label" "${B[-1]}"
  done
  local MA MB
  MA=$(median "${A[@]}"); MB=$(median "${B[@]}")
  echo "$name: $ref_label median ${MA} us, $fleet_label median ${MB} us ($RUNS alternating runs)"
  awk -v a="$MA" -v b="$MB" -v n="$name" -v g="$goal" \
    'BEGIN { printf "ratio %s: %.2f (goal <= %s)\n", n, b / a, g }'
}

pair get "etcdctl get foo" "etcd-fleet get foo" 0.4 \
  etcdctl --endpoints "$EP" get foo -- "$FLEET" --endpoints "$EP" get foo
pair version "/bin/true" "etcd-fleet version" 1.5 /bin/true -- "$FLEET" version
