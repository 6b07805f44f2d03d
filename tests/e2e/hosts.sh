# shellcheck shell=bash
# Test hosts: this machine's own OS booted with systemd in systemd-nspawn, each over its own overlay
# whose single lower layer is / (read-only, shared by every host), so a host can install packages,
# run services and lose power without changing anything of the machine. By default the hosts share
# the machine's network namespace: give each one its own loopback address. With
# HOSTS_NETWORK=netns each host joins the network namespace that netns.sh made for its name
# (netns_add NAME INDEX before host_start NAME): its own stack, lo and eth0 = 192.0.2.INDEX.
#
# Source this file, then:
#   hosts_init                      create the work dir, install the EXIT trap (teardown)
#   host_start NAME [--unmask UNIT]... [NSPAWN_ARG...]
#                                   mount NAME's overlay and boot it in the background
#   host_wait NAME                  wait (bounded) until NAME's systemd reports running/degraded
#   hosts_boot NAME...              host_start all of them, then host_wait each: a parallel boot
#   host_run NAME CMD...            run CMD inside NAME (all its namespaces, a clean environment)
#   host_poweroff NAME              `systemctl poweroff` inside NAME, wait for it, unmount overlay
#   host_kill NAME                  kill NAME by its recorded PIDs (power cut), unmount overlay
# A host that is powered off keeps its overlay's upper layer: host_start boots it again with
# everything it had written. Every process is tracked by the PIDs recorded at start and is ended
# by those PIDs only.
#
# Never boot systemd as PID 1 on the machine's real / : its tmpfiles clean-up and units would run
# against the real filesystem. Every host here boots from an overlay, and the teardown removes the
# work dir only after each overlay is unmounted (and never crosses into a mounted file system).

HOSTS_BOOT_TIMEOUT=${HOSTS_BOOT_TIMEOUT:-90}   # seconds until a host's systemd is up
HOSTS_STOP_TIMEOUT=${HOSTS_STOP_TIMEOUT:-60}   # seconds for an orderly poweroff
HOSTS_DIR=""
HOSTS_NSPAWN_ARGS=()   # more systemd-nspawn arguments for every host (e.g. --bind-ro=SRC:DST)
HOSTS_NETWORK=${HOSTS_NETWORK:-shared} # shared (the machine's network) or netns (see netns.sh)
HOSTS_TEARDOWN_HOOKS=() # commands hosts_teardown runs once every host is down (netns_finish)
# Units of the machine that would start in every host and are not ours to run there: Debian's
# etcd (it binds 127.0.0.1:2379 and has its own data), PostgreSQL, Prometheus (the tests' promtool
# comes with a server for :9090) and what its package recommends where those were installed (a
# node exporter on :9100 with its timers, smartd, OpenIPMI, NVMe connections), and whatever would
# reach the network or only burn CPU on a test host (apt's daily downloads, NTP, periodic jobs).
HOSTS_MASKED_UNITS=(etcd.service postgresql.service postgresql@.service
  prometheus.service prometheus-node-exporter.service prometheus-node-exporter-apt.timer
  prometheus-node-exporter-ipmitool-sensor.timer prometheus-node-exporter-mellanox-hca-temp.timer
  prometheus-node-exporter-nvme.timer prometheus-node-exporter-smartmon.timer
  smartmontools.service openipmi.service nvmefc-boot-connections.service nvmf-autoconnect.service
  apt-daily.service apt-daily.timer apt-daily-upgrade.service apt-daily-upgrade.timer
  systemd-timesyncd.service man-db.timer man-db.service e2scrub_all.timer fstrim.timer
  dpkg-db-backup.timer)

hosts_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

hosts_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

HOSTS_WATCHDOG_PID=""

