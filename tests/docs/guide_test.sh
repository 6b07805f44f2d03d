#!/usr/bin/env bash
# The operator guide (docs/guide) run as written: every ```sh block of its pages, in page order,
# on eight systemd-booted test hosts (tests/e2e/hosts.sh) that are separate machines on a network
# of their own (tests/e2e/netns.sh): host mN in a network namespace of its own on 192.0.2.N
# (TEST-NET-1), with its own 127.0.0.1 and ports, no default route. A block's info string says
# where it runs: ```sh host=m1 inside host m1, ```sh host=m5,m6,m7 inside each in turn, ```sh
# host=all inside m1..m4 (the guide's main fleet; m5..m8 form a second cluster on the bootstrap
# page), plain ```sh on the operator's machine: a namespace of that network too (192.0.2.100), with
# etcd-fleet from the build and HOME a temp dir (the default inventory and its pki/ are in its
# ~/.config/etcd-fleet).
#
# The pages use the addresses users have, 10.0.0.N for host mN, and the test maps them onto the
# namespaces: every block is rewritten 10.0.0.N -> 192.0.2.N just before it runs, and an address a
# block printed is mapped back 192.0.2.N -> 10.0.0.N before a later block takes it. A block that
# names any other address than the hosts' 10.0.0.N and a host's own 127.0.0.0/8 is refused before
# anything boots. Nothing in the machine's own network namespace ever talks to 192.0.2.x: only the
# hosts and the operator's namespace do.
#
# A discovery URL an operator block printed (http://HOST:2377/<32 hex digits>, or
# etcd-agent://HOST:2378/<32 hex digits> from an enrolled coordinator) replaces the example URL in
# later blocks, as a reader pastes theirs; so does an enrollment token it printed
# (etf1.<id>.<secret>.<CA hash>): an example token stands for the token printed last before a
# block first shows it, in every later block too, and so does its ID (`token revoke ID`). A block
# runs with `set -e`; the first failing one fails the test with its page, its number and its
# output. The log shows each block as it ran (192.0.2.N) and its output.
#
# Usage (as root): guide_test.sh SOURCE_DIR BUILD_DIR [PACKAGES_DIR]. PACKAGES_DIR holds apt/
# (the repository scripts/package.sh builds); without it the packages are built into the work dir.
# Exit 77 (skipped) without root, systemd-nspawn or network namespaces. Every host and namespace
# is torn down on exit, also on failure or when the deadline (GUIDE_DEADLINE, 840 s) passes.
set -euo pipefail

SRC=$(cd "${1:?usage: guide_test.sh SOURCE_DIR BUILD_DIR [PACKAGES_DIR]}" && pwd)
BUILD=$(cd "${2:?usage: guide_test.sh SOURCE_DIR BUILD_DIR [PACKAGES_DIR]}" && pwd)
PACKAGES=${3:-}
GUIDE="$SRC/docs/guide"
PAGES=(install.md bootstrap.md status.md replace.md snapshots.md security.md uninstall.md)
NAMES=(m1 m2 m3 m4 m5 m6 m7 m8)   # booted; mN is 10.0.0.N in the pages, 192.0.2.N in its namespace
ALL=(m1 m2 m3 m4)                  # host=all
OP_INDEX=100                       # the operator's namespace, "op": 192.0.2.100 (no page names it)

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
# shellcheck source=../e2e/hosts.sh
source "$SRC/tests/e2e/hosts.sh"
# shellcheck source=../e2e/netns.sh
source "$SRC/tests/e2e/netns.sh"
T0=$(date +%s.%N)
fail() {
  printf 'FAILED: %s\n' "$*" >&2
  exit 1
}

# Every page of the README's index is run; a page missing from the list above is a test defect.
for page in $(grep -oE '\]\([a-z]+\.md\)' "$GUIDE/README.md" | tr -d '])('); do
  [[ " ${PAGES[*]} " == *" $page "* ]] || fail "docs/guide/README.md lists $page: add it to PAGES"
done

# extract PAGE DIR: each ```sh block of PAGE goes to DIR/PAGE.N.sh, where it runs (operator, all,
# or host names) to DIR/PAGE.N.where.
extract() {
  local page=$1 out=$2
  awk -v out="$out/$page" '
    /^```sh( |$)/ {
      n++
      where = "operator"
      if (match($0, /host=[a-z0-9,]+/)) where = substr($0, RSTART + 5, RLENGTH - 5)
      f = out "." n
      print where > (f ".where"); close(f ".where")
      printf "" > (f ".sh")
      inblock = 1
      next
    }
    /^```/ && inblock { inblock = 0; close(f ".sh"); next }
    inblock { print > (f ".sh") }
  ' "$GUIDE/$page"
}

