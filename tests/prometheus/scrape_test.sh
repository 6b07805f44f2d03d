#!/usr/bin/env bash
# prometheus.Scrape: a real Prometheus (Debian's package) scrapes three real etcd-agents, each
# bootstrapped by etcd-fleet into a one-member cluster of its own, and their etcds, with the rules
# of packaging/prometheus loaded. Through Prometheus' HTTP API:
#   1. every agent and etcd target is up, and etcd_agent_member_healthy is 1 for m1, m2 and m3;
#   2. every rule of etcd-agent-rules.yml is loaded and evaluates without an error, and the rules
#      that judge health (down, unhealthy, no leader) are inactive for these healthy members;
#   3. etcd killed under m3's agent (SIGKILL of its PID): the agent restarts it and
#      EtcdAgentEtcdRestarted fires for m3, from the agent's real counter;
#   4. every query of the Grafana dashboard runs without an error, and the panels about members
#      and databases show the three members (or their clusters, or their etcds).
# Every agent takes a scheduled snapshot every 5 s ([snapshot] in agent.toml) and drills each: the
# rules read the period (5 s) from the agents, the snapshot and drill alerts stay inactive, and the
# dashboard's snapshot and drill panels show the three.
# Everything listens on 127.0.0.1 (free ports); the processes it starts are stopped by PID, and its
# temp dir removed (KEEP=1 keeps it). Every wait polls for the state, bounded.
# Usage: scrape_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$(cd "${1:?usage: scrape_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
BUILD=$(cd "${2:?usage: scrape_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
AGENT=$BUILD/agent/etcd-agent
FLEET=$BUILD/fleetctl/etcd-fleet
ETCD=${ETCD:-/usr/bin/etcd}
RULES=$SRC/packaging/prometheus/etcd-agent-rules.yml
DASHBOARD=$SRC/packaging/grafana/etcd-agent-dashboard.json
CHECK=(python3 "$SRC/tests/prometheus/promcheck.py")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
for tool in prometheus:prometheus promtool:prometheus curl:curl python3:python3; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: apt-get install ${tool##*:} (./dev test installs it)"
done
if [ ! -x "$AGENT" ] || [ ! -x "$FLEET" ]; then fail "build etcd-agent and etcd-fleet in $BUILD first"; fi
[ -x "$ETCD" ] || fail "$ETCD is missing: apt-get install etcd-server"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/prometheus-scrape-test.XXXXXX")
PIDS=()
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
show_logs() {
  local f
  for f in "$WORK"/*/agent.log "$WORK"/prometheus.log; do
    [ -f "$f" ] && { echo "--- ${f#"$WORK"/} (last lines)"; tail -n 15 "$f"; }
  done >&2
}
finish() {
  local rc=$?
  [ "$rc" -eq 0 ] || show_logs
  stop_all
  if [ -n "${KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# eventually SECONDS WHAT COMMAND...: runs COMMAND every 0.5 s until it succeeds, at most SECONDS.
eventually() {
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >"$WORK/last" 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { cat "$WORK/last" >&2; fail "$what: not within ${seconds}s"; }
    sleep 0.5
  done
}

# 13 free ports on 127.0.0.1 from one interpreter: four per agent (etcd client and peer, agent API
# and HTTP) and Prometheus'.
mapfile -t P < <(python3 -c 'import socket
socks = [socket.socket() for _ in range(13)]
for s in socks: s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))')

# Scheduled snapshots every 5 s, each drilled.
SNAPSHOT_TOML='[snapshot]
interval = "5s"
drill = "after-snapshot"'

APIS=() HTTPS=() CLIENTS=() AGENT_PIDS=()
for i in 1 2 3; do
  b=$(((i - 1) * 4))
  d=$WORK/m$i
  mkdir -p "$d"
  cat >"$d/agent.toml" <<EOT
[member]
name = "m$i"
advertise_host = "127.0.0.1"
client_port = ${P[b]}
peer_port = ${P[b + 1]}
data_root = "$d/data"
[cluster]
token = "prometheus-c$i"
[agent]
api_listen = "127.0.0.1:${P[b + 2]}"
http_listen = "127.0.0.1:${P[b + 3]}"
api_socket = "$d/api.sock"
insecure = true
[etcd]
binary = "$ETCD"
$SNAPSHOT_TOML
EOT
  "$AGENT" --config "$d/agent.toml" >"$d/agent.log" 2>&1 &
  PIDS+=($!) AGENT_PIDS+=($!)
  APIS+=("127.0.0.1:${P[b + 2]}") HTTPS+=("127.0.0.1:${P[b + 3]}") CLIENTS+=("127.0.0.1:${P[b]}")
done
# One single-member cluster per agent (bootstrap waits for the agent, then for a healthy member).
for i in 1 2 3; do
  "$FLEET" --fleet "$WORK/m$i/fleet.toml" bootstrap --hosts "${APIS[i - 1]}" --names "m$i" \
    --cluster "prometheus-c$i" --agent-timeout 30s >"$WORK/m$i/bootstrap.log" 2>&1 ||
    { cat "$WORK/m$i/bootstrap.log" >&2; fail "bootstrap of m$i"; }
done
# A key in each: a member's data, as its snapshots and drills will hold it.
for i in 1 2 3; do
  "$FLEET" --fleet "$WORK/m$i/fleet.toml" put "/prometheus-test/m$i" "c$i" >/dev/null ||
    fail "put into m$i's cluster"
done
echo "ok: three agents, each with a healthy one-member cluster (${APIS[*]}) holding a key"

# Prometheus: the agents and their etcds, each with its cluster's label, every second.
PROM=127.0.0.1:${P[12]}
{
  cat <<EOT
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: etcd-agent
    static_configs:
EOT
  for i in 1 2 3; do
    printf "      - targets: ['%s']\n        labels: {cluster: c%s}\n" "${HTTPS[i - 1]}" "$i"
  done
  printf "  - job_name: etcd\n    static_configs:\n"
  for i in 1 2 3; do
    printf "      - targets: ['%s']\n        labels: {cluster: c%s}\n" "${CLIENTS[i - 1]}" "$i"
  done
} >"$WORK/prometheus.yml"
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="$PROM" >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
eventually 60 "Prometheus ready on $PROM" curl -sf "http://$PROM/-/ready"
URL=http://$PROM

# query_is EXPR EXPECTED: the instant query's series and values, sorted, are EXPECTED.
query_is() {
  local got
  got=$("${CHECK[@]}" query "$URL" "$1" | sort)
  [ "$got" = "$2" ] || { printf 'query %s:\n%s\nexpected:\n%s\n' "$1" "$got" "$2"; return 1; }
}

# 1. Targets up, members healthy.
eventually 60 "every target up" query_is 'count by (job) (up == 1)' \
  "$(printf '{"job": "etcd"} 3\n{"job": "etcd-agent"} 3')"
healthy=""
for i in 1 2 3; do
  healthy+="{\"cluster\": \"c$i\", \"instance\": \"${HTTPS[i - 1]}\", \"job\": \"etcd-agent\", \"member\": \"m$i\"} 1"$'\n'
done
eventually 60 "etcd_agent_member_healthy 1 for m1, m2, m3" \
  query_is 'etcd_agent_member_healthy' "${healthy%$'\n'}"
eventually 30 "etcd_server_has_leader 1 for the three etcds" \
  query_is 'count(etcd_server_has_leader == 1)' '{} 3'
echo "ok: Prometheus scrapes the three agents and etcds; etcd_agent_member_healthy is 1 for m1, m2, m3"

# 2. The rules: all loaded, evaluated, no error; the health rules inactive.
want_rules=$(grep -cE '^\s+- (alert|record): ' "$RULES")
rules_evaluated() {
  "${CHECK[@]}" rules "$URL" >"$WORK/rules.tsv"
  local n bad
  n=$(wc -l <"$WORK/rules.tsv")
  [ "$n" -eq "$want_rules" ] || { echo "Prometheus has $n rules, the file $want_rules"; return 1; }
  bad=$(awk -F'\t' '$4 != "ok"' "$WORK/rules.tsv")
  [ -z "$bad" ] || { echo "rules not evaluated ok:"; echo "$bad"; return 1; }
}
eventually 60 "all $want_rules rules loaded and evaluated without an error" rules_evaluated
health_rules_inactive() {
  "${CHECK[@]}" rules "$URL" >"$WORK/rules.tsv"
  local bad
  bad=$(awk -F'\t' '$2 ~ /^(EtcdAgentDown|EtcdAgentMemberUnhealthy|EtcdAgentClusterNoLeader|EtcdNoLeader|EtcdAgentAPIDown|EtcdAgentMemberCrashLooping)$/ && $5 != "inactive"' \
    "$WORK/rules.tsv")
  [ -z "$bad" ] || { echo "$bad"; return 1; }
}
eventually 60 "the health rules inactive for healthy members" health_rules_inactive
echo "ok: $want_rules rules loaded from $(basename "$RULES") and evaluated without an error; the health alerts are inactive"

# 3. A real alert from the agent's own counter: etcd killed under m3's agent.
etcd_pid=$(ps -o pid= --ppid "${AGENT_PIDS[2]}" | tr -d ' ' | head -n1)
if [ -z "$etcd_pid" ] || ! grep -q etcd "/proc/$etcd_pid/comm"; then
  fail "no etcd child of m3's agent (PID ${AGENT_PIDS[2]})"
fi
kill -KILL "$etcd_pid"
eventually 60 "EtcdAgentEtcdRestarted firing for m3" query_is \
  'count by (alertname, member, severity) (ALERTS{alertname="EtcdAgentEtcdRestarted",alertstate="firing"})' \
  '{"alertname": "EtcdAgentEtcdRestarted", "member": "m3", "severity": "warning"} 1'
eventually 60 "m3 healthy again after the restart" query_is 'etcd_agent_member_healthy{member="m3"}' \
  "{\"cluster\": \"c3\", \"instance\": \"${HTTPS[2]}\", \"job\": \"etcd-agent\", \"member\": \"m3\"} 1"
echo "ok: etcd of m3 killed (PID $etcd_pid): the agent restarted it and EtcdAgentEtcdRestarted fired for m3"

# 4. The dashboard's queries on this Prometheus.
"${CHECK[@]}" panels "$URL" "$DASHBOARD" >"$WORK/panels.tsv" || fail "a dashboard query failed (above)"
# panel title, refId, series expected: one per member, cluster or etcd (3); the quota's maximum 1.
while IFS='|' read -r title ref want; do
  got=$(awk -F'\t' -v t="$title" -v r="$ref" '$2 == t && $3 == r {print $1}' "$WORK/panels.tsv")
  [ "$got" = "$want" ] || fail "dashboard panel '$title' ($ref) shows ${got:-no} series, expected $want"
done <<'EOT'
Healthy|A|3
Role|A|3
Cluster has a healthy leader|A|3
Agent API|A|3
Phase and versions|A|3
Phase over time|A|3
etcd restarts (per hour)|A|3
Revision|A|3
Disk free|A|3
Database size, in use, quota|A|3
Database size, in use, quota|B|3
Database size, in use, quota|C|1
Database use of quota (etcd)|A|3
EOT
echo "ok: the dashboard's $(wc -l <"$WORK/panels.tsv") queries run; its member and database panels show m1, m2, m3"

# 5. Snapshots every 5 s, each drilled: the period the rules read, quiet snapshot alerts, panels.
every_member() {  # every_member EXPR VALUE: EXPR is VALUE for m1, m2 and m3
  local want="" i
  for i in 1 2 3; do
    want+="{\"cluster\": \"c$i\", \"instance\": \"${HTTPS[i - 1]}\", \"job\": \"etcd-agent\", \"member\": \"m$i\"} $2"$'\n'
  done
  query_is "$1" "${want%$'\n'}"
}
eventually 90 "a snapshot taken and drilled on every agent" \
  every_member 'etcd_agent_snapshot_drill_last_ok * (etcd_agent_snapshot_successes_total > bool 0)' 1
eventually 30 "the snapshot period read as 5 s for every agent" \
  every_member 'etcd_agent:snapshot_period_seconds:min_15d' 5
snapshot_rules_inactive() {
  "${CHECK[@]}" rules "$URL" >"$WORK/rules.tsv"
  local bad
  bad=$(awk -F'\t' '$2 ~ /^EtcdAgent(SnapshotStale|SnapshotFailing|SnapshotsBad|RestoreDrillFailed|NoRecentRestorableSnapshot)$/ && $5 != "inactive"' \
    "$WORK/rules.tsv")
  [ -z "$bad" ] || { echo "$bad"; return 1; }
}
eventually 30 "the snapshot alerts inactive" snapshot_rules_inactive
"${CHECK[@]}" panels "$URL" "$DASHBOARD" >"$WORK/panels.tsv" || fail "a dashboard query failed (above)"
while IFS='|' read -r title ref want; do
  got=$(awk -F'\t' -v t="$title" -v r="$ref" '$2 == t && $3 == r {print $1}' "$WORK/panels.tsv")
  [ "$got" = "$want" ] || fail "dashboard panel '$title' ($ref) shows ${got:-no} series, expected $want"
done <<'EOT'
Newest snapshot age|A|3
Next snapshot in|A|3
Snapshots kept / bad|A|3
Snapshots kept / bad|B|3
Snapshot successes and failures (per hour)|A|3
Snapshot successes and failures (per hour)|B|3
Newest snapshot: size and duration|A|3
Newest snapshot: size and duration|B|3
Last restore drill|A|3
Restore-tested snapshot age|A|3
Drills (per day)|A|3
Drills (per day)|B|3
EOT
echo "ok: snapshots every 5 s, each drilled, on the three agents: the rules read a 5 s period, the snapshot alerts are inactive, the snapshot and drill panels show m1, m2, m3"
