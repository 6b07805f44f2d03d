#!/usr/bin/env bash
# The main job, run by `./dev demo`: a 3-member etcd cluster on loopback (127.0.0.11-13), driven
# entirely through etcd-fleet. Everything it starts is stopped by PID on exit.
#
# Today the members are plain etcd processes started here; once the agent and bootstrap land, the
# same script starts three etcd-agent instances and `etcd-fleet bootstrap` forms the cluster.
set -euo pipefail

BUILD=${1:?usage: demo.sh BUILD_DIR}
FLEET="$BUILD/fleetctl/etcd-fleet"
HOSTS=(127.0.0.11 127.0.0.12 127.0.0.13)
WORK=$(mktemp -d /tmp/etcd-fleet-demo.XXXXXX)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

initial=""
for i in "${!HOSTS[@]}"; do
  initial+="${initial:+,}m$((i + 1))=http://${HOSTS[$i]}:2380"
done
for i in "${!HOSTS[@]}"; do
  h=${HOSTS[$i]}
  name="m$((i + 1))"
  etcd --name "$name" --data-dir "$WORK/$name" \
    --listen-client-urls "http://$h:2379" --advertise-client-urls "http://$h:2379" \
    --listen-peer-urls "http://$h:2380" --initial-advertise-peer-urls "http://$h:2380" \
    --initial-cluster "$initial" --initial-cluster-token demo --initial-cluster-state new \
    >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
done
ENDPOINTS=$(IFS=,; echo "${HOSTS[*]/%/:2379}")
export ETCDCTL_ENDPOINTS=$ENDPOINTS

printf 'starting 3 etcd members on %s ' "$ENDPOINTS"
for _ in $(seq 1 100); do
  if "$FLEET" endpoint health >/dev/null 2>&1; then break; fi
  printf '.'
  sleep 0.2
done
echo
step "etcd-fleet endpoint health"
"$FLEET" endpoint health
step "etcd-fleet member list -w table"
"$FLEET" member list -w table
step "etcd-fleet put greeting 'hello, fleet'"
"$FLEET" put greeting 'hello, fleet'
step "etcd-fleet get greeting -w json"
"$FLEET" get greeting -w json
step "etcd-fleet endpoint status -w table"
"$FLEET" endpoint status -w table
echo
echo "demo finished; the cluster is stopped and its data removed."
