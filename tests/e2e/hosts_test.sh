#!/usr/bin/env bash
# End to end, the way users meet the product, on separate hosts: seven systemd-booted test hosts
# (hosts.sh), each in a network namespace of its own (netns.sh: m1..m4 on 192.0.2.1-4, p1..p3 on
# 192.0.2.11-13, its own 127.0.0.1, no default route), the operator's machine in another
# (192.0.2.100), where etcd-fleet runs, and a discovery service in one more (192.0.2.200: a plain
# etcd serving etcd's v2 discovery protocol, as discovery.etcd.io does). `apt install etcd-agent`
# from the locally built apt repository on each host, with an agent.toml that names only the
# member and its address; p1..p3's also name a discovery URL, so their agents form a plaintext
# cluster by themselves at install, before the fleet has a CA. Then the fleet CA and an enrollment
# token; from the operator's namespace `etcd-fleet bootstrap --hosts 192.0.2.1,192.0.2.2,
# 192.0.2.3` (TLS by default: plaintext and certless clients refused), `systemctl status`, put/get
# through the inventory, `etcd-fleet certs rotate` while a client writes (no write may fail; every
# member serves new certificates for new keys, etcd not restarted); p1..p3 enrolled afterwards,
# their cluster adopted into an inventory of its own and converted by `etcd-fleet tls enable`
# while a client writes (no failed write, every acknowledged write readable after, the member list
# https only, plaintext and certless clients refused); power loss of m2 and `etcd-fleet member
# replace m2 --with 192.0.2.4` (m2's last snapshot fetched from the copy its agent pushed to the
# others before), m2 booting again, and `systemd-analyze security`. Nothing outside
# the namespaces ever talks to 192.0.2.x.
#
# Usage (as root): hosts_test.sh BUILD_DIR. Exit 77 (skipped) without root, systemd-nspawn or
# network namespaces. Every wait is bounded; every host is torn down by its recorded PIDs on exit,
# also on failure, and the namespaces are deleted. Environment: E2E_PACKAGE_SCRIPT (default
# scripts/package.sh BUILD_DIR OUT_DIR). Lines starting with FINDING: report behaviour that works
# but should be better; EXPOSURE: is systemd-analyze's score of the shipped unit; ROTATE: and
# TLS-ENABLE: the duration of the certificate rotation and of the TLS conversion, and the write
# counts of the client that wrote meanwhile.
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

NAMES=(m1 m2 m3 m4 p1 p2 p3)
# The hosts of the plaintext cluster (step 4).
PLAIN=(p1 p2 p3)
# mN is on 192.0.2.N, pN on 192.0.2.(10+N), each in a namespace of its own; the operator
# (etcd-fleet, etcdctl) in "op", the discovery service in "disco".
declare -A ADDR INDEX
for i in 1 2 3 4; do INDEX[m$i]=$i; done
for i in 1 2 3; do INDEX[p$i]=$((10 + i)); done
for name in "${NAMES[@]}"; do ADDR[$name]=192.0.2.${INDEX[$name]}; done
OP_INDEX=100
DISCOVERY_INDEX=200
DISCOVERY="http://192.0.2.$DISCOVERY_INDEX:2379"
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
  [ ! -s "$WRITES_LOG" ] ||
    grep -m 10 -E '^(failed|retried) ' "$WRITES_LOG" | sed 's/^/writes| /' >&2 || true
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
# Neither a plaintext client nor a TLS client without a certificate gets an answer from the
# members of hosts NAME...: etcdctl on http://, and on https:// with the fleet CA but no
# certificate. One etcdctl for all of them each time: its client dials every endpoint given and
# answers as soon as any one of them serves it.
refuses_plaintext_and_certless() {
  local name plain="" tls=""
  for name in "$@"; do
    plain+=${plain:+,}http://${ADDR[$name]}:2379
    tls+=${tls:+,}https://${ADDR[$name]}:2379
  done
  ! netns_run op etcdctl --endpoints "$plain" --dial-timeout 2s --command-timeout 3s \
    get k >/dev/null 2>&1 || die "a member of $* answered a plaintext client ($plain)"
  ! netns_run op etcdctl --endpoints "$tls" --cacert "$PKI/ca.crt" --dial-timeout 2s \
    --command-timeout 3s get k >/dev/null 2>&1 ||
    die "a member of $* answered a client without a certificate ($tls)"
}