# The hosts' indexes (N of mN), as an alternation for the address patterns below: "1|2|...|8".
HOST_INDEXES=$(printf '%s\n' "${NAMES[@]#m}" | paste -sd'|')
# to_run FILE: the pages' 10.0.0.N -> 192.0.2.N (the guard below let only hosts' N through).
to_run() { perl -pi -e 's/\b10\.0\.0\.(\d+)\b/192.0.2.$1/g' "$1"; }
# to_page TEXT: an address a block printed, 192.0.2.N of host mN -> 10.0.0.N; fails on any other
# 192.0.2.x (the operator's, or no host's), which no page could show.
to_page() {
  local text=$1
  text=$(perl -pe "s/\\b192\\.0\\.2\\.($HOST_INDEXES)\\b/10.0.0.\$1/g" <<<"$text")
  if grep -qE '\b192\.0\.2\.[0-9]+\b' <<<"$text"; then return 1; fi
  echo "$text"
}

hosts_init "${GUIDE_DEADLINE:-840}"
WORK=$HOSTS_DIR
mkdir -p "$WORK/blocks" "$WORK/operator" "$WORK/bin" "$WORK/cwd"

# Extract every block before anything runs, and refuse the addresses no page may name: anything
# but the hosts' 10.0.0.N and a host's own loopback (127.0.0.0/8) would be sent somewhere the test
# does not own (192.0.2.x too: the pages name hosts as users do).
for page in "${PAGES[@]}"; do
  [ -f "$GUIDE/$page" ] || fail "docs/guide/$page is missing"
  extract "$page" "$WORK/blocks"
