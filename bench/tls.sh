#!/usr/bin/env bash
# What security by default costs, measured side by side in one run:
#
#   1. Bootstrap: `etcd-fleet bootstrap` of N agents into a TLS fleet (the default: a fleet CA,
#      agents waiting with an enrollment token; bootstrap enrolls them, then forms members with
#      client and peer TLS and certificate auth) vs a plaintext fleet (agents with `insecure =
#      true` on loopback, a fleet without a CA). Both clocks start when the agents start (their
#      configs and free ports are picked before) and stop when bootstrap exits 0 with every member
#      healthy; each round is also split at bootstrap's step 5 into forming (agents up, enrolled,
#      checked, etcd started) and etcd's first election, whose randomized 1-2 s timeout makes the
#      rounds fall into two groups with TLS and without. Rounds alternate TLS / plaintext.
#   2. One-shot `etcd-fleet get foo` against a TLS member (the fleet's client certificate,
#      pki/fleet.crt, given as flags) vs a plaintext member (one more fleet of each kind, both up), and `etcdctl get foo` the same way (its
#      --cacert/--cert/--key with that certificate): the TLS handshake's share of a one-shot
#      command is (TLS - plaintext) / TLS. Runs alternate.
#
# Every round is printed, then medians and ratios. Addresses: 127.0.0.41.. (TLS fleets) and
# 127.0.0.51.. (plaintext fleets), free ports. Everything started here is stopped by PID on exit.
# Usage: bench/tls.sh BUILD_DIR [ROUNDS] [MEMBERS] [GET_RUNS]   (defaults: 5, 3, 31)
set -euo pipefail
BUILD=$(cd "${1:?usage: tls.sh BUILD_DIR [ROUNDS] [MEMBERS] [GET_RUNS]}" && pwd)
ROUNDS=${2:-5}
MEMBERS=${3:-3}
GET_RUNS=${4:-31}
ETCD=$(command -v etcd || echo /usr/bin/etcd)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_init tls
bench_copy_binaries "$BUILD"

