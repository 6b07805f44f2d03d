#!/usr/bin/env bash
# The fleet network of netns.sh, checked for what real separate hosts guarantee:
#   1. three raw etcd members in the host namespaces h1-h3 (192.0.2.1-3) form a cluster, and
#      etcdctl in the operator's namespace (192.0.2.100) puts and gets keys through each member;
#   2. every namespace has a 127.0.0.1 of its own: h1's etcd also listens on 127.0.0.1:2379, which
#      h1 reaches and h2 and the client do not; no namespace has a default route; the machine's
#      namespace has no route into the network (its route for each host's address is not one of
#      the run's interfaces: it never sends anything there);
#   3. two systemd-booted hosts (hosts.sh, HOSTS_NETWORK=netns) in h4 and h5 reach each other's
#      etcd on 192.0.2.4/5 over TCP, and the raw members' network as well;
#   4. the teardown leaves no namespace, veth, bridge or process of the run.
# Before all that, netns_init's sweep removes a namespace of a run whose PID is gone and keeps one
# whose PID runs.
#
# Usage (as root): netns_test.sh. Exit 77 (skipped) without root, network namespaces,
# systemd-nspawn, etcd or curl. Every wait is bounded; on exit (also on failure) every host and
# every process of the run is ended by its recorded PID and the namespaces are deleted.
# Environment: E2E_DEADLINE (default 240 s: the watchdog that cuts everything off).
set -eEuo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, overlay mounts, systemd-nspawn)"
for tool in ip nsenter etcd etcdctl curl systemd-nspawn; do
  command -v "$tool" >/dev/null || skip "$tool is missing (iproute2, util-linux, etcd-server," \
    "etcd-client, curl, systemd-container)"
done
unshare --net true 2>/dev/null || skip "cannot create network namespaces here (unshare --net)"

