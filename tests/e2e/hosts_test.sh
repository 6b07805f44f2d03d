#!/usr/bin/env bash
# End to end, the way users meet the product, on separate hosts: four systemd-booted test hosts
# (hosts.sh), each in a network namespace of its own (netns.sh: m1..m4 on 192.0.2.1-4, its own
# 127.0.0.1, no default route), and the operator's machine in a fifth (192.0.2.100), where
# etcd-fleet runs. `apt install etcd-agent` from the locally built apt repository on each host,
# with an agent.toml that names only the member and its address; the fleet CA and an enrollment
# token; then from the operator's namespace `etcd-fleet bootstrap --hosts 192.0.2.1,192.0.2.2,
# 192.0.2.3` (TLS by default: plaintext and certless clients refused), `systemctl status`,
# put/get through the inventory, `etcd-fleet certs rotate` while a client writes (no write may
# fail; every member serves new certificates for new keys, etcd not restarted), power loss of m2
# and `etcd-fleet member replace m2 --with 192.0.2.4`, m2 booting again, and `systemd-analyze
# security`. Nothing outside the namespaces ever talks to 192.0.2.x.
#
# Usage (as root): hosts_test.sh BUILD_DIR. Exit 77 (skipped) without root, systemd-nspawn or
# network namespaces. Every wait is bounded; every host is torn down by its recorded PIDs on exit,
# also on failure, and the namespaces are deleted. Environment: E2E_PACKAGE_SCRIPT (default
# scripts/package.sh BUILD_DIR OUT_DIR). Lines starting with FINDING: report behaviour that works
# but should be better; EXPOSURE: is systemd-analyze's score of the shipped unit; ROTATE: the
# certificate rotation's duration and write counts.
set -eEuo pipefail

