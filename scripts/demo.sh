#!/usr/bin/env bash
# The main job, run by `./dev demo`: three etcd-agents on loopback (127.0.0.11-13), formed into a
# 3-member etcd cluster by `etcd-fleet bootstrap`, then used through the fleet inventory alone.
# Secure by default, as on real hosts: `etcd-fleet ca init` makes the fleet CA, `token create` an
# enrollment token, each agent gets it (`etcd-agent enroll TOKEN`), and the bootstrap enrolls the
# agents (their CSRs signed, no key crossing) before it talks to them over mutual TLS.
# Each "host" is a loopback address with the default ports: etcd 2379/2380, agent API 2378,
# agent HTTP 2377. Everything lives in a temporary directory (the inventory too: the user's
# ~/.config/etcd-fleet is never touched); everything started here is stopped by PID on exit, so
# the demo can run again right away. KEEP=1 keeps the temporary directory (logs, data) for a look.
set -euo pipefail

BUILD=$(cd "${1:?usage: demo.sh BUILD_DIR}" && pwd)
FLEET="$BUILD/fleetctl/etcd-fleet"
AGENT="$BUILD/agent/etcd-agent"
HOSTS=(127.0.0.11 127.0.0.12 127.0.0.13)
WORK=$(mktemp -d /tmp/etcd-fleet-demo.XXXXXX)
PIDS=()

cleanup() {
  # SIGTERM to each agent we started: it stops its etcd before it exits.
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] && echo "kept $WORK" >&2 && return; rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

# A port of a previous run still in use (another program, or an etcd that outlived its agent)
# would make the bootstrap's preflight refuse: say so up front.
for h in "${HOSTS[@]}"; do
  for p in 2377 2378 2379 2380; do
    if (exec 3<>"/dev/tcp/$h/$p") 2>/dev/null; then
      echo "demo: $h:$p is in use; stop whatever listens there (ss -ltnp) and retry" >&2
      exit 1
    fi
  done
done

step "etcd-fleet ca init --fleet $WORK/fleet.toml"
"$FLEET" ca init --fleet "$WORK/fleet.toml"
step "etcd-fleet token create --fleet $WORK/fleet.toml"
TOKEN=$("$FLEET" token create --ttl 1h --fleet "$WORK/fleet.toml")
echo "${TOKEN:0:12}... (the secret is not shown here)"

for i in "${!HOSTS[@]}"; do
  h=${HOSTS[$i]}
  name="m$((i + 1))"
  mkdir -p "$WORK/$name"
  cat >"$WORK/$name/agent.toml" <<EOF
[member]
name = "$name"
advertise_host = "$h"
client_port = 2379
peer_port = 2380
data_root = "$WORK/$name/data"
[agent]
api_listen = "$h:2378"
http_listen = "$h:2377"
api_socket = "$WORK/$name/api.sock"
[enroll]
token_file = "$WORK/$name/enroll.token"
[etcd]
binary = "$(command -v etcd || echo /usr/bin/etcd)"
EOF
  "$AGENT" enroll "$TOKEN" --config "$WORK/$name/agent.toml" >/dev/null
  "$AGENT" --config "$WORK/$name/agent.toml" >"$WORK/$name/agent.log" 2>&1 &
  PIDS+=($!)
done
echo "started etcd-agent on ${HOSTS[*]}, each holding the token (logs in $WORK/m*/agent.log)"

step "etcd-fleet bootstrap --hosts ${HOSTS[*]// /,} --fleet $WORK/fleet.toml"
"$FLEET" bootstrap --hosts "$(IFS=,; echo "${HOSTS[*]}")" --fleet "$WORK/fleet.toml"
step "cat $WORK/fleet.toml"
cat "$WORK/fleet.toml"
step "etcd-fleet --fleet $WORK/fleet.toml put greeting 'hello, fleet'"
"$FLEET" --fleet "$WORK/fleet.toml" put greeting 'hello, fleet'
step "etcd-fleet --fleet $WORK/fleet.toml get greeting"
"$FLEET" --fleet "$WORK/fleet.toml" get greeting
step "etcd-fleet --fleet $WORK/fleet.toml member list -w table"
"$FLEET" --fleet "$WORK/fleet.toml" member list -w table
step "etcd-fleet --fleet $WORK/fleet.toml status"
"$FLEET" --fleet "$WORK/fleet.toml" status
echo
echo "demo finished; the agents and their members are stopped and the data removed."