# The client of the certificate rotation (step 3) and of the TLS conversion (step 4), in the
# background: `etcd-fleet put PREFIX/NNNNN vN` from the operator's namespace through an inventory,
# a process (so a TLS handshake, or a plaintext connection) per write. Bounded: at most WRITES_MAX
# writes in WRITES_SECONDS seconds, each attempt ended by its --dial-timeout/--command-timeout or
# else killed after 20 s; it stops between two writes once writes.stop exists or the work dir is
# gone (the teardown). A write is tried at most WRITES_ATTEMPTS times, again only after etcd-fleet
# said the member it had sent the write to became unavailable (a member that stopped under it);
# any other failure, or the last attempt's, is final and counted. One line per attempt in
# WRITES_LOG: "ok KEY VALUE MS", "retried KEY VALUE MS: exit N: what etcd-fleet said" or "failed
# KEY VALUE MS: exit N: ...".
WRITES_MAX=3000
WRITES_SECONDS=300
WRITER_PID=""
WRITES_LOG=""
WRITES_PREFIX=""
WRITES_ATTEMPTS=1
WRITES_FLEET=()
write_loop() {
  trap - ERR
  set +e
  local i key out rc t0 attempt result deadline=$((SECONDS + WRITES_SECONDS)) FLEET_TIMEOUT=20
  for ((i = 0; i < WRITES_MAX && SECONDS < deadline; i++)); do
    if [ ! -d "$HOSTS_DIR" ] || [ -e "$HOSTS_DIR/writes.stop" ]; then break; fi
    printf -v key '%s/%05d' "$WRITES_PREFIX" "$i"
    for ((attempt = 1; attempt <= WRITES_ATTEMPTS; attempt++)); do
      t0=${EPOCHREALTIME/[.,]/}
      out=$(fleet "${WRITES_FLEET[@]}" --dial-timeout 3s --command-timeout 10s put "$key" "v$i" 2>&1)
      rc=$?
      if [ "$rc" = 0 ] && [ "$out" = OK ]; then
        echo "ok $key v$i $(((${EPOCHREALTIME/[.,]/} - t0) / 1000))"
        break
      fi
      result=failed
      if ((attempt < WRITES_ATTEMPTS)) && [[ $out == *" is unavailable; "* ]]; then
        result=retried
      fi
      echo "$result $key v$i $(((${EPOCHREALTIME/[.,]/} - t0) / 1000)): exit $rc: ${out//$'\n'/ }"
      [ "$result" = retried ] || break
    done
  done
}
# writes_start PREFIX ATTEMPTS [ETCD-FLEET FLAGS...]: the client, writing through the inventory
# the flags name (--fleet FILE), or the default one.
writes_start() {
  WRITES_PREFIX=$1
  WRITES_ATTEMPTS=$2
  WRITES_FLEET=("${@:3}")
  WRITES_LOG=$HOSTS_DIR/writes-$1.log
  rm -f "$HOSTS_DIR/writes.stop"
  : >"$WRITES_LOG"
  write_loop >>"$WRITES_LOG" 2>&1 &
  WRITER_PID=$!
}
# Lets the write in flight finish (at most 20 s per attempt), then the loop ends.
writes_stop() {
  [ -n "$WRITER_PID" ] || return 0
  touch "$HOSTS_DIR/writes.stop" 2>/dev/null || true
  wait "$WRITER_PID" || true
  WRITER_PID=""
}
HOSTS_TEARDOWN_HOOKS+=(writes_stop)
writes_count() { grep -c "^$1 " "$WRITES_LOG" || true; }
writes_acked() { writes_count ok; }
writes_reached() { [ "$(writes_acked)" -ge "$1" ]; }
# writes_during NAME CMD...: runs CMD (stdout to NAME.out, stderr to NAME.err in the work dir)
# while the client started by writes_start writes: once 10 writes are acknowledged, and until 10
# more are after CMD ended; then the client stops. Shows CMD's output; sets RUN_RC (CMD's exit
# code), RUN_SECONDS and WRITES_DURING (writes acknowledged while it ran).
writes_during() {
  local name=$1 before t0
  shift
  wait_for "the client's first 10 writes are acknowledged" 60 writes_reached 10
  before=$(writes_acked)
  t0=$(date +%s.%N)
  show "$@" >"$HOSTS_DIR/$name.out" 2>"$HOSTS_DIR/$name.err" && RUN_RC=0 || RUN_RC=$?
  RUN_SECONDS=$(hosts_since "$t0")
  WRITES_DURING=$(($(writes_acked) - before))
  sed 's/^/  /' "$HOSTS_DIR/$name.err" >&2
  cat "$HOSTS_DIR/$name.out" >&2
  wait_for "10 more writes after $name" 60 writes_reached $((before + WRITES_DURING + 10))
  writes_stop
}
# No write failed, some were acknowledged while the command ran, and every acknowledged write,
# and nothing else under the client's prefix, reads back through each client URL given (a
# linearizable read: that member's certificate on the handshake, the cluster's latest state).
# Sets WRITES_SUMMARY for the report line: "N acknowledged, 0 failed, R attempts retried, D
# acknowledged while it ran; slowest write S ms".
writes_check() {
  local url want got failed
  failed=$(writes_count failed)
  [ "$failed" = 0 ] || die "$failed of the client's writes ($WRITES_PREFIX/NNNNN) failed"
  [ "$WRITES_DURING" -gt 0 ] || die "none of the client's writes was acknowledged while it ran"
  want=$(awk '$1 == "ok" { print $2 "\t" $3 }' "$WRITES_LOG")
  for url in "$@"; do
    got=$(fleet "${WRITES_FLEET[@]}" --endpoints "$url" get "$WRITES_PREFIX/" --prefix | paste - -) ||
      die "$url: reading the written keys failed"
    [ "$got" = "$want" ] ||
      die "$url: the keys read back differ from the $(writes_acked) acknowledged writes:" \
        "$(diff <(echo "$want") <(echo "$got") | head -n 5 | paste -sd' ')"
  done
  WRITES_SUMMARY="$(writes_acked) acknowledged, 0 failed, $(writes_count retried) attempts retried,"
  WRITES_SUMMARY+=" $WRITES_DURING acknowledged while it ran; slowest write $(awk \
    '$1 == "ok" && $4 > max { max = $4 } END { print max + 0 }' "$WRITES_LOG") ms"
}

