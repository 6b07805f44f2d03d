#!/usr/bin/env bash
# Process wall time of `etcd-fleet get foo` vs `etcdctl get foo` against the same local etcd member.
# Alternating runs (so drift hits both equally); prints medians and the ratio (goal: <= 0.7).
# Usage: bench/get_latency.sh BUILD_DIR [RUNS]
set -euo pipefail
BUILD=${1:?usage: get_latency.sh BUILD_DIR [RUNS]}
RUNS=${2:-41}
FLEET="$BUILD/fleetctl/etcd-fleet"
WORK=$(mktemp -d /tmp/bench-get.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CP=$(port); PP=$(port)
etcd --name b --data-dir "$WORK/d" --listen-client-urls "http://127.0.0.1:$CP" \
  --advertise-client-urls "http://127.0.0.1:$CP" --listen-peer-urls "http://127.0.0.1:$PP" \
  --initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "b=http://127.0.0.1:$PP" \
  >"$WORK/etcd.log" 2>&1 &
PID=$!
EP="127.0.0.1:$CP"
for _ in $(seq 1 100); do ETCDCTL_API=3 etcdctl --endpoints "$EP" put foo bar >/dev/null 2>&1 && break; sleep 0.1; done

ns() { date +%s%N; }
declare -a A B
for _ in $(seq 1 "$RUNS"); do
  t0=$(ns); ETCDCTL_API=3 etcdctl --endpoints "$EP" get foo >/dev/null; t1=$(ns)
  "$FLEET" --endpoints "$EP" get foo >/dev/null; t2=$(ns)
  A+=($(( (t1 - t0) / 1000 ))); B+=($(( (t2 - t1) / 1000 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
MA=$(median "${A[@]}"); MB=$(median "${B[@]}")
echo "runs: $RUNS alternating"
echo "etcdctl get foo:    median ${MA} us"
echo "etcd-fleet get foo: median ${MB} us"
awk -v a="$MA" -v b="$MB" 'BEGIN { printf "ratio etcd-fleet/etcdctl: %.2f (goal <= 0.70)\n", b / a }'
