# shellcheck shell=bash
# A fleet network for tests: hosts with network stacks of their own, as real machines have (each
# its own 127.0.0.1; a service for other hosts must listen on the host's own address).
#
#   namespace <prefix>-sw      a bridge, br0, and one veth end per host (v<index>)
#   namespace <prefix>-<NAME>  per host: lo up, eth0 = 192.0.2.<index>/24 (TEST-NET-1) on br0
#
# No namespace has a default route and nothing of this network is in the namespace the test
# starts in (the machine's): both ends of every veth pair are created inside namespaces of the
# run, so no packet to 192.0.2.x can leave the bridge, and the machine never sends one to it (it
# may itself be on a 192.0.2.0/24: never talk to those addresses from outside the namespaces).
# The operator's client (etcdctl, etcd-fleet) runs in a namespace of the network too.
#
# Source this file (after hosts.sh, when the test boots hosts), then:
#   netns_init                    sweep leftovers of dead runs, create the bridge namespace, and
#                                 arrange the teardown on exit (hosts.sh's, when it is loaded)
#   netns_add NAME INDEX          a host namespace on 192.0.2.INDEX (INDEX 1-254; NAME [a-z0-9],
#                                 at most 12 characters)
#   netns_addr NAME               its address (192.0.2.INDEX)
#   netns_path NAME               /run/netns/<prefix>-NAME (systemd-nspawn
#                                 --network-namespace-path; hosts.sh's HOSTS_NETWORK=netns)
#   netns_run NAME CMD...         run CMD in NAME's network namespace (only that namespace: the
#                                 file system, PIDs and environment are the test's)
#   netns_spawn NAME LOG CMD...   the same in the background (output to LOG); its PID is left in
#                                 NETNS_PID and ended by the teardown (call it from the test's
#                                 main shell, not from a subshell: the PID must be its child)
#   netns_teardown                end the spawned processes, delete this run's namespaces (with
#                                 them go their veths and the bridge); idempotent
#   netns_finish                  netns_teardown, then forget the record if nothing is left (what
#                                 runs on exit)
#   netns_leftovers               print what of this run still exists (nothing after a teardown)
# The names carry the run's prefix, etf-<PID of the test's shell>, so parallel runs never collide;
# every object is recorded before it is created, and the teardown removes exactly the recorded
# ones. Namespaces of runs whose shell is gone are swept by netns_init. Every wait is bounded.

NETNS_SUBNET=192.0.2
NETNS_PREFIX="etf-$$"
NETNS_SWITCH="$NETNS_PREFIX-sw"
NETNS_STOP_TIMEOUT=${NETNS_STOP_TIMEOUT:-10} # seconds from SIGTERM to SIGKILL in the teardown
NETNS_DIR=""
NETNS_PID=""