# shellcheck source=hosts.sh
source "$SRC/tests/e2e/hosts.sh"
# shellcheck source=netns.sh
source "$SRC/tests/e2e/netns.sh"

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
  local f
  [ -n "$ETCD_DIR" ] || exit 1
  for f in "$ETCD_DIR"/*.log; do
    [ -e "$f" ] && tail -n 5 "$f" | cut -c1-300 | sed "s/^/$(basename "$f" .log)| /" >&2
  done
  exit 1
}
trap 'die "line $LINENO: $BASH_COMMAND"' ERR
# Retries CMD (its output discarded) every 0.2 s until it succeeds, at most SECONDS seconds.
wait_for() {
  local what=$1 seconds=$2 i t0
  shift 2
  t0=$(date +%s.%N)
  for ((i = 0; i < seconds * 5; i++)); do
    if "$@" >/dev/null 2>&1; then
      hosts_log "waited $(hosts_since "$t0") s: $what"
      return 0
    fi
    sleep 0.2
  done
  die "$what: not within ${seconds}s"
}
# etcdctl in namespace NS, with bounded dials and commands, never the caller's ETCDCTL_* setup.
ctl() {
  local ns=$1
  shift
  netns_run "$ns" env -u ETCDCTL_ENDPOINTS -u ETCDCTL_API etcdctl --dial-timeout=2s \
    --command-timeout=5s "$@"
}
# A TCP connection from namespace NS to ADDR:PORT; prints why it failed.
tcp_connect() { netns_run "$1" bash -c "exec 3<>/dev/tcp/$2/$3" 2>&1; }

# Within ctest's TIMEOUT (300 s), so that the teardown always runs.
hosts_init "${E2E_DEADLINE:-240}"
HOSTS_NETWORK=netns
ETCD_DIR=""

# The sweep of netns_init: a namespace named for a run whose shell is gone goes, one of a run
# that still runs stays. The two stand-ins are made (and removed) here, by name.
sleep 300 &
LIVE_PID=$!
(exit 0) &
DEAD_PID=$!
wait "$DEAD_PID"
[ ! -d "/proc/$DEAD_PID" ] || die "PID $DEAD_PID was reused at once; run the test again"
SWEEP_DEAD="etf-$DEAD_PID-sweep" SWEEP_LIVE="etf-$LIVE_PID-sweep"
remove_sweep_standins() {
  local name
  for name in "$SWEEP_DEAD" "$SWEEP_LIVE"; do
    [ ! -e "/run/netns/$name" ] || ip netns del "$name" || true
  done
  kill -TERM "$LIVE_PID" 2>/dev/null || true
  wait "$LIVE_PID" 2>/dev/null || true
}
HOSTS_TEARDOWN_HOOKS+=(remove_sweep_standins)
ip netns add "$SWEEP_DEAD"
ip netns add "$SWEEP_LIVE"

netns_init || die "creating the bridge namespace failed"
ETCD_DIR="$NETNS_DIR/etcd"
mkdir -p "$ETCD_DIR"
[ ! -e "/run/netns/$SWEEP_DEAD" ] || die "the sweep left $SWEEP_DEAD (its run's PID is gone)"
[ -e "/run/netns/$SWEEP_LIVE" ] || die "the sweep removed $SWEEP_LIVE (its run's PID still runs)"
remove_sweep_standins
hosts_log "sweep: removed $SWEEP_DEAD, kept $SWEEP_LIVE of a live PID"

step "0. the network: h1-h5 on 192.0.2.1-5, the client on 192.0.2.100, one bridge"
for i in 1 2 3 4 5; do netns_add "h$i" "$i" || die "netns_add h$i failed"; done
netns_add client 100 || die "netns_add client failed"
ip netns list | grep "^$NETNS_PREFIX-" | sed 's/^/  /' >&2
# The booted hosts start now and come up while the raw members form their cluster.
host_start h4
host_start h5

step "1. three raw etcd members in h1-h3, etcdctl in the client namespace"
peers=""
for i in 1 2 3; do peers+="${peers:+,}h$i=http://$(netns_addr "h$i"):2380"; done
declare -A ETCD_PID
for i in 1 2 3; do
  addr=$(netns_addr "h$i")
  clients="http://$addr:2379"
  # h1's member listens on its namespace's loopback too: step 2 shows that only h1 has it.
  [ "$i" != 1 ] || clients+=",http://127.0.0.1:2379"
  netns_spawn "h$i" "$ETCD_DIR/h$i.log" etcd --name "h$i" --data-dir "$ETCD_DIR/h$i.data" \
    --listen-peer-urls "http://$addr:2380" --initial-advertise-peer-urls "http://$addr:2380" \
    --listen-client-urls "$clients" --advertise-client-urls "http://$addr:2379" \
    --initial-cluster "$peers" --initial-cluster-state new --initial-cluster-token "$NETNS_PREFIX"
  ETCD_PID[h$i]=$NETNS_PID
done
ENDPOINTS="http://192.0.2.1:2379,http://192.0.2.2:2379,http://192.0.2.3:2379"
wait_for "all three members healthy, seen from the client" 60 \
  ctl client --endpoints="$ENDPOINTS" endpoint health
ctl client --endpoints="$ENDPOINTS" member list | sed 's/^/  /' >&2
[ "$(ctl client --endpoints="$ENDPOINTS" member list | grep -c 'http://192\.0\.2\.[123]:2380')" = 3 ] ||
  die "member list does not show the three members on 192.0.2.1-3"
for i in 1 2 3; do
  ctl client --endpoints="http://192.0.2.$i:2379" put "netns/k$i" "v$i" >/dev/null
done
for i in 1 2 3; do
  for j in 1 2 3; do
    got=$(ctl client --endpoints="http://192.0.2.$j:2379" get "netns/k$i" --print-value-only)
    [ "$got" = "v$i" ] || die "netns/k$i (put through h$i) read through h$j: '$got', not 'v$i'"
  done
done
hosts_log "netns/k1-k3, each put through its own member, read back through all three"

step "2. each namespace has its own 127.0.0.1; no default route; nothing from the machine"
ctl h1 --endpoints=http://127.0.0.1:2379 endpoint health >&2 ||
  die "h1 does not reach its own etcd on 127.0.0.1:2379"
for ns in h2 client; do
  if out=$(tcp_connect "$ns" 127.0.0.1 2379); then
    die "$ns connected to 127.0.0.1:2379: h1's loopback is not h1's alone"
  fi
  grep -q "Connection refused" <<<"$out" || die "$ns to 127.0.0.1:2379 failed otherwise: $out"
  ! ctl "$ns" --endpoints=http://127.0.0.1:2379 --command-timeout=1s endpoint health \
    >/dev/null 2>&1 ||
    die "etcdctl in $ns reached an etcd on 127.0.0.1:2379"
  hosts_log "$ns -> 127.0.0.1:2379: connection refused (h1's etcd listens on h1's loopback only)"
done
# Route look-ups only: nothing is sent. 198.51.100.1 (TEST-NET-2) stands for any address
# outside the network.
for ns in h1 h2 h3 h4 h5 client; do
  [ -z "$(netns_run "$ns" ip route show default)" ] || die "$ns has a default route"
  if out=$(netns_run "$ns" ip route get 198.51.100.1 2>&1); then
    die "$ns has a route out of the network: $out"
  fi
  grep -q "unreachable" <<<"$out" || die "$ns: unexpected answer for 198.51.100.1: $out"
done
hosts_log "h1-h5 and the client: no default route, 198.51.100.1 is unreachable from each"
# The machine's own namespace never gets a route into the network: every interface of the run
# lives in the run's namespaces. (The machine may well have a route to 192.0.2.0/24 of its own,
# a network of its own: then the look-up names that interface, which must not be the run's.)
for addr in 192.0.2.1 192.0.2.2 192.0.2.3 192.0.2.4 192.0.2.5 192.0.2.100; do
  if route=$(ip route get "$addr" 2>&1); then
    dev=$(awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }' <<<"$route")
    [ -n "$dev" ] || die "the machine's route to $addr names no interface: $route"
    if ip -o link show dev "$dev" | grep -q "link-netns $NETNS_PREFIX-"; then
      die "the machine reaches $addr through $dev, a veth into this run's network"
    fi
    ip -o link show | grep -q "link-netns $NETNS_PREFIX-" &&
      die "the machine's namespace holds an interface of this run: $(ip -o link show |
        grep "link-netns $NETNS_PREFIX-")"
    hosts_log "machine -> $addr: no route into this run's network (its own: dev $dev)"
  else
    hosts_log "machine -> $addr: no route ($route)"
  fi
done

step "3. two systemd-booted hosts in h4 and h5 (HOSTS_NETWORK=netns) reach each other"
host_wait h4
host_wait h5
for name in h4 h5; do
  addr=$(netns_addr "$name")
  # The host's systemd is in the namespace made for it (not the machine's, nor another one).
  [ "$(readlink "/proc/$(host_pid "$name")/ns/net")" = "$(netns_id "$(netns_name "$name")")" ] ||
    die "host $name does not run in the network namespace $(netns_name "$name")"
  host_run "$name" ip -o -4 addr show dev eth0 | grep -q "inet $addr/24" ||
    die "host $name has no eth0 with $addr: $(host_run "$name" ip -o addr)"
  # A service of the host's own systemd, on the host's address only.
  host_run "$name" systemd-run --quiet --unit=netns-probe --collect /usr/bin/etcd \
    --name "$name" --data-dir /var/lib/netns-probe --listen-client-urls "http://$addr:2379" \
    --advertise-client-urls "http://$addr:2379" --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$name=http://127.0.0.1:2380"
done
for pair in h4:h5 h5:h4; do
  from=${pair%:*} to=${pair#*:}
  addr=$(netns_addr "$to")
  wait_for "$from reaches $to's etcd on $addr:2379 (curl)" 60 \
    host_run "$from" curl -sf --max-time 3 "http://$addr:2379/health"
  host_run "$from" bash -c "exec 3<>/dev/tcp/$addr/2379" ||
    die "$from: no TCP connection to $addr:2379"
  host_run "$from" curl -sf --max-time 3 "http://$addr:2379/health" | grep -q '"health":"true"' ||
    die "$from: $to's etcd is not healthy"
done
host_run h4 curl -sf --max-time 3 http://192.0.2.1:2379/health | grep -q '"health":"true"' ||
  die "host h4 does not reach the raw member h1 on 192.0.2.1:2379"
hosts_log "h4 <-> h5 over 192.0.2.4/5, and h4 -> h1's raw member: TCP and HTTP"
host_run h4 curl -sf --max-time 3 http://127.0.0.1:2379/health >/dev/null 2>&1 &&
  die "host h4 reached an etcd on 127.0.0.1:2379: h1's loopback leaked"
hosts_log "host h4 -> 127.0.0.1:2379: nothing (its loopback is its own)"

step "4. teardown: no namespace, veth, bridge or process of the run is left"
host_kill h4
host_kill h5
netns_teardown
leftovers=$(netns_leftovers)
[ -z "$leftovers" ] || die "left after the teardown: $leftovers"
for name in h1 h2 h3; do
  [ ! -e "/proc/${ETCD_PID[$name]}" ] || die "etcd of $name (PID ${ETCD_PID[$name]}) still runs"
done
ip netns list | grep -q "^$NETNS_PREFIX-" && die "ip netns list still shows $NETNS_PREFIX-*"
hosts_log "no namespace $NETNS_PREFIX-*, no veth, no holder of the run's namespaces, no etcd"
step "done"
hosts_log "netns_test passed in $(hosts_since "$T0") s"
