#!/usr/bin/env bash
# Client put latency while `etcd-fleet defrag --rolling` runs vs idle, on a 3-member fleet with a
# database of tens of MB: p50, p99 and the slowest put of each phase, every round, and the ratio of
# the p99s (goal: <= 2.0).
#
# The fleet: three etcd-agents on 127.0.0.61-63 (free ports), bootstrapped by `etcd-fleet
# bootstrap`; LIVE_MB of 1 MiB values written once (`etcd-fleet put` from stdin). Each round:
# GARBAGE_MB more written, deleted and compacted away (`etcdctl compaction --physical`: the files
# keep the space, most of it free), then a writer puts for IDLE_S seconds (idle), then puts while
# `etcd-fleet defrag --rolling` runs (each member fenced for its turn; the members' db sizes are
# printed); then, after more garbage each time, while `etcd-fleet defrag --rolling --no-fence` runs
# (in place), and during the reference by hand: `etcdctl defrag` one endpoint at a time, followers
# first, the leader last without moving its leadership. Failed puts are counted with etcd's reason.
#
# The writer is one client with a connection to every member, as etcd's Go client keeps them,
# sending its puts round-robin one after the other: python3's http.client over HTTP/1.1
# keep-alive to etcd's own gRPC gateway on the client port (POST /v3/kv/put; etcd serves it by
# default). Each put is timed from request to response, without a process start per put (which
# would be most of an etcdctl put's time). A put to a member that is defragmenting in place waits
# until it is done: that wait is the cost this measures. Like clientv3's balancer, the writer
# skips an endpoint whose connection was refused or closed for a second (gRPC's first reconnect
# backoff) and sends that put to the next one; the put's time includes the refused attempt. A put
# that reached etcd and failed is not retried (clientv3 does not retry a put either): it counts as
# failed. Everything started here is stopped by PID on exit.
# Usage: bench/rolling_defrag.sh BUILD_DIR [ROUNDS] [LIVE_MB] [GARBAGE_MB] [IDLE_S]
set -euo pipefail
BUILD=$(cd "${1:?usage: rolling_defrag.sh BUILD_DIR [ROUNDS] [LIVE_MB] [GARBAGE_MB] [IDLE_S]}" &&
  pwd)
ROUNDS=${2:-3}
LIVE=${3:-40}
GARBAGE=${4:-24}
IDLE_S=${5:-10}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
ETCDCTL=$(command -v etcdctl || echo /usr/bin/etcdctl)
HOSTS=(127.0.0.61 127.0.0.62 127.0.0.63)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init rolling-defrag
bench_copy_binaries "$BUILD"

head -c 1048576 /dev/urandom >"$WORK/value"
cat >"$WORK/writer.py" <<'EOF'
# writer.py ENDPOINTS STOP_FILE OUT: puts round-robin over ENDPOINTS (host:port,...) until
# STOP_FILE exists; writes one line per put to OUT: seconds, 1 for success or 0, the endpoint's
# index (the one that answered), and for a failure what it was ("failover" for a put sent on after
# a refused or closed connection).
import base64, http.client, json, os, sys, time

endpoints = [e.rsplit(":", 1) for e in sys.argv[1].split(",")]
stop_file, out = sys.argv[2], sys.argv[3]
conns = [None] * len(endpoints)
down_until = [0.0] * len(endpoints)  # skipped until then: its connection was refused or closed
value = base64.b64encode(b"v" * 256).decode()


def put(n, body):
    """One put on endpoint n: (ok, why), or None when the request never reached etcd (refused, or a
    kept-alive connection the server had closed), so that another endpoint may take it."""
    reused = conns[n] is not None
    try:
        if conns[n] is None:
            conns[n] = http.client.HTTPConnection(endpoints[n][0], int(endpoints[n][1]),
                                                  timeout=30)
        conns[n].request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
        r = conns[n].getresponse()
        data = r.read()
        if r.status == 200 and b"header" in data:
            return 1, ""
        return 0, "HTTP %d %s" % (r.status, data.decode(errors="replace")[:200])
    except (ConnectionRefusedError, FileNotFoundError):
        conns[n] = None
        return None
    except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected) as e:
        conns[n] = None
        if reused:
            return None
        return 0, repr(e)
    except (OSError, http.client.HTTPException) as e:
        conns[n] = None
        return 0, repr(e)


