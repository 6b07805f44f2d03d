#!/usr/bin/env bash
# Wall time of `etcd-fleet bootstrap --from-snapshot FILE` on three fresh etcd-agents (check FILE,
# upload it to every agent, `etcdctl snapshot restore` on each, start, wait for a healthy
# cluster) against the manual reference for the same snapshot: `etcdctl snapshot restore` for the
# three members (in parallel) and three raw etcds started on the restored data dirs, until
# `etcdctl endpoint health` answers for all three. Both with SMALL and LARGE MB of data.
#
# Then the in-place restore of that running cluster from the same file (`etcd-fleet restore FILE
# --yes`: upload, stop, keep the data aside, restore, start fenced, verify, open one at a time)
# against the same by hand on the reference's running etcds: stop all three, move the data dirs
# aside, `etcdctl snapshot restore` x3 in parallel, start, until `endpoint health` answers.
#
# Each round: one etcd on 127.0.0.41 gets N MB as 1 MiB values (`etcd-fleet put` from stdin),
# `etcd-fleet snapshot save`; then the timed restore onto agents on 127.0.0.42-44 (free ports),
# then the reference on 127.0.0.45-47. Everything started here is stopped by PID on exit.
# Rounds alternate etcd-fleet and the reference on the same snapshot; every round is printed, then
# the medians: etcd's first election after a restore comes at a random moment (0.1-0.9 s after its
# peers connect, on both sides), so one round compares luck.
# Usage: bench/restore.sh BUILD_DIR [SMALL_MB] [LARGE_MB] [ROUNDS]   (defaults 10, 100, 3)
set -euo pipefail
BUILD=$(cd "${1:?usage: restore.sh BUILD_DIR [SMALL_MB] [LARGE_MB] [ROUNDS]}" && pwd)
SMALL=${2:-10}
LARGE=${3:-100}
ROUNDS=${4:-3}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
ETCDCTL=$(command -v etcdctl || echo /usr/bin/etcdctl)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init restore
bench_copy_binaries "$BUILD"

head -c 1048576 /dev/urandom >"$WORK/value"

# make_snapshot MB: SNAP, a snapshot of MB MB of data (one 1 MiB value per key), taken once per
# size and restored by every round.
make_snapshot() {
  local mb=$1 dir="$WORK/source-$1"
  mkdir -p "$dir/source"
  local sc sp
  sc=$(port 127.0.0.41)
  sp=$(port 127.0.0.41)
  "$ETCD" --name src --data-dir "$dir/source/data" --listen-client-urls "http://127.0.0.41:$sc" \
    --advertise-client-urls "http://127.0.0.41:$sc" --listen-peer-urls "http://127.0.0.41:$sp" \
    --initial-advertise-peer-urls "http://127.0.0.41:$sp" \
    --initial-cluster "src=http://127.0.0.41:$sp" >"$dir/source/etcd.log" 2>&1 &
  local src_pid=$!
  PIDS+=("$src_pid")
  for _ in $(seq 1 100); do
    "$FLEET" --endpoints "127.0.0.41:$sc" endpoint health >/dev/null 2>&1 && break
    sleep 0.1
  done
  for k in $(seq 1 "$mb"); do
    "$FLEET" --endpoints "127.0.0.41:$sc" put "bench/value$k" <"$WORK/value" >/dev/null
  done
  SNAP="$WORK/snap-$mb.db"
  "$FLEET" --endpoints "127.0.0.41:$sc" snapshot save "$SNAP" >/dev/null
  kill "$src_pid"
  wait "$src_pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "  snapshot of $mb MB of data: $(stat -c %s "$SNAP") bytes"
}