# Within ctest's TIMEOUT (900 s), so that the teardown always runs.
hosts_init "${E2E_DEADLINE:-840}"
netns_init || die "creating the test network failed"
for name in "${NAMES[@]}"; do netns_add "$name" "${INDEX[$name]}" || die "netns_add $name failed"; done
netns_add op "$OP_INDEX" || die "netns_add op failed"
netns_add disco "$DISCOVERY_INDEX" || die "netns_add disco failed"
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

# The discovery service that p1..p3 form their cluster with, as an operator whose fleet has no
# CA yet has one (discovery.etcd.io, or an etcd of their own): a plain etcd serving its v2 keys
# API, in a namespace of its own. This is how a plaintext cluster comes to be on separate hosts:
# their agents serve no plaintext API (agent.insecure only on loopback), so etcd-fleet cannot
# bootstrap them before enrollment, and an enrolled fleet forms TLS clusters (its coordinators
# hand out etcd-agent:// URLs); an agent.toml with an http:// discovery URL is the way left, and
# the agent follows it while it waits for its enrollment token.
DISCOVERY_PID=""
DISCOVERY_DATA=""
discovery_stop() {
  [ -z "$DISCOVERY_PID" ] || netns_stop_pid "$DISCOVERY_PID"
  DISCOVERY_PID=""
  [ -z "$DISCOVERY_DATA" ] || rm -rf "$DISCOVERY_DATA"
  DISCOVERY_DATA=""
}
HOSTS_TEARDOWN_HOOKS+=(discovery_stop)