with open(out, "w") as f:
    i = 0
    while not os.path.exists(stop_file):
        key = base64.b64encode(("bench/latency/%05d" % (i % 10000)).encode()).decode()
        body = json.dumps({"key": key, "value": value})
        t0 = time.perf_counter()
        order = [(i + k) % len(endpoints) for k in range(len(endpoints))]
        now = time.monotonic()
        result, tried = None, 0
        for n in [e for e in order if down_until[e] <= now] or order:
            result = put(n, body)
            tried += 1
            if result is not None:
                break
            down_until[n] = time.monotonic() + 1.0
        if result is None:
            result = (0, "every endpoint refused")
        ok, why = result
        if ok and tried > 1:
            why = "failover"
        f.write("%.6f %d %d %s\n" % (time.perf_counter() - t0, ok, n, why.replace("\n", " ")))
        i += 1
EOF

# stats FILE: sets STATS ("N puts (E failed, F failed over), p50 X ms, p99 Y ms, max Z ms; over
# 50 ms: ...") and P99 (ms), and FAILS (each reason of a failed put, counted).
stats() {
  local failed over line slow
  failed=$(awk '$2 == 0' "$1" | wc -l)
  over=$(awk '$2 == 1 && $4 == "failover"' "$1" | wc -l)
  line=$(awk '{ print $1 * 1000 }' "$1" | sort -n | awk -v failed="$failed" -v over="$over" '
    { a[NR] = $1 }
    END {
      if (NR == 0) { print "0 puts|0"; exit }
      p50 = a[int((NR - 1) * 0.50) + 1]; p99 = a[int((NR - 1) * 0.99) + 1]
      printf "%d puts (%d failed, %d failed over), p50 %.2f ms, p99 %.2f ms, max %.1f ms|%.3f\n",
        NR, failed, over, p50, p99, a[NR], p99
    }')
  # The puts that took over 50 ms, by the member they were sent to: "127.0.0.61:P 1, ...".
  slow=$(awk -v eps="$EPS" 'BEGIN { split(eps, e, ",") }
    $1 > 0.05 { n[$3]++ }
    END { for (i in n) printf "%s%s %d", (s++ ? ", " : ""), e[i + 1], n[i] }' "$1")
  P99=${line##*|}
  STATS="${line%|*}; over 50 ms: ${slow:-none}"
  FAILS=$(awk '$2 == 0 { $1 = $2 = ""; print "failed put to endpoint" $0 }' "$1" | sort | uniq -c | sed "s/^/    /")
}

# writer_start OUT / writer_stop: one writer in the background.
writer_start() {
  rm -f "$WORK/stop"
  python3 "$WORK/writer.py" "$EPS" "$WORK/stop" "$1" &
  WRITER_PID=$!
  PIDS+=("$WRITER_PID")
}
writer_stop() {
  touch "$WORK/stop"
  wait "$WRITER_PID"
}

dir="$WORK/fleet"
mkdir -p "$dir"
apis=()
for i in 0 1 2; do
  bench_start_agent "$dir" "m$((i + 1))" "${HOSTS[$i]}" bench-defrag
  apis+=("$BENCH_AGENT_API")
done
FLEET_ARGS=(--fleet "$dir/fleet.toml")
"$FLEET" "${FLEET_ARGS[@]}" bootstrap --hosts "${apis[0]},${apis[1]},${apis[2]}" \
  --agent-timeout 20s --cluster bench-defrag >"$dir/bootstrap.log" 2>&1 ||
  { echo "bootstrap failed:" >&2; cat "$dir/bootstrap.log" >&2; exit 1; }
EPS=$("$FLEET" "${FLEET_ARGS[@]}" member list -w json | python3 -c \
  'import json,sys; print(",".join(m["clientURLs"][0].split("//")[1] for m in json.load(sys.stdin)["members"]))')
echo "fleet: 3 members, client endpoints $EPS"
for k in $(seq 1 "$LIVE"); do
  "$FLEET" "${FLEET_ARGS[@]}" put "bench/live/$k" <"$WORK/value" >/dev/null
done

# db_sizes: "m1 49 MB (12 MB in use), ..." from every member's Status.
db_sizes() {
  ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EPS" endpoint status -w json | python3 -c '
import json, sys
def mb(n): return "%.1f MB" % (n / 1e6)
print(", ".join("%s %s (%s in use)" % (e["Endpoint"], mb(e["Status"]["dbSize"]),
                mb(e["Status"].get("dbSizeInUse", 0))) for e in json.load(sys.stdin)))'
}

# garbage: GARBAGE_MB written, deleted and compacted away.
garbage() {
  local k rev
  for k in $(seq 1 "$GARBAGE"); do
    "$FLEET" "${FLEET_ARGS[@]}" put "bench/garbage/$k" <"$WORK/value" >/dev/null
  done
  rev=$("$FLEET" "${FLEET_ARGS[@]}" del bench/garbage/ --prefix -w json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
  ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EPS" compaction --physical "$rev" >/dev/null
}

# by_hand: the reference, `etcdctl defrag` one endpoint at a time, followers first and the leader
# last where it is (nobody moves the leadership).
by_hand() {
  local ep
  for ep in $(ETCDCTL_API=3 "$ETCDCTL" --endpoints "$EPS" endpoint status -w json | python3 -c '
import json, sys
eps = json.load(sys.stdin)
lead = lambda e: e["Status"]["leader"] == e["Status"]["header"]["member_id"]
print(" ".join(e["Endpoint"] for e in sorted(eps, key=lead)))'); do
    ETCDCTL_API=3 "$ETCDCTL" --endpoints "$ep" --command-timeout 5m defrag >/dev/null
  done
}

# rolling NAME LOG FLAGS...: puts while `etcd-fleet defrag --rolling FLAGS` runs; prints the round's
# line (NAME) and appends its p99 to P99S.
rolling() {
  local name=$1 out=$2 t0 t1
  shift 2
  writer_start "$out"
  t0=$(now)
  "$FLEET" "${FLEET_ARGS[@]}" defrag --rolling "$@" >"$out.log" 2>&1 ||
    { writer_stop; echo "defrag --rolling $* failed:" >&2; cat "$out.log" >&2; exit 1; }
  t1=$(now)
  writer_stop
  stats "$out"
  echo "  $name $(elapsed "$t0" "$t1")s: $STATS"
  [ -z "$FAILS" ] || echo "$FAILS"
  awk -v a="${IDLE[-1]}" -v b="$P99" 'BEGIN { printf "    p99 ratio to idle %.2f\n", b / a }'
  grep -E "^m[0-9] " "$out.log" | sed 's/^/    /'
}

declare -a IDLE DEFRAG INPLACE HAND
for r in $(seq 1 "$ROUNDS"); do
  garbage
  echo "round $r: before: $(db_sizes)"

  writer_start "$WORK/idle-$r"
  sleep "$IDLE_S"
  writer_stop
  stats "$WORK/idle-$r"
  echo "  idle ${IDLE_S}s: $STATS"
  [ -z "$FAILS" ] || echo "$FAILS"
  IDLE+=("$P99")

  rolling "defrag --rolling (fenced)" "$WORK/defrag-$r"
  DEFRAG+=("$P99")

  garbage
  rolling "defrag --rolling --no-fence (in place)" "$WORK/inplace-$r" --no-fence
  INPLACE+=("$P99")

  garbage
  writer_start "$WORK/hand-$r"
  t0=$(now)
  by_hand
  t1=$(now)
  writer_stop
  stats "$WORK/hand-$r"
  echo "  reference, etcdctl defrag per endpoint, leader in place $(elapsed "$t0" "$t1")s: $STATS"
  [ -z "$FAILS" ] || echo "$FAILS"
  HAND+=("$P99")
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
MI=$(median "${IDLE[@]}")
MD=$(median "${DEFRAG[@]}")
MP=$(median "${INPLACE[@]}")
MH=$(median "${HAND[@]}")
echo "p99 put latency over $ROUNDS rounds (median of the rounds): idle ${MI} ms, during" \
  "defrag --rolling ${MD} ms, during defrag --rolling --no-fence ${MP} ms, during the etcdctl" \
  "reference ${MH} ms"
awk -v a="$MI" -v b="$MD" -v p="$MP" -v h="$MH" 'BEGIN {
  printf "ratio defrag --rolling/idle: %.2f (goal <= 2.00); --no-fence/idle: %.2f; reference/idle: %.2f\n",
    b / a, p / a, h / a }'