BUILD=$(cd "${1:?usage: hosts_test.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FLEET="$BUILD/fleetctl/etcd-fleet"
PACKAGE_SCRIPT=${E2E_PACKAGE_SCRIPT:-$SRC/scripts/package.sh}

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (overlay mounts, systemd-nspawn)"; exit 77; fi
if ! command -v systemd-nspawn >/dev/null; then
  echo "SKIP: systemd-nspawn is missing (apt-get install systemd-container)"
  exit 77
fi
if ! command -v ip >/dev/null || ! unshare --net true 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (iproute2, unshare --net)"
  exit 77
fi

HOSTS_NETWORK=netns
# shellcheck source=hosts.sh
source "$SRC/tests/e2e/hosts.sh"
# shellcheck source=netns.sh
source "$SRC/tests/e2e/netns.sh"

NAMES=(m1 m2 m3 m4)
# mN is on 192.0.2.N in a namespace of its own; the operator (etcd-fleet, etcdctl) in "op".
declare -A ADDR
for i in 1 2 3 4; do ADDR[m$i]=192.0.2.$i; done
OP_INDEX=100
T0=$(date +%s.%N)
STEP_T0=$T0

step() {
  [ "$STEP_T0" = "$T0" ] || hosts_log "   (took $(hosts_since "$STEP_T0") s)"
  STEP_T0=$(date +%s.%N)
  printf '\n[%s] ===== %s\n' "$(date -u +%H:%M:%S)" "$*" >&2
}
die() {
  printf 'FAILED: %s\n' "$*" >&2
  trap - ERR
  writes_stop
  [ ! -s "$HOSTS_DIR/writes.log" ] ||
    grep -m 10 '^failed ' "$HOSTS_DIR/writes.log" | sed 's/^/writes| /' >&2 || true
  # What the agents said last, from every host still up.
  local name
  for name in "${NAMES[@]}"; do
    host_alive "$name" || continue
    host_run "$name" journalctl -u etcd-agent --no-pager -o cat -n 15 2>/dev/null |
      cut -c1-300 | sed "s/^/$name| journal: /" >&2 || true
  done
  exit 1
}
# Any other failing command (set -e) is reported with its line, then goes through die.
trap 'die "line $LINENO: $BASH_COMMAND"' ERR
# Prints a command (as the operator would type it) and its output, and fails the test when it
# fails.
show() {
  printf '$ %s\n' "$*" >&2
  "$@"
}
# etcd-fleet as the operator runs it from their machine: in the operator's namespace.
# XDG_CONFIG_HOME puts the operator's default inventory (~/.config/etcd-fleet/fleet.toml) in the
# test's temp dir, so the commands below are the literal ones of the issue (no --fleet, no
# --endpoints) and the machine's real ~/.config is never touched.
# With FLEET_TIMEOUT=SECONDS set, timeout(1) ends a call that is still running after that long.
fleet() {
  local limit=()
  [ -z "${FLEET_TIMEOUT:-}" ] || limit=(timeout -k 5 "$FLEET_TIMEOUT")
  netns_run op "${limit[@]}" env -u ETCDCTL_ENDPOINTS -u ETCD_FLEET_ENDPOINTS \
    XDG_CONFIG_HOME="$HOSTS_DIR/operator" "$FLEET" "$@"
}
# A TCP connection from the operator's namespace to ADDR:PORT.
op_connects() { netns_run op bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
# Retries CMD (its output discarded) every 0.5 s until it succeeds, at most SECONDS seconds.
wait_for() {
  local what=$1 seconds=$2 i t0
  shift 2
  t0=$(date +%s.%N)
  for ((i = 0; i < seconds * 2; i++)); do
    if "$@" >/dev/null 2>&1; then
      [ "$i" = 0 ] || hosts_log "waited $(hosts_since "$t0") s: $what"
      return 0
    fi
    sleep 0.5
  done
  die "$what: not within ${seconds}s"
}
# `systemctl status etcd-agent` in host NAME has the Status line of a running member of NAME.
status_names_role() {
  host_run "$1" systemctl status --no-pager --lines=0 etcd-agent |
    grep -E "Status: \"member $1 · (leader|follower) · "
}
# Voting members as etcd reports them, "name" per line, sorted.
voters() { fleet member list | awk -F', ' '$6 == "false" { print $3 }' | sort | paste -sd,; }
# The PID of the etcd that the agent of host NAME runs (its child).
etcd_pid_of() {
  local agent
  agent=$(host_run "$1" systemctl show -p MainPID --value etcd-agent) &&
    host_run "$1" pgrep -P "$agent" -x etcd
}
# The certificate served on ADDR:PORT to the operator's namespace (openssl s_client with
# etcd-fleet's own certificate, verified against the fleet CA): "serial=HEX key=SHA256" (the
# digest of its public key). Fails when no certificate came.
served_cert() {
  local pki=$HOSTS_DIR/operator/etcd-fleet/pki pem
  pem=$(netns_run op timeout 20 openssl s_client -connect "$1" -CAfile "$pki/ca.crt" \
    -cert "$pki/fleet.crt" -key "$pki/fleet.key" -verify_return_error </dev/null 2>/dev/null |
    sed -n '/-----BEGIN CERTIFICATE-----/,/-----END CERTIFICATE-----/p' || true)
  [ -n "$pem" ] || return 1
  printf '%s key=%s\n' "$(openssl x509 -noout -serial <<<"$pem")" \
    "$(openssl x509 -noout -pubkey <<<"$pem" | sha256sum | cut -d' ' -f1)"
}

# The client of the certificate rotation (step 3), in the background: `etcd-fleet put
# rotate/NNNNN vN` from the operator's namespace through the inventory, a process (so a TLS
# handshake) per write, never retried: a write that fails is final and counted. Bounded: at most
# WRITES_MAX writes in WRITES_SECONDS seconds, each ended by its --dial-timeout/--command-timeout
# or else killed after 20 s; it stops between two writes once writes.stop exists or the work dir
# is gone (the teardown). One line per write in writes.log: "ok KEY VALUE MS" or
# "failed KEY VALUE MS: exit N: what etcd-fleet said".
WRITES_MAX=3000
WRITES_SECONDS=300
WRITER_PID=""
write_loop() {
  trap - ERR
  set +e
  local i key out rc t0 deadline=$((SECONDS + WRITES_SECONDS)) FLEET_TIMEOUT=20
  for ((i = 0; i < WRITES_MAX && SECONDS < deadline; i++)); do
    if [ ! -d "$HOSTS_DIR" ] || [ -e "$HOSTS_DIR/writes.stop" ]; then break; fi
    printf -v key 'rotate/%05d' "$i"
    t0=${EPOCHREALTIME/[.,]/}
    out=$(fleet --dial-timeout 3s --command-timeout 10s put "$key" "v$i" 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && [ "$out" = OK ]; then
      echo "ok $key v$i $(((${EPOCHREALTIME/[.,]/} - t0) / 1000))"
    else
      echo "failed $key v$i $(((${EPOCHREALTIME/[.,]/} - t0) / 1000)): exit $rc: ${out//$'\n'/ }"
    fi
  done
}
writes_start() {
  rm -f "$HOSTS_DIR/writes.stop"
  : >"$HOSTS_DIR/writes.log"
  write_loop >>"$HOSTS_DIR/writes.log" 2>&1 &
  WRITER_PID=$!
}
# Lets the write in flight finish (at most 20 s), then the loop ends.
writes_stop() {
  [ -n "$WRITER_PID" ] || return 0
  touch "$HOSTS_DIR/writes.stop" 2>/dev/null || true
  wait "$WRITER_PID" || true
  WRITER_PID=""
}
HOSTS_TEARDOWN_HOOKS+=(writes_stop)
writes_acked() { grep -c '^ok ' "$HOSTS_DIR/writes.log" || true; }
writes_reached() { [ "$(writes_acked)" -ge "$1" ]; }

# Within ctest's TIMEOUT (900 s), so that the teardown always runs.
hosts_init "${E2E_DEADLINE:-840}"
netns_init || die "creating the test network failed"
for i in 1 2 3 4; do netns_add "m$i" "$i" || die "netns_add m$i failed"; done
netns_add op "$OP_INDEX" || die "netns_add op failed"
mkdir -p "$HOSTS_DIR/dist" "$HOSTS_DIR/operator" "$HOSTS_DIR/bin"
# The operator's etcd-fleet: a copy, so that a rebuild of the build tree during the test cannot
# swap the binary under it.
cp "$FLEET" "$HOSTS_DIR/bin/etcd-fleet"
FLEET="$HOSTS_DIR/bin/etcd-fleet"

step "0. packages: $(basename "$PACKAGE_SCRIPT") $BUILD DIST"
[ -x "$PACKAGE_SCRIPT" ] || die "$PACKAGE_SCRIPT is missing: it builds the .deb and the apt repo"
"$PACKAGE_SCRIPT" "$BUILD" "$HOSTS_DIR/dist" >"$HOSTS_DIR/package.log" 2>&1 ||
  { cat "$HOSTS_DIR/package.log" >&2; die "building the packages failed"; }
ls "$HOSTS_DIR"/dist/etcd-agent_*_amd64.deb "$HOSTS_DIR/dist/apt/Packages" >&2

step "0. boot ${NAMES[*]} in parallel (one shared lower layer: /)"
HOSTS_NSPAWN_ARGS=("--bind-ro=$HOSTS_DIR/dist/apt:/debs")
# m4 boots with Debian's etcd.service as the machine has it (enabled by etcd-server: a member of
# its own on its 127.0.0.1:2379): the package must stop and disable it.
host_start m4 --unmask etcd.service
for name in m1 m2 m3; do host_start "$name"; done
for name in "${NAMES[@]}"; do host_wait "$name"; done

# The host-specific agent.toml is in place before the package arrives, as configuration
# management would lay it down: the agent that the package's postinst starts then listens on the
# host's own address at once (agent.api_listen follows member.advertise_host). dpkg is told to keep an existing config file (force-confold, the
# non-interactive answer to its conffile question) and puts the package's version beside it as
# agent.toml.dpkg-dist. Only the local repository is configured: the host's other apt sources are
# moved aside inside its overlay, so nothing reaches the network. The machine image may carry
# Docker's /usr/sbin/policy-rc.d ("exit 101": start no service while building an image); a real
# host has none, and with it the postinst could not start etcd-agent: it goes, in the overlay.
install_host() {
  local name=$1 addr=${ADDR[$1]}
  host_run "$name" sh -ec "
    mkdir -p /etc/apt/sources.list.off /etc/etcd-agent
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
      [ -e \"\$f\" ] && mv \"\$f\" /etc/apt/sources.list.off/ || true
    done
    echo 'deb [trusted=yes] file:/debs ./' > /etc/apt/sources.list.d/etcd-agent.list
    echo force-confold > /etc/dpkg/dpkg.cfg.d/keep-local-config
    rm -f /usr/sbin/policy-rc.d
    cat > /etc/etcd-agent/agent.toml <<EOF
# This host's member and the address peers, clients and etcd-fleet reach it on.
[member]
name = \"$name\"
advertise_host = \"$addr\"
EOF
    echo '\$ apt-get update'
    apt-get update
    echo '\$ apt install -y etcd-agent'
    DEBIAN_FRONTEND=noninteractive apt install -y etcd-agent
  "
}

step "0. in each host: local apt repo, apt-get update, apt install -y etcd-agent (in parallel)"
declare -A INSTALL_PID
for name in "${NAMES[@]}"; do
  install_host "$name" >"$HOSTS_DIR/install-$name.log" 2>&1 &
  INSTALL_PID[$name]=$!
done
for name in "${NAMES[@]}"; do
  wait "${INSTALL_PID[$name]}" ||
    { cat "$HOSTS_DIR/install-$name.log" >&2; die "apt install etcd-agent failed in host $name"; }
done
sed 's/^/m1| /' "$HOSTS_DIR/install-m1.log" >&2
for name in "${NAMES[@]}"; do
  log="$HOSTS_DIR/install-$name.log"
  # apt-get update read the local repository and nothing else.
  grep -q 'file:/debs' "$log" || die "$name: apt-get update did not read file:/debs"
  if grep -E '^(Get|Hit|Ign|Err):.*(https?|cdrom)' "$log"; then
    die "$name: apt-get update used a source other than the local repository"
  fi
  # shellcheck disable=SC2016  # ${Status} is dpkg-query's field, not a shell expansion
  host_run "$name" dpkg-query -W -f='${Status}\n' etcd-agent |
    grep -x "install ok installed" >/dev/null ||
    die "$name: etcd-agent is not installed"
  grep -q "name = \"$name\"" <(host_run "$name" cat /etc/etcd-agent/agent.toml) ||
    die "$name: the host's agent.toml was not kept by the install"
  host_run "$name" test -s /etc/etcd-agent/agent.toml.dpkg-dist ||
    die "$name: dpkg did not put the package's agent.toml beside the kept one (.dpkg-dist)"
  [ "$(host_run "$name" systemctl is-enabled etcd-agent.service)" = enabled ] ||
    die "$name: etcd-agent.service is not enabled after the install"
  wait_for "$name: etcd-agent active after the install" 30 \
    host_run "$name" systemctl is-active --quiet etcd-agent.service
done
# Debian's etcd.service, running in m4 until the install: stopped, disabled, and said so.
grep -E "disabled Debian's etcd.service" "$HOSTS_DIR/install-m4.log" >&2 ||
  die "m4: the install did not say it stopped and disabled Debian's etcd.service"
[ "$(host_run m4 systemctl is-enabled etcd.service || true)" = disabled ] ||
  die "m4: etcd.service is still enabled after apt install etcd-agent"
! host_run m4 systemctl is-active --quiet etcd.service ||
  die "m4: etcd.service still runs after apt install etcd-agent"
# Secure by default: an installed agent serves nothing in plaintext and waits for a token.
waits_for_token() {
  host_run "$1" systemctl show -P StatusText etcd-agent.service |
    grep -q 'waiting for enrollment: put a token in /etc/etcd-agent/enroll.token'
}
for name in "${NAMES[@]}"; do
  wait_for "$name: the Status line says the agent waits for an enrollment token" 30 \
    waits_for_token "$name"
done
! fleet agent status --host "${ADDR[m1]}" >/dev/null 2>&1 ||
  die "m1: the installed agent answered a plaintext call before enrollment"

step "0. the fleet CA and an enrollment token; etcd-agent enroll TOKEN in each host"
show fleet ca init >&2 || die "etcd-fleet ca init failed"
TOKEN=$(fleet token create --ttl 1h) || die "etcd-fleet token create failed"
for name in "${NAMES[@]}"; do
  host_run "$name" etcd-agent enroll "$TOKEN" >/dev/null || die "$name: etcd-agent enroll failed"
  [ "$(host_run "$name" stat -c '%a %U' /etc/etcd-agent/enroll.token)" = "600 etcd-agent" ] ||
    die "$name: enroll.token is $(host_run "$name" stat -c '%a %U' /etc/etcd-agent/enroll.token), not 600 etcd-agent"
done
# The agents take the token without a restart; enroll them all at once (bootstrap would too).
wait_for "every agent enrolled" 30 \
  fleet enroll --hosts "${ADDR[m1]},${ADDR[m2]},${ADDR[m3]},${ADDR[m4]}"
for name in "${NAMES[@]}"; do
  wait_for "$name: the agent answers over mutual TLS on ${ADDR[$name]}:2378" 30 \
    fleet agent status --host "${ADDR[$name]}"
done
show fleet agent status --host "${ADDR[m1]}" >&2

step "1. etcd-fleet bootstrap --hosts ${ADDR[m1]},${ADDR[m2]},${ADDR[m3]}"
show fleet bootstrap --hosts "${ADDR[m1]},${ADDR[m2]},${ADDR[m3]}" >&2 ||
  die "etcd-fleet bootstrap failed"
show fleet member list -w table >&2
[ "$(voters)" = m1,m2,m3 ] || die "expected voters m1,m2,m3, got '$(voters)'"
show fleet endpoint health >&2 || die "not every member is healthy after the bootstrap"
# TLS by default: https members that require a client certificate of the fleet CA.
fleet member list | grep -q "https://${ADDR[m1]}:2380" || die "m1's peer URL is not https"
! fleet --endpoints "${ADDR[m1]}:2379" --dial-timeout 2s get k >/dev/null 2>&1 ||
  die "m1 answered a plaintext client"
! netns_run op etcdctl --endpoints "https://${ADDR[m1]}:2379" \
  --cacert "$HOSTS_DIR/operator/etcd-fleet/pki/ca.crt" --dial-timeout 2s --command-timeout 3s \
  get k >/dev/null 2>&1 ||
  die "m1 answered a client without a certificate"

step "2. in each host: systemctl status etcd-agent; journalctl -u etcd-agent"
for name in m1 m2 m3; do
  # The agent updates STATUS= with its health checks: wait until it names the role.
  wait_for "$name: systemctl status shows the member's role" 30 status_names_role "$name"
  out=$(host_run "$name" systemctl status --no-pager --lines=0 etcd-agent || true)
  printf '%s| $ systemctl status etcd-agent\n%s\n' "$name" "$out" | sed "2,\$s/^/$name| /" >&2
  grep -q 'Active: active (running)' <<<"$out" || die "$name: etcd-agent is not active (running)"
  grep -Eq "Status: \"member $name · (leader|follower) · " <<<"$out" ||
    die "$name: the Status line does not name the member and its role"
  journal=$(host_run "$name" journalctl -u etcd-agent --no-pager -o cat)
  # etcd's own lines (its startup banner, raft) reach the journal through the agent.
  grep -Eq 'etcd Version: 3\.|raft' <<<"$journal" ||
    { tail -n 20 <<<"$journal" >&2; die "$name: journalctl -u etcd-agent has no etcd log lines"; }
  grep -m 3 -E 'etcd Version: 3\.|became (leader|follower)' <<<"$journal" |
    sed "s/^/$name| journal: /" >&2
done
# The agent and its etcd run as the package's unprivileged user; member data is 0700.
agent_pid=$(host_run m1 systemctl show -p MainPID --value etcd-agent)
[ "$(host_run m1 ps -o user= -p "$agent_pid")" = etcd-agent ] ||
  die "m1: the agent does not run as etcd-agent"
etcd_pid=$(host_run m1 pgrep -P "$agent_pid" -x etcd) || die "m1: no etcd child of the agent"
[ "$(host_run m1 ps -o user= -p "$etcd_pid")" = etcd-agent ] ||
  die "m1: etcd does not run as etcd-agent"
for dir in /var/lib/etcd-agent /var/lib/etcd-agent/m1/data; do
  [ "$(host_run m1 stat -c '%U %a' "$dir")" = "etcd-agent 700" ] ||
    die "m1: $dir is not owned by etcd-agent with mode 0700 ($(host_run m1 stat -c '%U %a' "$dir"))"
done
echo "m1: etcd-agent (PID $agent_pid) and its etcd (PID $etcd_pid) run as etcd-agent" >&2

step "3. etcd-fleet put/get through the inventory (no flags)"
show fleet put k-before-1 v1 >&2 || die "put through the inventory failed"
[ "$(fleet get k-before-1 --print-value-only)" = v1 ] || die "get through the inventory failed"
show fleet get k-before-1 >&2
for i in 2 3 4 5; do fleet put "k-before-$i" "v$i" >/dev/null || die "put k-before-$i failed"; done

step "3. etcd-fleet certs rotate while a client writes (etcd-fleet put, a process per write, no retries)"
# What every member serves now on its client, peer and agent API ports, and its etcd's PID.
declare -A SERVED ETCD_PID
for name in m1 m2 m3; do
  ETCD_PID[$name]=$(etcd_pid_of "$name") || die "$name: no etcd child of the agent"
  for port in 2379 2380 2378; do
    SERVED[$name:$port]=$(served_cert "${ADDR[$name]}:$port") ||
      die "$name: no certificate served on ${ADDR[$name]}:$port"
  done
done
writes_start
wait_for "the client's first 10 writes are acknowledged" 60 writes_reached 10
writes_before=$(writes_acked)
rotate_t0=$(date +%s.%N)
show fleet certs rotate >"$HOSTS_DIR/rotate.out" 2>"$HOSTS_DIR/rotate.err" && ROTATE_RC=0 ||
  ROTATE_RC=$?
ROTATE_SECONDS=$(hosts_since "$rotate_t0")
writes_during=$(($(writes_acked) - writes_before))
sed 's/^/  /' "$HOSTS_DIR/rotate.err" >&2
cat "$HOSTS_DIR/rotate.out" >&2
# Then 10 more writes, over new handshakes with the new certificates only, and the client stops.
wait_for "10 more writes after the rotation" 60 writes_reached $((writes_before + writes_during + 10))
writes_stop
[ "$ROTATE_RC" = 0 ] || die "etcd-fleet certs rotate exited $ROTATE_RC"
writes_failed=$(grep -c '^failed ' "$HOSTS_DIR/writes.log" || true)
[ "$writes_failed" = 0 ] || die "$writes_failed writes failed during the certificate rotation"
writes_total=$(writes_acked)
[ "$writes_during" -gt 0 ] || die "no write was acknowledged while certs rotate ran"
# Every acknowledged write is there, read through each member (a linearizable read: the
# member's own certificate on the handshake, the cluster's latest state).
want=$(awk '$1 == "ok" { print $2 "\t" $3 }' "$HOSTS_DIR/writes.log")
for name in m1 m2 m3; do
  got=$(fleet --endpoints "https://${ADDR[$name]}:2379" get rotate/ --prefix | paste - -) ||
    die "$name: reading the written keys failed"
  [ "$got" = "$want" ] ||
    die "$name: the keys read back differ from the $writes_total acknowledged writes:" \
      "$(diff <(echo "$want") <(echo "$got") | head -n 5 | paste -sd' ')"
done
grep -qx 'every member has new certificates' "$HOSTS_DIR/rotate.out" ||
  die "certs rotate did not say that every member has new certificates"
for name in m1 m2 m3; do
  grep -q "^$name ${ADDR[$name]}:2378 rotated (" "$HOSTS_DIR/rotate.out" ||
    die "certs rotate did not report $name as rotated"
done
[ ! -e "$HOSTS_DIR/operator/etcd-fleet/pki/rotation.json" ] ||
  die "pki/rotation.json (the rotation's journal) outlived the rotation"
# On the wire: every port of every member serves a new certificate (serial) for a new key, and
# etcd took them without a restart.
for name in m1 m2 m3; do
  for port in 2379 2380 2378; do
    after=$(served_cert "${ADDR[$name]}:$port") ||
      die "$name: no certificate served on ${ADDR[$name]}:$port after the rotation"
    before=${SERVED[$name:$port]}
    [ "${after%% *}" != "${before%% *}" ] ||
      die "$name: ${ADDR[$name]}:$port still serves the certificate of ${before%% *}"
    [ "${after#* }" != "${before#* }" ] ||
      die "$name: ${ADDR[$name]}:$port serves a new certificate for the old key"
    echo "$name ${ADDR[$name]}:$port: ${before%% *} -> ${after%% *} (new key)" >&2
  done
  [ "$(etcd_pid_of "$name")" = "${ETCD_PID[$name]}" ] ||
    die "$name: etcd was restarted by the rotation (PID ${ETCD_PID[$name]} -> $(etcd_pid_of "$name"))"
done
slowest=$(awk '$1 == "ok" && $4 > max { max = $4 } END { print max + 0 }' "$HOSTS_DIR/writes.log")
echo "ROTATE: certs rotate took $ROTATE_SECONDS s; writes: $writes_total acknowledged, 0 failed," \
  "$writes_during acknowledged while it ran; slowest write ${slowest} ms" >&2

step "4. power m2 off (systemctl poweroff inside it); write while it is down"
show host_poweroff m2 || die "m2 did not power off"
! host_alive m2 || die "m2 is still running after poweroff"
if op_connects "${ADDR[m2]}" 2379; then
  die "${ADDR[m2]}:2379 still answers after m2's poweroff"
fi
# The two members left are a quorum of three: writes go on through the same inventory.
for i in 1 2 3 4 5; do
  fleet put "k-during-$i" "d$i" >/dev/null || die "put k-during-$i failed while m2 is down"
done
show fleet get k-during-5 >&2

step "4. etcd-fleet member replace m2 --with ${ADDR[m4]}"
# (`&& rc=0 || rc=$?`: the exit code is checked below, after the output is shown.)
show fleet member replace m2 --with "${ADDR[m4]}" >"$HOSTS_DIR/replace.log" 2>&1 && REPLACE_RC=0 ||
  REPLACE_RC=$?
cat "$HOSTS_DIR/replace.log" >&2
[ "$REPLACE_RC" = 0 ] || die "member replace m2 --with ${ADDR[m4]} exited $REPLACE_RC"
show fleet member list -w table >&2
[ "$(voters)" = m1,m3,m4 ] || die "expected voters m1,m3,m4 after the replace, got '$(voters)'"
show fleet endpoint health >&2 || die "not every member is healthy after the replace"
fleet put k-after-1 a1 >/dev/null || die "put after the replace failed"
# Every key written before and during the outage is there, on the new member too (a
# serializable read answers from m4's own copy).
want="k-after-1 $(printf 'k-before-%s ' 1 2 3 4 5)$(printf 'k-during-%s ' 1 2 3 4 5)"
want=${want% }
got=$(fleet --endpoints "https://${ADDR[m4]}:2379" get k- --prefix --keys-only --consistency=s | grep . |
  paste -sd' ')
[ "$got" = "$want" ] || die "keys on m4: got '$got', want '$want'"
m2_has_every_key() {
  [ "$(fleet --endpoints "https://${ADDR[m2]}:2379" get k- --prefix --keys-only --consistency=s |
    grep . | paste -sd' ')" = "$want" ]
}
echo "all 11 keys present on m4 (https://${ADDR[m4]}:2379)" >&2
# The agents' view: m4's agent reports its member as a voter (it was started as a learner).
m4_votes() { fleet status | grep -E '\| +m4 \|[^|]+\| +(leader|follower) \| +running \|'; }
wait_for "etcd-fleet status shows m4 as a running voter" 30 m4_votes
show fleet status >&2

step "5. boot m2 again: its agent starts at boot; its member was removed by the replace"
# The replace could not reach m2's agent, so it told the operator to wipe the member there later.
grep -E "when the host is back,.*wipe" "$HOSTS_DIR/replace.log" >/dev/null ||
  die "member replace did not say how to wipe the unreachable old member"
hosts_boot m2
wait_for "m2: the enabled etcd-agent starts at boot" 30 \
  host_run m2 systemctl is-active --quiet etcd-agent.service
# The agent starts the member from its data (state.json is still there); etcd learns from its
# peers that it was removed and stops. Wait until the agent has given up starting it.
m2_state() {
  local out
  out=$(fleet agent status --host "${ADDR[m2]}" 2>/dev/null) || true
  echo "${out%%$'\n'*}"
}
# The agent answers for m2 and is done starting it (it has loaded state.json: not waiting).
m2_settled() {
  local state
  state=$(m2_state)
  [[ $state == "m2, "* ]] && ! [[ $state =~ ^m2,\ (starting|waiting), ]]
}
wait_for "m2: the agent reports what became of its removed member" 90 m2_settled
show fleet agent status --host "${ADDR[m2]}" 2>&1 | cut -c1-200 >&2 || true
state=$(m2_state)
host_run m2 systemctl status --no-pager --lines=0 etcd-agent 2>/dev/null |
  grep -E 'Active:|Status:' | sed 's/^/m2| /' >&2 || true
journal=$(host_run m2 journalctl -u etcd-agent --no-pager -o cat)
grep -E 'permanently removed|must be removed' <<<"$journal" | tail -n 2 |
  sed 's/^/m2| journal: /' >&2 || true
grep -F 'the member has been permanently removed from the cluster' <<<"$journal" >/dev/null ||
  die "m2: etcd did not find out that its member was removed (journalctl -u etcd-agent)"
# Whatever the agent says, the removed member never comes back into the cluster by itself and
# the cluster is undisturbed.
! grep -E ', (running|learner),' <<<"$state" || die "m2's removed member runs again: $state"
[ "$(voters)" = m1,m3,m4 ] || die "voters changed after m2 came back: '$(voters)'"
show fleet member list >&2
show fleet status >&2
# How many lines etcd wrote after saying so, per run of it: the agent sees its last 20 lines.
after=$(awk '/permanently removed from the cluster/ { n = 0; on = 1; next }
             on && /restarting in|not restarting/ { printf "%d ", n; on = 0; next }
             on { n++ }' <<<"$journal")
echo "m2: lines etcd logged after 'permanently removed from the cluster', per run: ${after:-?}" >&2
if grep -E ', removed,' <<<"$state" >/dev/null; then
  # The agent recognised the removal and says how to wipe it: do exactly what it says.
  wipe=$(grep -oE 'etcd-fleet agent wipe --host [0-9.:]+' <<<"$state") ||
    die "m2's agent reports its member as removed but names no wipe command: $state"
  echo "m2: the agent reports its member as removed and says: $wipe" >&2
  # shellcheck disable=SC2086 # the words of the command the agent printed
  show fleet ${wipe#etcd-fleet } >&2 || die "$wipe failed"
else
  echo "FINDING: m2's agent does not recognise its member as removed from the cluster (etcd says" \
    "so and exits 0); it reports: $state" >&2
  # Wiping it the etcd-fleet way: `member remove NAME` wipes a member on its agent when the
  # inventory still knows it.
  show fleet member remove m2 >"$HOSTS_DIR/remove.log" 2>&1 && remove_rc=0 || remove_rc=$?
  sed 's/^/  /' "$HOSTS_DIR/remove.log" >&2
  if [ "$remove_rc" != 0 ]; then
    echo "FINDING: after the replace, \`etcd-fleet member remove m2\` cannot wipe m2's stale" \
      "member (exit $remove_rc): the operator must follow the replace's hint by hand" >&2
    # The wipe the replace asked for, on m2: stop the agent, delete the member's data dir and
    # state.json, start it.
    show host_run m2 sh -ec 'systemctl stop etcd-agent; rm -rf /var/lib/etcd-agent/m2
      systemctl start etcd-agent' >&2
  fi
fi
# Either way the agent is then idle, waiting for a plan: ready for a new member.
m2_waits_for_plan() { fleet agent status --host "${ADDR[m2]}" | grep -F 'waiting for a bootstrap plan'; }
wait_for "m2: the wiped agent waits for a bootstrap plan" 30 m2_waits_for_plan
show fleet agent status --host "${ADDR[m2]}" >&2
[ "$(voters)" = m1,m3,m4 ] || die "voters changed while m2 was wiped: '$(voters)'"
# The wiped agent takes a new member: m2 joins again (learner, then promoted), with every key.
show fleet member add --host "${ADDR[m2]}" >&2 || die "member add --host ${ADDR[m2]} failed"
[ "$(voters)" = m1,m2,m3,m4 ] || die "expected voters m1,m2,m3,m4 after m2 joined, got '$(voters)'"
wait_for "m2's new member has every key" 30 m2_has_every_key
echo "m2 is a voter again, with all 11 keys on https://${ADDR[m2]}:2379" >&2
# etcd inherits NOTIFY_SOCKET from the agent and sends its own READY=1, which systemd refuses
# (NotifyAccess=main); harmless, but noise in every journal.
if grep -m 1 -F 'Got notification message from PID' <<<"$journal" | sed 's/^/m2| /' >&2
then
  echo "FINDING: etcd inherits NOTIFY_SOCKET from etcd-agent and notifies systemd itself" >&2
fi

step "6. systemd-analyze security etcd-agent.service (in m1)"
security=$(host_run m1 systemd-analyze security --no-pager etcd-agent.service 2>&1 || true)
grep -v '^✓' <<<"$security" | sed 's/^/m1| /' >&2
score=$(grep -E 'Overall exposure level for etcd-agent.service' <<<"$security") ||
  die "systemd-analyze security printed no exposure level"
echo "EXPOSURE: $score" >&2

echo "e2e: PASS in $(hosts_since "$T0") s" >&2