netns_log() { printf '[%s] netns: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

netns_name() { echo "$NETNS_PREFIX-$1"; }
netns_path() { echo "/run/netns/$NETNS_PREFIX-$1"; }

# The namespace's identity ("net:[inode]", as /proc/PID/ns/net reads), to tell processes and file
# descriptors in it from others.
netns_id() { echo "net:[$(stat -L -c %i "/run/netns/$1")]"; }

netns_addr() {
  local index
  index=$(cat "$NETNS_DIR/index.$1" 2>/dev/null) || {
    netns_log "no host $1 on this network"
    return 1
  }
  echo "$NETNS_SUBNET.$index"
}

# Records an object of the run before it is made (so a run killed half way still lists it), then
# its identity once it exists.
netns_record() { echo "$*" >>"$NETNS_DIR/created"; }

# Creates namespace FULL_NAME, loopback up, and records it with its identity.
netns_create() {
  local full=$1
  netns_record ns "$full"
  ip netns add "$full" || return 1
  netns_record id "$full" "$(netns_id "$full")"
  ip -n "$full" link set lo up
}

# Namespaces named etf-<PID>-...: those of a PID that no longer runs are left over from a run that
# could not tear down (SIGKILL), and those of our own PID from an earlier run with the same PID
# (we have made none yet). Processes still inside one keep it alive; they are reported, not
# killed: they are not ours.
netns_sweep() {
  local f name pid pids
  for f in /run/netns/etf-*; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    [[ $name =~ ^etf-([0-9]+)-[a-z0-9]+$ ]] || continue
    pid=${BASH_REMATCH[1]}
    if [ "$pid" != $$ ] && [ -d "/proc/$pid" ]; then continue; fi
    pids=$({ ip netns pids "$name" 2>/dev/null || true; } | paste -sd' ')
    netns_log "removing $name, left over from run $pid${pids:+ (processes still in it: $pids)}"
    ip netns del "$name" || netns_log "could not remove $name"
  done
}

netns_init() {
  if ! command -v ip >/dev/null; then
    netns_log "ip (iproute2) is missing"
    return 1
  fi
  NETNS_DIR=$(mktemp -d /tmp/etcd-agent-netns.XXXXXX)
  : >"$NETNS_DIR/created"
  # With hosts.sh, its teardown calls us once every host is down (a namespace is only gone once
  # no host holds it); until hosts_init installs that teardown, ours stands in.
  declare -F hosts_teardown >/dev/null && HOSTS_TEARDOWN_HOOKS+=(netns_finish)
  if ! declare -F hosts_teardown >/dev/null || [ -z "${HOSTS_DIR:-}" ]; then
    trap netns_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
  fi
  netns_sweep
  netns_create "$NETNS_SWITCH" || return 1
  ip -n "$NETNS_SWITCH" link add br0 type bridge &&
    ip -n "$NETNS_SWITCH" link set br0 up
}

netns_exit() {
  local rc=$?
  trap - EXIT INT TERM
  netns_finish
  exit "$rc"
}

netns_add() {
  local name=$1 index=$2 full
  full=$(netns_name "$name")
  if ! [[ $name =~ ^[a-z0-9]{1,12}$ ]] || [ "$name" = sw ]; then
    netns_log "host name '$name': use 1-12 characters [a-z0-9], not 'sw'"
    return 1
  fi
  if ! [[ $index =~ ^[0-9]+$ ]] || ((index < 1 || index > 254)); then
    netns_log "host $name: index '$index' is not in 1-254"
    return 1
  fi
  if grep -qx "$index" "$NETNS_DIR"/index.* 2>/dev/null; then
    netns_log "host $name: $NETNS_SUBNET.$index is taken"
    return 1
  fi
  netns_create "$full" || return 1
  echo "$index" >"$NETNS_DIR/index.$name"
  # Both ends are made inside namespaces of the run: no interface of it ever exists in the
  # machine's namespace, even for a moment.
  ip -n "$NETNS_SWITCH" link add "v$index" type veth peer name eth0 netns "$full" &&
    ip -n "$NETNS_SWITCH" link set "v$index" master br0 &&
    ip -n "$NETNS_SWITCH" link set "v$index" up &&
    ip -n "$full" addr add "$NETNS_SUBNET.$index/24" dev eth0 &&
    ip -n "$full" link set eth0 up || return 1
  # Bounded: until the address is usable (no longer tentative).
  local i
  for ((i = 0; i < 50; i++)); do
    ip -n "$full" -o addr show dev eth0 | grep -q "inet $NETNS_SUBNET.$index/" && return 0
    sleep 0.1
  done
  netns_log "host $name: eth0 did not come up with $NETNS_SUBNET.$index"
  return 1
}

netns_run() {
  local name=$1
  shift
  nsenter --net="$(netns_path "$name")" -- "$@"
}

netns_spawn() {
  local name=$1 log=$2
  shift 2
  # nsenter execs CMD: the PID of the background job is CMD's own.
  nsenter --net="$(netns_path "$name")" -- "$@" >>"$log" 2>&1 </dev/null &
  NETNS_PID=$!
  netns_record pid "$NETNS_PID"
}

# True while PID is an unreaped child of this shell: a PID cannot be reused before its parent
# waits for it, so a recorded child is still the process we started.
netns_is_child() {
  [ "$(awk '/^PPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)" = $$ ]
}

# True until PID has exited (is a zombie, or gone): the state field of /proc/PID/stat, read once.
netns_is_running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  case ${stat%% *} in Z | X | x) return 1 ;; esac
  return 0
}