done
for f in "$WORK"/blocks/*.sh; do
  if foreign=$(grep -noE '\b([0-9]{1,3}\.){3}[0-9]{1,3}\b' "$f" |
    grep -vE ":(10\.0\.0\.($HOST_INDEXES)|127\.[0-9.]+)\$"); then
    block=$(basename "$f" .sh)
    fail "docs/guide/${block%.*}, block ${block##*.}: names an address other than those of the" \
      "hosts m1-m${#NAMES[@]} and 127.0.0.0/8 (line:address): $(paste -sd' ' <<<"$foreign");" \
      "name hosts as docs/guide/README.md says"
  fi
done
nblocks=$(find "$WORK/blocks" -name '*.sh' | wc -l)
[ "$nblocks" -gt 0 ] || fail "no \`\`\`sh blocks in docs/guide"

# The network: a namespace per host, mN on 192.0.2.N, and the operator's. Nothing of it is in the
# machine's network namespace, so no port of the machine is used (nothing to check beforehand).
netns_init || fail "creating the test network failed"
for name in "${NAMES[@]}"; do
  netns_add "$name" "${name#m}" || fail "netns_add $name failed"
done
netns_add op "$OP_INDEX" || fail "netns_add op failed"

# The operator's etcd-fleet: a copy (a rebuild during the test cannot swap it).
cp "$BUILD/fleetctl/etcd-fleet" "$WORK/bin/etcd-fleet"
if [ -n "$PACKAGES" ] && [ -s "$PACKAGES/apt/Packages" ]; then
  REPO=$(cd "$PACKAGES/apt" && pwd)
else
  "$SRC/scripts/package.sh" "$BUILD" "$WORK/dist" >"$WORK/package.log" 2>&1 ||
    { cat "$WORK/package.log" >&2; fail "building the packages failed"; }
  REPO=$WORK/dist/apt
fi

# The install page's repository path is the built one, read-only.
HOSTS_NSPAWN_ARGS=("--bind-ro=$REPO:/srv/etcd-agent-repo")
hosts_boot "${NAMES[@]}"
# What a real host has and a test host of this machine's image has not: apt sources that reach
# nothing (moved aside inside the overlay) and no Docker policy-rc.d (it forbids starting services).
for name in "${NAMES[@]}"; do
  # shellcheck disable=SC2016 # expanded inside the host
  host_run "$name" sh -ec '
    mkdir -p /etc/apt/sources.list.off
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
      [ -e "$f" ] && mv "$f" /etc/apt/sources.list.off/ || true
    done
    rm -f /usr/sbin/policy-rc.d'
done
hosts_log "hosts up in $(hosts_since "$T0") s; running $nblocks blocks"

# run_block FILE WHERE: the block's output goes to stdout. The operator's blocks run in its
# namespace (only the network is its own: files, processes and environment are the test's).
run_block() {
  local f=$1 where=$2 name
  if [ "$where" = operator ]; then
    (cd "$WORK/cwd" && netns_run op env -u ETCDCTL_ENDPOINTS -u ETCD_FLEET_ENDPOINTS \
      -u XDG_CONFIG_HOME PATH="$WORK/bin:$PATH" HOME="$WORK/operator" bash -e "$f" </dev/null)
    return
  fi
  [ "$where" = all ] && where=$(IFS=,; echo "${ALL[*]}")
  for name in ${where//,/ }; do
    host_alive "$name" || { echo "host $name is not running"; return 1; }
    echo "[$name]"
    host_run "$name" bash -ec "$(cat "$f")" </dev/null || return 1
  done
}

# What the agents said last, from every host still up (after a failed block: an agent that
# restarted or crashed says so there, not in the block's output).
agents_said() {
  local name
  for name in "${NAMES[@]}"; do
    host_alive "$name" || continue
    host_run "$name" journalctl -u etcd-agent --no-pager -o short-precise -n 15 2>/dev/null |
      grep -vx -- '-- No entries --' | cut -c1-300 | sed "s/^/$name| journal: /" >&2 || true
  done
}

# In the pages' terms (10.0.0.N), before a block is rewritten to run.
DISCOVERY_URL_RE='(http://10\.0\.0\.[0-9]+:2377|etcd-agent://10\.0\.0\.[0-9]+:2378)/[0-9a-f]{32}'
# In the run's terms (192.0.2.N), as an operator block prints it.
PRINTED_URL_RE='(http://192\.0\.2\.[0-9]+:2377|etcd-agent://192\.0\.2\.[0-9]+:2378)/[0-9a-f]{32}'
discovery_url=""
TOKEN_RE='etf1\.[a-z0-9]{6}\.[a-z0-9]{32}\.[0-9a-f]{64}'
enroll_token=""
# An example token, the first time a block shows it, stands for the last token printed; from then
# on it and its ID (token revoke ID) stand for that token and its ID.
declare -A token_for=()
token_id() { cut -d. -f2 <<<"$1"; }
for page in "${PAGES[@]}"; do
  n=1
  while [ -f "$WORK/blocks/$page.$n.sh" ]; do
    block=$WORK/blocks/$page.$n.sh
    where=$(cat "$WORK/blocks/$page.$n.where")
    if grep -qE "$DISCOVERY_URL_RE" "$block"; then
      [ -n "$discovery_url" ] ||
        fail "docs/guide/$page, block $n: shows a discovery URL but no earlier block printed one"
      URL=$discovery_url RE=$DISCOVERY_URL_RE perl -pi -e 's{$ENV{RE}}{$ENV{URL}}g' "$block"
    fi
    while read -r example; do
      if [ -z "${token_for[$example]:-}" ]; then
        [ -n "$enroll_token" ] ||
          fail "docs/guide/$page, block $n: shows an enrollment token but no earlier block printed one"
        token_for[$example]=$enroll_token
      fi
      FROM=$example TO=${token_for[$example]} perl -pi -e 's{\Q$ENV{FROM}\E}{$ENV{TO}}g' "$block"
    done < <(grep -oE "$TOKEN_RE" "$block" | sort -u)
    for example in "${!token_for[@]}"; do
      FROM=$(token_id "$example") TO=$(token_id "${token_for[$example]}") \
        perl -pi -e 's{\b\Q$ENV{FROM}\E\b}{$ENV{TO}}g' "$block"
    done
    to_run "$block"
    t=$(date +%s.%N)
    printf '\n===== %s block %d (%s)\n' "$page" "$n" "$where" >&2
    sed 's/^/  $ /' "$block" >&2
    if ! run_block "$block" "$where" >"$WORK/out" 2>&1; then
      sed 's/^/  | /' "$WORK/out" >&2
      agents_said
      fail "docs/guide/$page, block $n (runs on: $where)"
    fi
    sed 's/^/  | /' "$WORK/out" | cut -c1-220 >&2
    if [ "$where" = operator ] && printed=$(grep -oE "$PRINTED_URL_RE" "$WORK/out" | tail -n 1); then
      discovery_url=$(to_page "$printed") ||
        fail "docs/guide/$page, block $n: printed the discovery URL $printed, which names no host"
    fi
    if [ "$where" = operator ] && printed=$(grep -oE "$TOKEN_RE" "$WORK/out" | tail -n 1); then
      enroll_token=$printed
    fi
    hosts_log "   ($(hosts_since "$t") s)"
    n=$((n + 1))
  done
done
echo "guide: PASS, $nblocks blocks in $(hosts_since "$T0") s" >&2
