#!/usr/bin/env bash
# The body of user_manager_test.sh, inside a private mount namespace.
set -euo pipefail
BUILD=$1
AGENT="$BUILD/agent/etcd-agent"
FLEET="$BUILD/fleetctl/etcd-fleet"
WORK=$(mktemp -d /tmp/etcd-agent-sd.XXXXXX)
stop_units() { systemctl --user stop etcd-agent-test.service >/dev/null 2>&1; }
# shellcheck source=user_manager_lib.sh
source "$(dirname "$0")/user_manager_lib.sh"
start_user_manager

CP=$(port); PP=$(port); AP=$(port); HP=$(port)
mkdir -p "$WORK/data/m1"
cat >"$WORK/agent.toml" <<EOT
[member]
name = "m1"
client_port = $CP
peer_port = $PP
data_root = "$WORK/data"
[cluster]
token = "sd-test"
[agent]
api_listen = "127.0.0.1:$AP"
insecure = true
http_listen = "127.0.0.1:$HP"
api_socket = "$WORK/api.sock"
EOT
# An accepted single-member plan, as `etcd-fleet bootstrap` leaves it.
cat >"$WORK/data/m1/state.json" <<EOT
{"version": 1, "plan": {"mode": "PLAN_MODE_NEW", "cluster_token": "sd-test", "member_name": "m1",
 "client_port": $CP, "peer_port": $PP, "initial_cluster": "m1=http://127.0.0.1:$PP"},
 "accepted_at": "2026-01-01T00:00:00Z"}
EOT
cat >"$XDG_CONFIG_HOME/systemd/user/etcd-agent-test.service" <<EOT
[Unit]
Description=etcd-agent under test
[Service]
Type=notify
NotifyAccess=main
ExecStart=$AGENT --config $WORK/agent.toml
KillMode=mixed
WatchdogSec=30
[Install]
WantedBy=default.target
EOT
systemctl --user daemon-reload
check "unit starts (Type=notify: READY=1 arrives)" systemctl --user start etcd-agent-test.service

status=""
for _ in $(seq 1 100); do
  status=$(systemctl --user status etcd-agent-test.service 2>&1 || true)
  grep -q 'Status: "member m1 · leader' <<<"$status" && break
  sleep 0.2
done
echo "$status" | head -8
check "status shows active (running)" grep -q "Active: active (running)" <<<"$status"
check "Status: line names the member and its role" grep -q 'Status: "member m1 · leader · cluster sd-test · 1 voting' <<<"$status"

check "autostart starts disabled" test "$(systemctl --user is-enabled etcd-agent-test.service || true)" = disabled
out=$("$FLEET" autostart enable --host "127.0.0.1:$AP" 2>&1 || true)
echo "$out"
check "SetAutostart(true) -> is-enabled says enabled" test "$(systemctl --user is-enabled etcd-agent-test.service || true)" = enabled
check "autostart status reports enabled" grep -q "^enabled" <<<"$("$FLEET" autostart status --host "127.0.0.1:$AP" 2>&1)"
"$FLEET" autostart disable --host "127.0.0.1:$AP"
check "SetAutostart(false) -> is-enabled says disabled" test "$(systemctl --user is-enabled etcd-agent-test.service || true)" = disabled

check "etcd answers through the supervised member" test "$("$FLEET" --endpoints "127.0.0.1:$CP" put k v)" = OK
systemctl --user stop etcd-agent-test.service
check "stopping the unit stops etcd" bash -c "! $FLEET --endpoints 127.0.0.1:$CP --dial-timeout 300ms get k >/dev/null 2>&1"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