step "0. a discovery service on $DISCOVERY (etcd with the v2 API) and a discovery URL for 3 members"
DISCOVERY_DATA=$(mktemp -d /tmp/etcd-agent-e2e-discovery.XXXXXX)
netns_spawn disco "$DISCOVERY_DATA/etcd.log" etcd --name discovery --enable-v2 \
  --data-dir "$DISCOVERY_DATA/data" --listen-client-urls "$DISCOVERY" \
  --advertise-client-urls "$DISCOVERY" --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster discovery=http://127.0.0.1:2380
DISCOVERY_PID=$NETNS_PID
wait_for "the discovery service answers" 30 netns_run op curl -fsS "$DISCOVERY/health"
# etcd's own recipe for a discovery URL on an etcd of one's own: a new key directory holding the
# cluster's size.
DISCOVERY_URL=$DISCOVERY/v2/keys/discovery/$(openssl rand -hex 16)
show netns_run op curl -fsS -X PUT "$DISCOVERY_URL/_config/size" -d value=3 >&2
echo >&2

step "0. boot ${NAMES[*]} in parallel (one shared lower layer: /)"
HOSTS_NSPAWN_ARGS=("--bind-ro=$HOSTS_DIR/dist/apt:/debs")
# m4 boots with Debian's etcd.service as the machine has it (enabled by etcd-server: a member of
# its own on its 127.0.0.1:2379): the package must stop and disable it.
host_start m4 --unmask etcd.service
for name in "${NAMES[@]}"; do [ "$name" = m4 ] || host_start "$name"; done
for name in "${NAMES[@]}"; do host_wait "$name"; done