ms() { date +%s%3N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# agent_configs DIR FIRST_OCTET MODE: the agent.toml of N agents on 127.0.0.FIRST.., MODE tls (a
# token in each agent's token_file) or plain (insecure). Leaves their API addresses in APIS
# (comma-separated).
agent_configs() {
  local dir=$1 first=$2 mode=$3 i token=""
  APIS=""
  [ "$mode" = plain ] || token=$("$FLEET" --fleet "$dir/fleet.toml" token create --ttl 1h 2>/dev/null)
  for ((i = 1; i <= MEMBERS; i++)); do
    bench_agent_config "$dir" "m$i" "127.0.0.$((first + i - 1))" bench-tls "" "$token"
    APIS+="${APIS:+,}$BENCH_AGENT_API"
  done
}

# bootstrap_round DIR FIRST_OCTET MODE: the clock runs from the agents' start until bootstrap exits
# 0 with every member healthy. ELAPSED_MS is all of it, FORM_MS the part until bootstrap waits for
# a healthy cluster (agents up, enrolled, checked, planned, etcd started), ELECT_MS the rest: etcd
# electing its first leader and publishing its members, which is the same work with TLS or without.
bootstrap_round() {
  local dir=$1 first=$2 mode=$3 t0 t1 t5="" i line
  mkdir -p "$dir"
  # The CA, the token and the configs exist before the clock starts: an operator makes the CA
  # once per fleet, and the free ports are the harness's work.
  [ "$mode" = plain ] || "$FLEET" --fleet "$dir/fleet.toml" ca init >/dev/null
  agent_configs "$dir" "$first" "$mode"
  t0=$(ms)
  for ((i = 1; i <= MEMBERS; i++)); do bench_run_agent "$dir" "m$i"; done
  # Each line of bootstrap's progress as it comes: the one of step 5 splits the round.
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$dir/bootstrap.log"
    [[ -z "$t5" && "$line" == "[5/5] waiting for a healthy cluster"* ]] && t5=$(ms)
  done < <("$FLEET" --fleet "$dir/fleet.toml" bootstrap --hosts "$APIS" --cluster bench-tls \
    --agent-timeout 20s 2>&1 || echo "BOOTSTRAP FAILED")
  t1=$(ms)
  if grep -q "BOOTSTRAP FAILED" "$dir/bootstrap.log" || [ -z "$t5" ]; then
    echo "$mode bootstrap failed:" >&2
    cat "$dir/bootstrap.log" >&2
    return 1
  fi
  ELAPSED_MS=$((t1 - t0))
  FORM_MS=$((t5 - t0))
  ELECT_MS=$((t1 - t5))
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "== 1. bootstrap of $MEMBERS agents: TLS fleet (enrollment included) vs plaintext ($ROUNDS rounds, alternating)"
tls=() plain=() tls_form=() plain_form=()
for ((r = 1; r <= ROUNDS; r++)); do
  bootstrap_round "$WORK/tls-$r" 41 tls
  tls+=("$ELAPSED_MS") tls_form+=("$FORM_MS")
  split="TLS ${ELAPSED_MS} ms (${FORM_MS} forming + ${ELECT_MS} first election)"
  bench_stop_pids
  bootstrap_round "$WORK/plain-$r" 51 plain
  plain+=("$ELAPSED_MS") plain_form+=("$FORM_MS")
  bench_stop_pids
  echo "round $r: $split, plaintext ${ELAPSED_MS} ms (${FORM_MS} + ${ELECT_MS})"
done
mt=$(median "${tls[@]}")
mp=$(median "${plain[@]}")
echo "TLS fleet bootstrap:       median $mt ms (${tls[*]})"
echo "plaintext fleet bootstrap: median $mp ms (${plain[*]})"
awk -v t="$mt" -v p="$mp" 'BEGIN { printf "ratio TLS/plaintext, bootstrap: %.2f\n", t / p }'
# Without etcd's first election, whose 1-2 s randomized timeout (a vote that fails waits another)
# splits the rounds into two groups with TLS and without alike: what TLS adds is in this part.
mtf=$(median "${tls_form[@]}")
mpf=$(median "${plain_form[@]}")
echo "TLS fleet, until etcd elects:       median $mtf ms (${tls_form[*]})"
echo "plaintext fleet, until etcd elects: median $mpf ms (${plain_form[*]})"
awk -v t="$mtf" -v p="$mpf" 'BEGIN { printf "ratio TLS/plaintext, forming without the election: %.2f\n", t / p }'

echo "== 2. one-shot get foo: TLS member vs plaintext member ($GET_RUNS runs each, alternating)"
# One fleet of each kind, both up while the gets run.
bootstrap_round "$WORK/tls-get" 41 tls
bootstrap_round "$WORK/plain-get" 51 plain
TLS_FLEET=(--fleet "$WORK/tls-get/fleet.toml")
PLAIN_FLEET=(--fleet "$WORK/plain-get/fleet.toml")
"$FLEET" "${TLS_FLEET[@]}" put foo bar >/dev/null
"$FLEET" "${PLAIN_FLEET[@]}" put foo bar >/dev/null
# The first member's client endpoint of each inventory (the key's only line with a client URL).
endpoint_of() { sed -n 's/^client_url = "\(.*\)"$/\1/p' "$1" | head -n 1; }
TLS_EP=$(endpoint_of "$WORK/tls-get/fleet.toml")
PLAIN_EP=$(endpoint_of "$WORK/plain-get/fleet.toml")
PKI="$WORK/tls-get/pki"
case $TLS_EP in https://*) ;; *) echo "the TLS fleet's member is not https: $TLS_EP" >&2; exit 1 ;; esac
ns() { date +%s%N; }
ft=() fp=() ct=() cp=()
for ((i = 1; i <= GET_RUNS; i++)); do
  t0=$(ns)
  "$FLEET" --endpoints "$TLS_EP" --cacert "$PKI/ca.crt" --cert "$PKI/fleet.crt" \
    --key "$PKI/fleet.key" get foo >/dev/null
  t1=$(ns)
  "$FLEET" --endpoints "$PLAIN_EP" get foo >/dev/null
  t2=$(ns)
  ETCDCTL_API=3 etcdctl --endpoints "$TLS_EP" --cacert "$PKI/ca.crt" --cert "$PKI/fleet.crt" \
    --key "$PKI/fleet.key" get foo >/dev/null
  t3=$(ns)
  ETCDCTL_API=3 etcdctl --endpoints "$PLAIN_EP" get foo >/dev/null
  t4=$(ns)
  ft+=($(((t1 - t0) / 1000)))
  fp+=($(((t2 - t1) / 1000)))
  ct+=($(((t3 - t2) / 1000)))
  cp+=($(((t4 - t3) / 1000)))
done
echo "etcd-fleet get, TLS (us):       ${ft[*]}"
echo "etcd-fleet get, plaintext (us): ${fp[*]}"
echo "etcdctl get, TLS (us):          ${ct[*]}"
echo "etcdctl get, plaintext (us):    ${cp[*]}"
mft=$(median "${ft[@]}") mfp=$(median "${fp[@]}") mct=$(median "${ct[@]}") mcp=$(median "${cp[@]}")
echo "medians: etcd-fleet TLS $mft us, plaintext $mfp us; etcdctl TLS $mct us, plaintext $mcp us"
awk -v t="$mft" -v p="$mfp" 'BEGIN { printf "etcd-fleet get: TLS/plaintext %.2f; the TLS handshake is %.0f%% of a one-shot get\n", t / p, 100 * (t - p) / t }'
awk -v t="$mct" -v p="$mcp" 'BEGIN { printf "etcdctl get:    TLS/plaintext %.2f; the TLS handshake is %.0f%% of a one-shot get\n", t / p, 100 * (t - p) / t }'
awk -v f="$mft" -v c="$mct" 'BEGIN { printf "TLS get, etcd-fleet/etcdctl: %.2f\n", f / c }'
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