# hosts_init [DEADLINE_SECONDS]: with a deadline, a watchdog cuts every host off when it passes
# (a command blocked inside a host then fails) and ends the script with SIGTERM, whose trap tears
# down; a test runner's own timeout would SIGKILL the script and leave the hosts behind.
hosts_init() {
  HOSTS_DIR=$(mktemp -d /tmp/etcd-agent-e2e.XXXXXX)
  mkdir -p "$HOSTS_DIR/hosts"
  trap hosts_teardown EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if [ -n "${1:-}" ]; then
    (
      trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
      sleep "$1" &
      sleeper=$!
      wait "$sleeper"
      hosts_log "deadline of $1 s passed: cutting every host off"
      for d in "$HOSTS_DIR"/hosts/*/; do host_kill "$(basename "$d")" || true; done
      kill -TERM $$
    ) &
    HOSTS_WATCHDOG_PID=$!
  fi
}

host_dir() { echo "$HOSTS_DIR/hosts/$1"; }

# The container's PID 1 (its systemd), as recorded by host_start.
host_pid() { cat "$(host_dir "$1")/leader.pid"; }

# The recorded nspawn PID, if that process still is this host's systemd-nspawn (a PID is only
# trusted while its command line names the machine: PIDs are reused).
host_nspawn_pid() {
  local f pid
  f="$(host_dir "$1")/nspawn.pid"
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "-M e2e-$$-$1 " || return 1
  echo "$pid"
}

# The recorded PID 1 of the host, if it still is the child of the host's nspawn.
host_leader_pid() {
  local f pid nspawn
  f="$(host_dir "$1")/leader.pid"
  [ -s "$f" ] && nspawn=$(host_nspawn_pid "$1") || return 1
  pid=$(cat "$f")
  [ "$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)" = "$nspawn" ] || return 1
  echo "$pid"
}

host_alive() { host_nspawn_pid "$1" >/dev/null; }

# The hosts' lower layer is the machine's live /: booting them while the machine's own dpkg runs
# would give every host a half-configured package database ("dpkg was interrupted"). Wait until
# the machine's dpkg holds no lock and has no pending updates (bounded).
hosts_wait_dpkg_idle() {
  local i
  for ((i = 0; i < 600; i++)); do
    if ! lslocks -n -o PATH 2>/dev/null | grep -q '^/var/lib/dpkg/lock' &&
      [ -z "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ]; then
      [ "$i" = 0 ] || hosts_log "the machine's dpkg is idle again (waited $((i / 5)) s)"
      return 0
    fi
    [ "$i" = 0 ] && hosts_log "the machine's dpkg is busy: waiting before booting hosts over /"
    sleep 0.2
  done
  hosts_log "the machine's dpkg stayed busy for 120 s; finish it first (dpkg --configure -a)"
  return 1
}

host_start() {
  local name=$1 unit
  shift
  local masked=("${HOSTS_MASKED_UNITS[@]}")
  # --unmask UNIT: let this host run one of the masked units (e.g. to test what our package does
  # about it).
  while [ "${1:-}" = --unmask ]; do
    for unit in "${!masked[@]}"; do [ "${masked[$unit]}" != "$2" ] || unset "masked[$unit]"; done
    shift 2
  done
  local d
  d=$(host_dir "$name")
  if host_alive "$name"; then
    hosts_log "host $name is already running"
    return 1
  fi
  hosts_wait_dpkg_idle || return 1
  mkdir -p "$d"/{upper,work,root}
  mount -t overlay overlay -o "lowerdir=/,upperdir=$d/upper,workdir=$d/work" "$d/root"
  echo "$name" >"$d/root/etc/hostname"
  local args=(--register=no --keep-unit --boot -D "$d/root" -M "e2e-$$-$name"
    "${HOSTS_NSPAWN_ARGS[@]}")
  case $HOSTS_NETWORK in
    shared) ;;
    netns)
      local netns=""
      declare -F netns_path >/dev/null && netns=$(netns_path "$name")
      if [ -z "$netns" ] || [ ! -e "$netns" ]; then
        hosts_log "host $name: no network namespace for it (source netns.sh, netns_add $name N)"
        return 1
      fi
      args+=("--network-namespace-path=$netns")
      ;;
    *)
      hosts_log "HOSTS_NETWORK=$HOSTS_NETWORK: use shared or netns"
      return 1
      ;;
  esac
  for unit in "${masked[@]}"; do
    args+=("--bind-ro=/dev/null:/etc/systemd/system/$unit")
  done
  rm -f "$d/leader.pid"
  # setsid: the host must not get the test's terminal signals; it is stopped by its PIDs.
  setsid systemd-nspawn "${args[@]}" "$@" >>"$d/console.log" 2>&1 </dev/null &
  echo $! >"$d/nspawn.pid"
  date +%s.%N >"$d/started"
}

# nspawn forks once into the new namespaces and that child execs systemd: it is PID 1 inside.
host_find_leader() {
  local nspawn child children
  nspawn=$(host_nspawn_pid "$1") || return 1
  children=$(cat "/proc/$nspawn/task/$nspawn/children" 2>/dev/null) || return 1
  for child in $children; do
    if [ "$(cat "/proc/$child/comm" 2>/dev/null)" = systemd ]; then
      echo "$child"
      return 0
    fi
  done
  return 1
}

host_wait() {
  local name=$1 d leader state="" i
  d=$(host_dir "$name")
  for ((i = 0; i < HOSTS_BOOT_TIMEOUT * 5; i++)); do
    if ! host_alive "$name"; then
      hosts_log "host $name exited while booting; its console:"
      tail -n 30 "$d/console.log" >&2
      return 1
    fi
    if [ ! -s "$d/leader.pid" ] && leader=$(host_find_leader "$name"); then
      echo "$leader" >"$d/leader.pid"
    fi
    if [ -s "$d/leader.pid" ]; then
      state=$(host_run "$name" systemctl is-system-running 2>/dev/null || true)
      case $state in
        running | degraded)
          hosts_log "host $name is up ($state) after $(hosts_since "$(cat "$d/started")") s," \
            "PID $(host_pid "$name")"
          [ "$state" = running ] ||
            host_run "$name" systemctl list-units --failed --no-pager --plain >&2 || true
          return 0
          ;;
      esac
    fi
    sleep 0.2
  done
  hosts_log "host $name did not finish booting in ${HOSTS_BOOT_TIMEOUT}s (state: ${state:-none})"
  tail -n 30 "$d/console.log" >&2
  return 1
}

hosts_boot() {
  local name
  for name in "$@"; do host_start "$name" || return 1; done
  for name in "$@"; do host_wait "$name" || return 1; done
}

# Runs a command inside the host as its root, with the environment a login would have (not the
# test's: no XDG_RUNTIME_DIR or D-Bus address of ours leaks in).
host_run() {
  local name=$1
  shift
  nsenter -t "$(host_pid "$name")" -m -u -i -p -n -- \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    HOME=/root TERM=dumb SYSTEMD_COLORS=0 SYSTEMD_PAGER= "$@"
}

host_wait_exit() {
  local name=$1 timeout=$2 i
  for ((i = 0; i < timeout * 5; i++)); do
    host_alive "$name" || return 0
    sleep 0.2
  done
  return 1
}

host_unmount() {
  local d i
  d=$(host_dir "$1")
  for ((i = 0; i < 25; i++)); do
    mountpoint -q "$d/root" || return 0
    umount "$d/root" 2>/dev/null && return 0
    sleep 0.2
  done
  umount -l "$d/root"
}

host_poweroff() {
  local name=$1 d
  d=$(host_dir "$name")
  host_run "$name" systemctl poweroff || true
  if ! host_wait_exit "$name" "$HOSTS_STOP_TIMEOUT"; then
    hosts_log "host $name did not power off in ${HOSTS_STOP_TIMEOUT}s: killing it"
    host_kill "$name"
    return 1
  fi
  wait "$(cat "$d/nspawn.pid")" 2>/dev/null || true
  rm -f "$d/leader.pid"
  host_unmount "$name"
}

# A power cut: SIGKILL to the container's PID 1 ends every process of its PID namespace; then
# nspawn itself.
host_kill() {
  local name=$1 d pid child
  d=$(host_dir "$name")
  if pid=$(host_leader_pid "$name"); then
    kill -KILL "$pid" 2>/dev/null || true
  elif pid=$(host_nspawn_pid "$name"); then
    # Its PID 1 is not recorded yet (host_wait has not seen it): it is a child of the nspawn, and
    # a SIGKILL to the nspawn alone would leave the host's systemd running without it.
    local children=()
    read -ra children 2>/dev/null <"/proc/$pid/task/$pid/children" || true
    for child in "${children[@]}"; do kill -KILL "$child" 2>/dev/null || true; done
  fi
  if pid=$(host_nspawn_pid "$name"); then
    host_wait_exit "$name" 10 || kill -KILL "$pid" 2>/dev/null || true
    host_wait_exit "$name" 10 || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -f "$d/leader.pid"
  host_unmount "$name"
}

# Every host is cut off by its recorded PIDs (host_kill): the work dir goes away with everything
# in it, so an orderly shutdown would only cost time (and a host whose halt fails would hang
# there until killed anyway).
hosts_teardown() {
  local rc=$? d name busy=0 hook
  trap - EXIT INT TERM
  if [ -n "$HOSTS_WATCHDOG_PID" ]; then
    kill -TERM "$HOSTS_WATCHDOG_PID" 2>/dev/null || true
    wait "$HOSTS_WATCHDOG_PID" 2>/dev/null || true
  fi
  if [ -z "$HOSTS_DIR" ] || [ ! -d "$HOSTS_DIR/hosts" ]; then
    for hook in "${HOSTS_TEARDOWN_HOOKS[@]}"; do "$hook" || true; done
    exit "$rc"
  fi
  for d in "$HOSTS_DIR"/hosts/*/; do
    name=$(basename "$d")
    host_kill "$name" || true
    if mountpoint -q "$d/root"; then
      hosts_log "teardown: $d/root is still mounted; leaving $HOSTS_DIR in place"
      busy=1
    fi
  done
  # --one-file-system: even if a mount were left behind, never descend into it (its lower
  # layer is the machine's /).
  [ "$busy" = 0 ] && rm -rf --one-file-system "$HOSTS_DIR"
  for hook in "${HOSTS_TEARDOWN_HOOKS[@]}"; do "$hook" || true; done
  exit "$rc"
}
