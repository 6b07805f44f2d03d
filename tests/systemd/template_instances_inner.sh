#!/usr/bin/env bash
# The body of template_instances_test.sh, inside a private mount namespace.
set -euo pipefail
BUILD=$1
SRC=$2
AGENT="$BUILD/agent/etcd-agent"
FLEET="$BUILD/fleetctl/etcd-fleet"
WORK=$(mktemp -d /tmp/etcd-agent-sd-tpl.XXXXXX)
NAMES=(m1 m2 m3)
stop_units() {
  for n in "${NAMES[@]}"; do systemctl --user stop "etcd-agent@$n.service" >/dev/null 2>&1; done
}
# shellcheck source=user_manager_lib.sh
source "$(dirname "$0")/user_manager_lib.sh"
start_user_manager

# The real template, minus what needs a system manager.
sed -e "s|^ExecStart=/usr/bin/etcd-agent --config /etc/etcd-agent/%i.toml|ExecStart=$AGENT --config $WORK/etc/%i.toml|" \
    -e '/^\(User\|Group\|StateDirectory\|StateDirectoryMode\|PrivateTmp\|PrivateDevices\|Protect[A-Za-z]*\|Restrict[A-Za-z]*\|NoNewPrivileges\|CapabilityBoundingSet\|MemoryDenyWriteExecute\|LockPersonality\|SystemCallFilter\|SystemCallArchitectures\|LimitNOFILE\|After\|Wants\)=/d' \
    -e 's/^WantedBy=multi-user.target/WantedBy=default.target/' \
    "$SRC/units/etcd-agent@.service" >"$XDG_CONFIG_HOME/systemd/user/etcd-agent@.service"
check "the instance unit still starts etcd-agent from the template's ExecStart" \
  grep -q "^ExecStart=$AGENT --config $WORK/etc/%i.toml" "$XDG_CONFIG_HOME/systemd/user/etcd-agent@.service"

mkdir -p "$WORK/etc"
HOSTS=()
for n in "${NAMES[@]}"; do
  AP=$(port); HP=$(port)
  cat >"$WORK/etc/$n.toml" <<EOT
[member]
name = "$n"
advertise_host = "127.0.0.1"
client_port = 0
peer_port = 0
data_root = "$WORK/data"
[cluster]
token = "tpl-test"
[agent]
api_listen = "127.0.0.1:$AP"
insecure = true
http_listen = "127.0.0.1:$HP"
[etcd]
extra_flags = ["--heartbeat-interval=50", "--election-timeout=500"]
EOT
  HOSTS+=("127.0.0.1:$AP")
done
systemctl --user daemon-reload
for n in "${NAMES[@]}"; do
  check "etcd-agent@$n starts and reports READY=1" systemctl --user start "etcd-agent@$n.service"
done
check "an idle instance says it waits for a plan" \
  grep -q 'Status: "waiting for a bootstrap plan"' <<<"$(systemctl --user status etcd-agent@m1.service 2>&1 || true)"
check "each instance serves its API on the socket in its RuntimeDirectory=etcd-agent/%i" \
  test -S "$XDG_RUNTIME_DIR/etcd-agent/m1/api.sock"
check "etcd-fleet reaches an instance over its socket" \
  grep -q "m1" <<<"$("$FLEET" agent status --socket "$XDG_RUNTIME_DIR/etcd-agent/m1/api.sock" 2>&1 || true)"

HOST_LIST=$(IFS=,; echo "${HOSTS[*]}")
set +e
out=$("$FLEET" bootstrap --hosts "$HOST_LIST" --cluster tpl-test --fleet "$WORK/fleet.toml" 2>&1)
rc=$?
set -e
echo "$out"
check "etcd-fleet bootstrap of three instances on one host exits 0" test "$rc" -eq 0

# Auto-allocated ports: every member got its own client and peer port.
members=$("$FLEET" --fleet "$WORK/fleet.toml" member list 2>&1 || true)
echo "$members"
check "three started voters" test "$(grep -c ', started, m[123], ' <<<"$members")" -eq 3
check "no two members share a peer URL" \
  test "$(grep -o 'http://127.0.0.1:[0-9]*' <<<"$members" | sort | uniq -d | wc -l)" -eq 0

leaders=0
for n in "${NAMES[@]}"; do
  status=""
  for _ in $(seq 1 50); do
    status=$(systemctl --user status "etcd-agent@$n.service" 2>&1 || true)
    grep -q "Status: \"member $n · \(leader\|follower\) · cluster tpl-test · 3 voting" <<<"$status" && break
    sleep 0.2
  done
  check "etcd-agent@$n is active (running)" grep -q "Active: active (running)" <<<"$status"
  check "etcd-agent@$n's Status: names member $n, its role and 3 voters" \
    grep -q "Status: \"member $n · \(leader\|follower\) · cluster tpl-test · 3 voting" <<<"$status"
  grep -q "Status: \"member $n · leader" <<<"$status" && leaders=$((leaders + 1))
done
check "exactly one leader among the instances ($leaders)" test "$leaders" -eq 1

check "put through the inventory (no --endpoints)" \
  test "$("$FLEET" --fleet "$WORK/fleet.toml" put greeting hello)" = OK
check "get through the inventory" \
  test "$("$FLEET" --fleet "$WORK/fleet.toml" get greeting --print-value-only)" = hello

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
