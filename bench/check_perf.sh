#!/usr/bin/env bash
# Write throughput of `etcd-fleet check perf --load m` vs `etcdctl check perf --load m` on the same
# 3-member loopback cluster, one after the other (60 s each). Goal: ratio >= 1.0 — the client must
# never be the bottleneck. Usage: bench/check_perf.sh BUILD_DIR [LOAD]
set -euo pipefail
BUILD=$(cd "${1:?usage: check_perf.sh BUILD_DIR [LOAD]}" && pwd)
LOAD=${2:-m}
FLEET="$BUILD/fleetctl/etcd-fleet"
WORK=$(mktemp -d /tmp/bench-perf.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -a CP PP
initial=""
for i in 1 2 3; do CP[i]=$(port); PP[i]=$(port); initial+="${initial:+,}m$i=http://127.0.0.1:${PP[$i]}"; done
for i in 1 2 3; do
  etcd --name "m$i" --data-dir "$WORK/m$i" --listen-client-urls "http://127.0.0.1:${CP[$i]}" \
    --advertise-client-urls "http://127.0.0.1:${CP[$i]}" --listen-peer-urls "http://127.0.0.1:${PP[$i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${PP[$i]}" --initial-cluster "$initial" \
    --initial-cluster-token bench-perf >"$WORK/m$i.log" 2>&1 &
  PIDS+=($!)
done
EP="127.0.0.1:${CP[1]},127.0.0.1:${CP[2]},127.0.0.1:${CP[3]}"
for _ in $(seq 1 100); do "$FLEET" --endpoints "$EP" endpoint health >/dev/null 2>&1 && break; sleep 0.2; done

throughput() { grep -oE 'Throughput (is|too low:) [0-9]+' | grep -oE '[0-9]+$'; }
echo "etcdctl check perf --load $LOAD ..."
A=$(ETCDCTL_API=3 etcdctl --endpoints "$EP" check perf --load "$LOAD" 2>/dev/null | tee "$WORK/a.txt" | throughput || true)
grep -E 'PASS|FAIL' "$WORK/a.txt" | sed 's/^/  etcdctl:    /'
echo "etcd-fleet check perf --load $LOAD ..."
B=$("$FLEET" --endpoints "$EP" check perf --load "$LOAD" 2>/dev/null | tee "$WORK/b.txt" | throughput || true)
grep -E 'PASS|FAIL' "$WORK/b.txt" | sed 's/^/  etcd-fleet: /'
echo "throughput: etcdctl ${A:-?} writes/s, etcd-fleet ${B:-?} writes/s"
awk -v a="${A:-0}" -v b="${B:-0}" 'BEGIN { if (a > 0) printf "ratio etcd-fleet/etcdctl: %.2f (goal >= 1.00)\n", b / a }'