# The host-specific agent.toml is in place before the package arrives, as configuration
# management would lay it down: the agent that the package's postinst starts then listens on the
# host's own address at once (agent.api_listen follows member.advertise_host). dpkg is told to keep an existing config file (force-confold, the
# non-interactive answer to its conffile question) and puts the package's version beside it as
# agent.toml.dpkg-dist. Only the local repository is configured: the host's other apt sources are
# moved aside inside its overlay, so nothing reaches the network. The machine image may carry
# Docker's /usr/sbin/policy-rc.d ("exit 101": start no service while building an image); a real
# host has none, and with it the postinst could not start etcd-agent: it goes, in the overlay.
# p1..p3's agent.toml also names their cluster and the discovery URL: their agents form it as
# soon as the package starts them.
install_host() {
  local name=$1 addr=${ADDR[$1]} formed_by=""
  [[ $name != p* ]] || formed_by="
# The cluster this member forms with its peers, by itself, through a discovery service.
[cluster]
token = \"plain\"
[bootstrap]
discovery = \"$DISCOVERY_URL\""
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
advertise_host = \"$addr\"$formed_by
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

step "0. p1..p3 formed a plaintext cluster by themselves (discovery), before the fleet has a CA"
PLAIN_HTTP=http://${ADDR[p1]}:2379,http://${ADDR[p2]}:2379,http://${ADDR[p3]}:2379
plain_etcdctl() {
  netns_run op etcdctl --endpoints "$PLAIN_HTTP" --dial-timeout 2s --command-timeout 5s "$@"
}
plain_formed() { [ "$(plain_etcdctl member list | grep -cE ', started, p[1-3], http://')" = 3 ]; }
wait_for "p1..p3 formed a cluster of 3 started members on http://" 60 plain_formed
show plain_etcdctl member list >&2
# Plaintext: anyone on the network reads and writes it, with no certificate and no password.
show plain_etcdctl put plain/before-tls v0 >&2
# Formed: nothing asks the discovery service again (a member restarts from its data).
discovery_stop

# etcd-agent enroll TOKEN in each host NAME (the agent takes it without a restart), then one
# `etcd-fleet enroll` for all of them (bootstrap would too); each agent answers over mutual TLS
# afterwards.
enroll_hosts() {
  local name hosts=""
  for name in "$@"; do
    host_run "$name" etcd-agent enroll "$TOKEN" >/dev/null || die "$name: etcd-agent enroll failed"
    [ "$(host_run "$name" stat -c '%a %U' /etc/etcd-agent/enroll.token)" = "600 etcd-agent" ] ||
      die "$name: enroll.token is $(host_run "$name" stat -c '%a %U' /etc/etcd-agent/enroll.token), not 600 etcd-agent"
    hosts+=${hosts:+,}${ADDR[$name]}
  done
  wait_for "$* enrolled" 30 fleet enroll --hosts "$hosts"
  for name in "$@"; do
    wait_for "$name: the agent answers over mutual TLS on ${ADDR[$name]}:2378" 30 \
      fleet agent status --host "${ADDR[$name]}"
  done
}

step "0. the fleet CA and an enrollment token; etcd-agent enroll TOKEN in m1..m4"
show fleet ca init >&2 || die "etcd-fleet ca init failed"
PKI=$HOSTS_DIR/operator/etcd-fleet/pki
TOKEN=$(fleet token create --ttl 1h) || die "etcd-fleet token create failed"
enroll_hosts m1 m2 m3 m4
show fleet agent status --host "${ADDR[m1]}" >&2

step "1. etcd-fleet bootstrap --hosts ${ADDR[m1]},${ADDR[m2]},${ADDR[m3]}"
show fleet bootstrap --hosts "${ADDR[m1]},${ADDR[m2]},${ADDR[m3]}" >&2 ||
  die "etcd-fleet bootstrap failed"
show fleet member list -w table >&2
[ "$(voters)" = m1,m2,m3 ] || die "expected voters m1,m2,m3, got '$(voters)'"
show fleet endpoint health >&2 || die "not every member is healthy after the bootstrap"
# TLS by default: https members that require a client certificate of the fleet CA.
fleet member list | grep -q "https://${ADDR[m1]}:2380" || die "m1's peer URL is not https"
refuses_plaintext_and_certless m1 m2 m3

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
# The client: no retries (no member restarts); its last 10 writes go over new handshakes with the
# new certificates only.
writes_start rotate 1
writes_during rotate fleet certs rotate
[ "$RUN_RC" = 0 ] || die "etcd-fleet certs rotate exited $RUN_RC"
writes_check "https://${ADDR[m1]}:2379" "https://${ADDR[m2]}:2379" "https://${ADDR[m3]}:2379"
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
echo "ROTATE: certs rotate took $RUN_SECONDS s; writes: $WRITES_SUMMARY" >&2

step "4. p1..p3's plaintext cluster: enroll, adopt, etcd-fleet tls enable while a client writes"
# The operator's inventory of this cluster, beside the first: the same fleet CA (pki/) for both.
PLAIN_FLEET=$HOSTS_DIR/operator/etcd-fleet/plain.toml
plain_fleet() { fleet --fleet "$PLAIN_FLEET" "$@"; }
enroll_hosts p1 p2 p3
# The agents hold the members of one cluster already: bootstrap adopts it, changing nothing.
show plain_fleet bootstrap --hosts "${ADDR[p1]},${ADDR[p2]},${ADDR[p3]}" 2>&1 |
  tee "$HOSTS_DIR/adopt.log" >&2 || die "etcd-fleet bootstrap (adopting p1..p3's cluster) failed"
grep -q 'already holds a member of cluster "plain": adopting it' "$HOSTS_DIR/adopt.log" ||
  die "bootstrap did not adopt p1..p3's cluster \"plain\""
show plain_fleet member list >&2
[ "$(plain_fleet member list | grep -c ', http://[0-9.]*:2380, http://')" = 3 ] ||
  die "p1..p3's members are not plaintext before tls enable"
# A member restarts under the client twice (peer certificate, then https only): a write it had
# taken may come back unavailable, and the client sends it again, as any client of a cluster
# whose members restart does (at most 3 attempts; every other failure is final).
writes_start tls 3 --fleet "$PLAIN_FLEET"
writes_during tls-enable plain_fleet tls enable
[ "$RUN_RC" = 0 ] || die "etcd-fleet tls enable exited $RUN_RC"
grep -qF 'cluster "plain" serves TLS only now: 3 members' "$HOSTS_DIR/tls-enable.out" ||
  die "tls enable did not say that the cluster serves TLS only now"
writes_check "https://${ADDR[p1]}:2379" "https://${ADDR[p2]}:2379" "https://${ADDR[p3]}:2379"
# TLS only now: https:// in the member list and the inventory, nothing answers plaintext or a
# client without a certificate, and the data written in plaintext before is all there.
show plain_fleet member list >&2
members=$(plain_fleet member list)
if [ "$(grep -c . <<<"$members")" != 3 ] || grep -q 'http://' <<<"$members" ||
  [ "$(grep -c ', started, p[1-3], https://[0-9.]*:2380, https://' <<<"$members")" != 3 ]; then
  die "the member list is not three started members on https:// only after tls enable"
fi
! grep -n 'http://' "$PLAIN_FLEET" || die "the inventory still names http:// URLs"
refuses_plaintext_and_certless "${PLAIN[@]}"
[ "$(plain_fleet get plain/before-tls --print-value-only)" = v0 ] ||
  die "the key written in plaintext before the conversion is gone"
show plain_fleet endpoint health >&2 || die "not every member is healthy after tls enable"
echo "TLS-ENABLE: tls enable took $RUN_SECONDS s; writes: $WRITES_SUMMARY" >&2
# Done with p1..p3: cut off now (as the teardown would, but at once), so that the steps left run
# on a machine no busier than before.
KILL_PIDS=()
for name in "${PLAIN[@]}"; do
  host_kill "$name" &
  KILL_PIDS+=($!)
done
wait "${KILL_PIDS[@]}"

step "5. m2's agent takes a snapshot and copies it to the agents of m1 and m3"
# The snapshot the agent keeps (as a scheduled one), fetched to the operator's machine too; the
# agent pushes it to the other agents of the cluster over mutual TLS (they found each other through
# etcd), which verify and keep it.
show fleet snapshot save --host m2 "$HOSTS_DIR/m2-saved.db" >&2 || die "snapshot save --host m2 failed"
M2_SNAPSHOT=$(fleet snapshot list --host m2 -w json | grep -o '"name":"m2-[0-9TZ-]*\.db"' |
  head -n 1 | cut -d'"' -f4)
[ -n "$M2_SNAPSHOT" ] || die "m2's agent lists no snapshot after snapshot save --host m2"
# The agents of m1 and m3 both list a copy of it.
m2_copied() {
  local listed
  listed=$(fleet snapshot list)
  grep -q "$M2_SNAPSHOT .*copy, verified (kept by m1)" <<<"$listed" &&
    grep -q "$M2_SNAPSHOT .*copy, verified (kept by m3)" <<<"$listed"
}
wait_for "m2's snapshot copied to the agents of m1 and m3" 60 m2_copied
show fleet snapshot list >&2

step "5. power m2 off (systemctl poweroff inside it); write while it is down"
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
# m2's snapshot outlived its host: fetched from a copy, byte for byte the file m2's agent took.
show fleet snapshot fetch "$M2_SNAPSHOT" "$HOSTS_DIR/m2-from-copy.db" >&2 ||
  die "m2's snapshot could not be fetched from a copy after m2's poweroff"
cmp "$HOSTS_DIR/m2-saved.db" "$HOSTS_DIR/m2-from-copy.db" ||
  die "the copy of m2's snapshot differs from the file m2's agent took"
show fleet snapshot status "$HOSTS_DIR/m2-from-copy.db" -w table >&2 ||
  die "snapshot status refuses the copy of m2's snapshot"

step "5. etcd-fleet member replace m2 --with ${ADDR[m4]}"
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
m4_votes() { fleet status | grep -E '\| +m4 \|[^|]+\| +(leader|follower)\*? \| +running \|'; }
wait_for "etcd-fleet status shows m4 as a running voter" 30 m4_votes
show fleet status >&2

step "6. boot m2 again: its agent starts at boot; its member was removed by the replace"
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

step "7. systemd-analyze security etcd-agent.service (in m1)"
security=$(host_run m1 systemd-analyze security --no-pager etcd-agent.service 2>&1 || true)
grep -v '^✓' <<<"$security" | sed 's/^/m1| /' >&2
score=$(grep -E 'Overall exposure level for etcd-agent.service' <<<"$security") ||
  die "systemd-analyze security printed no exposure level"
echo "EXPOSURE: $score" >&2

echo "e2e: PASS in $(hosts_since "$T0") s" >&2