netns_stop_pid() {
  local pid=$1 i
  netns_is_child "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < NETNS_STOP_TIMEOUT * 10; i++)); do
    netns_is_running "$pid" || break
    sleep 0.1
  done
  if ((i == NETNS_STOP_TIMEOUT * 10)); then
    netns_log "PID $pid did not exit on SIGTERM within ${NETNS_STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# The identities of the run's namespaces, one per line.
netns_ids() { awk '$1 == "id" { print $3 }' "$NETNS_DIR/created" 2>/dev/null | sort -u; }

# What holds one of the identities given on stdin: "PID" (a process in the namespace) or
# "PID/fd/N" (a descriptor of it), one per line; one find over /proc, not a process per entry.
netns_holders() {
  local ids
  ids=$(cat)
  [ -n "$ids" ] || return 0
  # find fails on the entries of processes that exit meanwhile: not an error here.
  { find /proc/[0-9]*/ns/net /proc/[0-9]*/fd -maxdepth 1 -lname 'net:*' -printf '%p %l\n' \
    2>/dev/null || true; } | awk -v ids="$ids" '
      BEGIN { n = split(ids, list, "\n"); for (i = 1; i <= n; i++) want[list[i]] = 1 }
      $2 in want { sub("^/proc/", "", $1); sub("/ns/net$", "", $1); print $1 }'
}

netns_teardown() {
  [ -n "$NETNS_DIR" ] && [ -f "$NETNS_DIR/created" ] || return 0
  local pid full holders i
  # Children first: a process inside keeps its namespace alive.
  while read -r pid; do netns_stop_pid "$pid"; done < <(awk '$1 == "pid" { print $2 }' \
    "$NETNS_DIR/created" | tac)
  # Host namespaces, then the bridge's: each host namespace that dies takes its veth pair along,
  # so the bridge namespace shows whether they really died (the kernel frees a namespace only
  # when nothing holds it any more, and does so asynchronously: bounded wait).
  while read -r full; do
    [ "$full" = "$NETNS_SWITCH" ] || [ ! -e "/run/netns/$full" ] || ip netns del "$full" ||
      netns_log "could not delete namespace $full"
  done < <(awk '$1 == "ns" { print $2 }' "$NETNS_DIR/created" | tac)
  if [ -e "/run/netns/$NETNS_SWITCH" ]; then
    for ((i = 0; i < 50; i++)); do
      ip -n "$NETNS_SWITCH" -o link show type veth | grep -q . || break
      sleep 0.1
    done
    ip netns del "$NETNS_SWITCH" || netns_log "could not delete namespace $NETNS_SWITCH"
  fi
  holders=$(netns_ids | netns_holders | paste -sd' ')
  [ -z "$holders" ] || netns_log "teardown: namespaces of this run are still held by $holders"
}

# The teardown on exit: the record goes too, unless something of the run is still there (then it
# stays for whoever looks into it).
netns_finish() {
  netns_teardown
  [ -n "$NETNS_DIR" ] || return 0
  if [ -z "$(netns_leftovers)" ]; then
    rm -rf "$NETNS_DIR"
  else
    netns_log "leftovers of this run (recorded in $NETNS_DIR/created):"
    netns_leftovers | sed 's/^/  /' >&2
  fi
  NETNS_DIR=""
}

# Everything of this run that still exists, one per line: named namespaces, veths still on the
# bridge, processes or descriptors holding a namespace of the run, and any link of the
# machine's namespace that belongs to the run (there should never be one).
netns_leftovers() {
  local f
  for f in /run/netns/"$NETNS_PREFIX"-*; do
    [ -e "$f" ] && echo "namespace $(basename "$f")"
  done
  [ -e "/run/netns/$NETNS_SWITCH" ] &&
    ip -n "$NETNS_SWITCH" -o link show type veth | awk -F': ' '{ print "veth " $2 }'
  if [ -n "$NETNS_DIR" ] && [ -f "$NETNS_DIR/created" ]; then
    netns_ids | netns_holders | sed 's/^/holder /'
  fi
  ip -o link show | awk -v p="$NETNS_PREFIX-" 'index($0, p) { print "machine link " $0 }'
  return 0
}
