# shellcheck shell=bash
# What the benchmark scripts share. Source it, then:
#   bench_init NAME         WORK (a temp dir), PIDS (append every process you start), and an EXIT
#                           trap that stops those PIDs (only those) and removes WORK
#   bench_stop_pids         stop every PID in PIDS now and empty the list
#   bench_copy_binaries BUILD_DIR
#                           FLEET and AGENT: copies in WORK, so that a rebuild while the benchmark
#                           runs cannot swap them (a binary being linked right now is retried;
#                           bounded)
#   port [HOST]             a free TCP port on HOST (default 127.0.0.1), bound there for a moment
#   now                     seconds since the epoch, with nanoseconds
#   elapsed T0 T1           T1 - T0 in seconds, two decimals
#   stamp T0                each line of stdin behind the seconds since T0 (a per-step trace)
#   bench_agent_config ...  an etcd-agent's own agent.toml (below); bench_run_agent starts it
#   bench_start_agent ...   both, in plaintext, waited for until it answers

bench_stop_pids() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}

bench_init() {
  WORK=$(mktemp -d "/tmp/bench-$1.XXXXXX")
  PIDS=()
  # BENCH_KEEP=1 keeps the work directory (logs, configs) for a look afterwards.
  trap 'bench_stop_pids; if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

bench_copy_binaries() {
  FLEET="$WORK/etcd-fleet"
  AGENT="$WORK/etcd-agent"
  local _
  for _ in $(seq 1 60); do
    cp "$1/fleetctl/etcd-fleet" "$1/agent/etcd-agent" "$WORK/" 2>/dev/null &&
      "$FLEET" version >/dev/null 2>&1 && "$AGENT" --version >/dev/null 2>&1 && return 0
    sleep 2
  done
  echo "cannot copy runnable etcd-fleet and etcd-agent from $1" >&2
  return 1
}

# ports HOST N: N distinct free ports on HOST, one per line, from one interpreter (a python3
# start costs tens of milliseconds, seconds on a loaded machine).
ports() {
  python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[2]))]
for s in socks: s.bind((sys.argv[1], 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))' "$1" "$2"
}

# port [HOST]: one free port on HOST (default 127.0.0.1).
port() { ports "${1:-127.0.0.1}" 1; }

now() { date +%s.%N; }

# stamp T0: each line of stdin behind the seconds since T0 (as `now` gives it). Shell arithmetic
# only: a process per line (awk, date) would take CPU from what is being timed.
stamp() {
  local secs=${1%.*} frac=${1#*.}000000 line d
  local t0=$((10#$secs * 1000000 + 10#${frac:0:6}))
  while IFS= read -r line; do
    d=$((${EPOCHREALTIME/./} - t0))
    printf '%3d.%02d s  %s\n' $((d / 1000000)) $((d % 1000000 / 10000)) "$line"
  done
}

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# bench_agent_config DIR NAME HOST TOKEN [TOML_LINES] [ENROLL_TOKEN]: writes DIR/NAME/agent.toml
# (free ports on HOST, etcd at $ETCD, TOML_LINES appended to its [etcd] table). Without
# ENROLL_TOKEN the agent serves its API in plaintext (insecure: loopback only); with it, the token
# goes to DIR/NAME/enroll.token (0600) and the agent waits for enrollment (etcd-fleet bootstrap or
# enroll). Sets BENCH_AGENT_API (HOST:PORT).
bench_agent_config() {
  local dir=$1 name=$2 h=$3 token=$4 extra=${5:-} enroll=${6:-} security
  local -a p
  mapfile -t p < <(ports "$h" 4)
  mkdir -p "$dir/$name"
  if [ -n "$enroll" ]; then
    printf '%s\n' "$enroll" >"$dir/$name/enroll.token"
    chmod 600 "$dir/$name/enroll.token"
    security="[enroll]
token_file = \"$dir/$name/enroll.token\""
  else
    security="insecure = true"
  fi
  cat >"$dir/$name/agent.toml" <<EOT
[member]
name = "$name"
advertise_host = "$h"
client_port = ${p[0]}
peer_port = ${p[1]}
data_root = "$dir/$name/data"
[cluster]
token = "$token"
[agent]
api_listen = "$h:${p[2]}"
http_listen = "$h:${p[3]}"
api_socket = "$dir/$name/api.sock"
$security
[etcd]
binary = "$ETCD"
$extra
EOT
  BENCH_AGENT_API="$h:${p[2]}"
}

# bench_run_agent DIR NAME: starts etcd-agent with DIR/NAME/agent.toml, without waiting for it.
# Sets BENCH_AGENT_PID (also in PIDS).
bench_run_agent() {
  "$AGENT" --config "$1/$2/agent.toml" >"$1/$2/agent.log" 2>&1 &
  BENCH_AGENT_PID=$!
  PIDS+=("$BENCH_AGENT_PID")
}

# bench_start_agent DIR NAME HOST TOKEN [TOML_LINES]: bench_agent_config in plaintext, starts the
# agent and waits (bounded: 10 s) until it answers. Sets BENCH_AGENT_API and BENCH_AGENT_PID.
bench_start_agent() {
  local _
  bench_agent_config "$@" || return 1
  bench_run_agent "$1" "$2"
  for _ in $(seq 1 100); do
    "$FLEET" agent status --host "$BENCH_AGENT_API" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "etcd-agent $2 on $BENCH_AGENT_API did not answer within 10 s:" >&2
  tail -5 "$1/$2/agent.log" >&2
  return 1
}
