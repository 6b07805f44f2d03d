#!/usr/bin/env bash
# The agent's snapshots against etcdctl's, side by side in one run, on one member holding MB MB of
# data (1 MiB values, each its own random bytes):
#   1. a snapshot as the agent schedules it (stream to .part, fsync, rename, read back, etcd's
#      sha256 trailer and the bbolt check, the record) — the agent's own figure (duration_ms of its
#      record, from `etcd-fleet snapshot save --host`) and the wall of that whole command (take +
#      download to a file here) — against `etcdctl snapshot save` to a file (stream, fsync, no
#      verification);
#   2. `etcd-fleet snapshot status FILE` (trailer + bbolt, native) against `etcdctl snapshot status
#      FILE` on the same file.
# Rounds alternate the two sides; every round is printed, then the medians and their ratios.
# With zstd (the 4th argument) the agent keeps its snapshots compressed ([snapshot] compress), verified then read
# back decompressed; the values are distinct random bytes, so this is compression's worst case (it
# saves next to nothing and costs its full time; one value repeated would shrink to a few MB). The kept file's size is printed beside the snapshot's.
# Usage: bench/snapshot.sh BUILD_DIR [MB] [ROUNDS] [none|zstd]
set -euo pipefail
BUILD=$(cd "${1:?usage: snapshot.sh BUILD_DIR [MB] [ROUNDS] [none|zstd]}" && pwd)
MB=${2:-200}
ROUNDS=${3:-5}
COMPRESS=${4:-none}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
ETCDCTL=$(command -v etcdctl || echo /usr/bin/etcdctl)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init snapshot
bench_copy_binaries "$BUILD"

median() { sort -n | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# One member under an agent (no schedule: snapshots only when asked), bootstrapped by etcd-fleet.
bench_start_agent "$WORK" m1 127.0.0.51 bench-snapshot "
[snapshot]
schedule = \"off\"
dir = \"$WORK/snapshots\"
compress = \"$COMPRESS\"
keep_last = 2"
"$FLEET" --fleet "$WORK/fleet.toml" bootstrap --hosts "$BENCH_AGENT_API" --cluster bench-snapshot \
  >"$WORK/bootstrap.log" 2>&1 || { cat "$WORK/bootstrap.log" >&2; exit 1; }
F=("$FLEET" --fleet "$WORK/fleet.toml")
EP=$("${F[@]}" endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Endpoint"])')

for k in $(seq 1 "$MB"); do
  head -c 1048576 /dev/urandom >"$WORK/value"
  "${F[@]}" put "bench/value$k" <"$WORK/value" >/dev/null
done
echo "member at $EP holds $MB MB of data ($("${F[@]}" get bench/ --prefix --count-only) keys)"

declare -a REF AGENT_OWN AGENT_WALL ST_FLEET ST_REF
for r in $(seq 1 "$ROUNDS"); do
  rm -f "$WORK/ref.db" "$WORK/agent.db"
  take_ref() {
    local t0 t1
    t0=$(now)
    ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/ref.db" >/dev/null 2>&1
    t1=$(now)
    REF+=("$(elapsed "$t0" "$t1")")
  }
  take_agent() {
    local t0 t1 own
    t0=$(now)
    "${F[@]}" snapshot save --host m1 "$WORK/agent.db" >/dev/null 2>"$WORK/save.err"
    t1=$(now)
    AGENT_WALL+=("$(elapsed "$t0" "$t1")")
    own=$("${F[@]}" snapshot list -w json | python3 -c 'import json,sys
s = json.load(sys.stdin)["agents"][0]["snapshots"][0]
print("%.2f" % (int(s["duration_ms"]) / 1000))')
    KEPT=$(find "$WORK/snapshots" -name 'm1-*.db*' -newer "$WORK/value" -printf '%T@ %s %f\n' |
      sort -n | tail -1 | cut -d' ' -f2-)
    AGENT_OWN+=("$own")
  }
  if [ $((r % 2)) -eq 1 ]; then take_ref; take_agent; else take_agent; take_ref; fi
  status_pair() {
    local t0 t1
    t0=$(now); "$FLEET" snapshot status "$WORK/ref.db" >/dev/null; t1=$(now)
    ST_FLEET+=("$(elapsed "$t0" "$t1")")
    t0=$(now); ETCDCTL_API=3 "$ETCDCTL" snapshot status "$WORK/ref.db" >/dev/null; t1=$(now)
    ST_REF+=("$(elapsed "$t0" "$t1")")
  }
  status_pair
  echo "round $r: etcdctl snapshot save ${REF[-1]} s; agent's scheduled snapshot ${AGENT_OWN[-1]} s" \
    "(its record), snapshot save --host (take + download) ${AGENT_WALL[-1]} s;" \
    "snapshot status: etcd-fleet ${ST_FLEET[-1]} s, etcdctl ${ST_REF[-1]} s; kept: $KEPT"
done
ref=$(printf '%s\n' "${REF[@]}" | median)
own=$(printf '%s\n' "${AGENT_OWN[@]}" | median)
wall=$(printf '%s\n' "${AGENT_WALL[@]}" | median)
stf=$(printf '%s\n' "${ST_FLEET[@]}" | median)
str=$(printf '%s\n' "${ST_REF[@]}" | median)
echo "snapshot of $(stat -c %s "$WORK/ref.db") bytes (compress = $COMPRESS), medians of $ROUNDS rounds:"
echo "  agent's scheduled snapshot (verified) $own s vs etcdctl snapshot save $ref s:" \
  "time ratio $(ratio "$own" "$ref") (goal <= 1.0)"
echo "  snapshot save --host (take + download) $wall s: time ratio $(ratio "$wall" "$ref")"
echo "  snapshot status: etcd-fleet $stf s vs etcdctl $str s: time ratio $(ratio "$stf" "$str") (goal <= 0.5)"