# round MB K: one round on SNAP; sets FLEET_S, REF_S, INPLACE_S, REF_INPLACE_S and TRACE.
round() {
  local mb=$1 dir="$WORK/round-$1-$2"
  mkdir -p "$dir"
  # etcd-fleet bootstrap --from-snapshot on three fresh agents.
  local apis=() agent_pids=()
  for i in 2 3 4; do
    bench_start_agent "$dir" "m$((i - 1))" "127.0.0.4$i" "bench-restore-$mb" \
      "etcdctl = \"$ETCDCTL\""
    agent_pids+=("$BENCH_AGENT_PID")
    apis+=("$BENCH_AGENT_API")
  done
  local t0 t1
  t0=$(now)
  "$FLEET" --fleet "$dir/fleet.toml" bootstrap --hosts "$(
    IFS=,
    echo "${apis[*]}"
  )" --cluster "bench-restore-$mb" --from-snapshot "$SNAP" --timeout 5m 2>&1 |
    stamp "$t0" >"$dir/bootstrap.log" ||
    { echo "bootstrap --from-snapshot failed:" >&2; cat "$dir/bootstrap.log" >&2; return 1; }
  t1=$(now)
  TRACE=$(cat "$dir/bootstrap.log")
  FLEET_S=$(elapsed "$t0" "$t1")
  local n
  n=$("$FLEET" --fleet "$dir/fleet.toml" get bench/ --prefix --count-only)
  [ "$n" = "$mb" ] || { echo "expected $mb keys after the restore, found $n" >&2; return 1; }
  "$FLEET" --fleet "$dir/fleet.toml" put bench/after x >/dev/null
  t0=$(now)
  "$FLEET" --fleet "$dir/fleet.toml" restore "$SNAP" --yes --timeout 5m \
    >"$dir/in-place.log" 2>&1 ||
    { echo "restore (in place) failed:" >&2; cat "$dir/in-place.log" >&2; return 1; }
  t1=$(now)
  INPLACE_S=$(elapsed "$t0" "$t1")
  n=$("$FLEET" --fleet "$dir/fleet.toml" get bench/ --prefix --count-only)
  [ "$n" = "$mb" ] || { echo "expected $mb keys after the in-place restore, found $n" >&2; return 1; }
  for p in "${agent_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${agent_pids[@]}"; do wait "$p" 2>/dev/null || true; done

  # The reference: etcdctl snapshot restore x3 (in parallel) + three raw etcds.
  local ic="" cps=() pps=() eps=()
  for i in 5 6 7; do
    cps+=("$(port "127.0.0.4$i")")
    pps+=("$(port "127.0.0.4$i")")
  done
  for k in 0 1 2; do
    ic+="${ic:+,}r$k=http://127.0.0.4$((k + 5)):${pps[$k]}"
    eps+=("127.0.0.4$((k + 5)):${cps[$k]}")
  done
  # etcdctl snapshot restore for the three reference members, in parallel; an existing data dir
  # is moved aside first (the in-place case).
  restore_reference() {
    local rpids=()
    for k in 0 1 2; do
      [ ! -d "$dir/ref$k" ] || mv "$dir/ref$k" "$dir/ref$k.before-restore"
      ETCDCTL_API=3 "$ETCDCTL" snapshot restore "$SNAP" --name "r$k" --initial-cluster "$ic" \
        --initial-cluster-token "ref-$mb" \
        --initial-advertise-peer-urls "http://127.0.0.4$((k + 5)):${pps[$k]}" \
        --data-dir "$dir/ref$k" >"$dir/ref$k.restore.log" 2>&1 &
      rpids+=($!)
    done
    for p in "${rpids[@]}"; do wait "$p"; done
  }
  t0=$(now)
  restore_reference
  local epids=()
  start_reference() {
    epids=()
    for k in 0 1 2; do
      local h="127.0.0.4$((k + 5))"
      "$ETCD" --name "r$k" --data-dir "$dir/ref$k" --listen-client-urls "http://$h:${cps[$k]}" \
        --advertise-client-urls "http://$h:${cps[$k]}" --listen-peer-urls "http://$h:${pps[$k]}" \
        --initial-advertise-peer-urls "http://$h:${pps[$k]}" --initial-cluster "$ic" \
        --initial-cluster-token "ref-$mb" >>"$dir/ref$k.log" 2>&1 &
      PIDS+=($!)
      epids+=($!)
    done
    for _ in $(seq 1 3000); do
      ETCDCTL_API=3 "$ETCDCTL" --endpoints "$(
        IFS=,
        echo "${eps[*]}"
      )" endpoint health >/dev/null 2>&1 && break
      sleep 0.05
    done
  }
  start_reference
  t1=$(now)
  REF_S=$(elapsed "$t0" "$t1")
  n=$("$FLEET" --endpoints "${eps[0]}" get bench/ --prefix --count-only)
  [ "$n" = "$mb" ] || { echo "reference: expected $mb keys, found $n" >&2; return 1; }

  # The in-place reference: the same by hand on the running raw etcds.
  "$FLEET" --endpoints "${eps[0]}" put bench/after x >/dev/null
  t0=$(now)
  for p in "${epids[@]}"; do kill "$p"; done
  for p in "${epids[@]}"; do wait "$p" 2>/dev/null || true; done
  restore_reference
  start_reference
  t1=$(now)
  REF_INPLACE_S=$(elapsed "$t0" "$t1")
  n=$("$FLEET" --endpoints "${eps[0]}" get bench/ --prefix --count-only)
  [ "$n" = "$mb" ] || { echo "reference in place: expected $mb keys, found $n" >&2; return 1; }
  rm -rf "$dir"
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for mb in "$SMALL" "$LARGE"; do
  echo "restore of a 3-member cluster from a snapshot of $mb MB ($ROUNDS rounds) ..."
  make_snapshot "$mb"
  fs=(); rs=(); fis=(); ris=()
  for rnd in $(seq 1 "$ROUNDS"); do
    round "$mb" "$rnd"
    fs+=("$FLEET_S"); rs+=("$REF_S"); fis+=("$INPLACE_S"); ris+=("$REF_INPLACE_S")
    echo "  round $rnd: bootstrap --from-snapshot $FLEET_S s, reference $REF_S s;" \
      "in place $INPLACE_S s, reference $REF_INPLACE_S s"
    bench_stop_pids  # the raw etcds of the reference
  done
  echo "  the last round's bootstrap, step by step (seconds since it began):"
  while IFS= read -r line; do echo "    $line"; done <<<"$TRACE"
  awk -v f="$(median "${fs[@]}")" -v r="$(median "${rs[@]}")" -v mb="$mb" 'BEGIN {
    printf "  %d MB, medians: etcd-fleet bootstrap --from-snapshot %.2f s; etcdctl snapshot restore x3 + etcd start %.2f s (%.2fx)\n",
      mb, f, r, f / r }'
  awk -v f="$(median "${fis[@]}")" -v r="$(median "${ris[@]}")" -v mb="$mb" 'BEGIN {
    printf "  %d MB in place, medians: etcd-fleet restore %.2f s; stop + etcdctl snapshot restore x3 + etcd start %.2f s (%.2fx)\n",
      mb, f, r, f / r }'
  rm -f "$SNAP"
done
