#!/usr/bin/env bash
# The operator guide (docs/guide) run as written: every ```sh block of its pages, in page order,
# on eight systemd-booted test hosts (tests/e2e/hosts.sh). A block's info string says where it
# runs: ```sh host=m1 inside host m1, ```sh host=m5,m6,m7 inside each in turn, ```sh host=all
# inside m1..m4 (the guide's main fleet; m5..m8 form a second cluster on the bootstrap page),
# plain ```sh on the operator's machine (etcd-fleet from the build, HOME a temp dir: the default
# inventory and its pki/ are in its ~/.config/etcd-fleet). The pages use the addresses users have, 10.0.0.N for host mN; every block is
# rewritten to 127.0.0.(10+N) before it runs, and a block that names any other address outside
# 127.0.0.0/8 is refused, so that nothing is sent anywhere else. A discovery URL an operator block
# printed (http://HOST:2377/<32 hex digits>, or etcd-agent://HOST:2378/<32 hex digits> from an
# enrolled coordinator) replaces the example URL in later blocks, as a reader
# pastes theirs; so does an enrollment token it printed (etf1.<id>.<secret>.<CA hash>): an example
# token stands for the token printed last before a block first shows it, in every later block
# too, and so does its ID (`token revoke ID`). A block runs with `set -e`; the first failing one
# fails the test with its page, its number and its output.
#
# Usage (as root): guide_test.sh SOURCE_DIR BUILD_DIR [PACKAGES_DIR]. PACKAGES_DIR holds apt/
# (the repository scripts/package.sh builds); without it the packages are built into the work dir.
# Exit 77 (skipped) without root or systemd-nspawn.
set -euo pipefail

SRC=$(cd "${1:?usage: guide_test.sh SOURCE_DIR BUILD_DIR [PACKAGES_DIR]}" && pwd)
BUILD=$(cd "${2:?usage: guide_test.sh SOURCE_DIR BUILD_DIR [PACKAGES_DIR]}" && pwd)
PACKAGES=${3:-}
GUIDE="$SRC/docs/guide"
PAGES=(install.md bootstrap.md status.md replace.md snapshots.md security.md uninstall.md)
NAMES=(m1 m2 m3 m4 m5 m6 m7 m8)   # booted; m(N) is 10.0.0.N in the pages
ALL=(m1 m2 m3 m4)                  # host=all

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (overlay mounts, systemd-nspawn)"; exit 77; fi
if ! command -v systemd-nspawn >/dev/null; then
  echo "SKIP: systemd-nspawn is missing (apt-get install systemd-container)"
  exit 77
fi

# shellcheck source=../e2e/hosts.sh
source "$SRC/tests/e2e/hosts.sh"
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

hosts_init "${GUIDE_DEADLINE:-840}"
WORK=$HOSTS_DIR
mkdir -p "$WORK/blocks" "$WORK/operator" "$WORK/bin" "$WORK/cwd"

# Extract and rewrite every block before anything runs: a block with a foreign address stops the
# test here.
for page in "${PAGES[@]}"; do
  [ -f "$GUIDE/$page" ] || fail "docs/guide/$page is missing"
  extract "$page" "$WORK/blocks"
done
for f in "$WORK"/blocks/*.sh; do
  perl -pi -e 's/\b10\.0\.0\.([1-9])\b/"127.0.0." . (10 + $1)/ge' "$f"
  if foreign=$(grep -noE '\b([0-9]{1,3}\.){3}[0-9]{1,3}\b' "$f" | grep -vE ':127\.'); then
    block=$(basename "$f" .sh)
    fail "docs/guide/${block%.*}, block ${block##*.}: names an address outside 127.0.0.0/8 and" \
      "the guide's host addresses (line:address): $foreign; name hosts as docs/guide/README.md says"
  fi
done
nblocks=$(find "$WORK/blocks" -name '*.sh' | wc -l)
[ "$nblocks" -gt 0 ] || fail "no \`\`\`sh blocks in docs/guide"

# The operator's etcd-fleet: a copy (a rebuild during the test cannot swap it).
cp "$BUILD/fleetctl/etcd-fleet" "$WORK/bin/etcd-fleet"
if [ -n "$PACKAGES" ] && [ -s "$PACKAGES/apt/Packages" ]; then
  REPO=$(cd "$PACKAGES/apt" && pwd)
else
  "$SRC/scripts/package.sh" "$BUILD" "$WORK/dist" >"$WORK/package.log" 2>&1 ||
    { cat "$WORK/package.log" >&2; fail "building the packages failed"; }
  REPO=$WORK/dist/apt
fi
for i in 1 2 3 4 5 6 7 8; do
  for port in 2377 2378 2379 2380; do
    if (exec 3<>"/dev/tcp/127.0.0.1$i/$port") 2>/dev/null; then
      fail "127.0.0.1$i:$port is in use; stop whatever listens there (ss -ltnp) and retry"
    fi
  done
done

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

# run_block FILE WHERE: the block's output goes to stdout.
run_block() {
  local f=$1 where=$2 name
  if [ "$where" = operator ]; then
    (cd "$WORK/cwd" && env -u ETCDCTL_ENDPOINTS -u ETCD_FLEET_ENDPOINTS -u XDG_CONFIG_HOME \
      PATH="$WORK/bin:$PATH" HOME="$WORK/operator" bash -e "$f" </dev/null)
    return
  fi
  [ "$where" = all ] && where=$(IFS=,; echo "${ALL[*]}")
  for name in ${where//,/ }; do
    host_alive "$name" || { echo "host $name is not running"; return 1; }
    echo "[$name]"
    host_run "$name" bash -ec "$(cat "$f")" </dev/null || return 1
  done
}

DISCOVERY_URL_RE='(http://127\.0\.0\.[0-9]+:2377|etcd-agent://127\.0\.0\.[0-9]+:2378)/[0-9a-f]{32}'
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
    where=$(cat "$WORK/blocks/$page.$n.where")
    if grep -qE "$DISCOVERY_URL_RE" "$WORK/blocks/$page.$n.sh"; then
      [ -n "$discovery_url" ] ||
        fail "docs/guide/$page, block $n: shows a discovery URL but no earlier block printed one"
      URL=$discovery_url perl -pi -e \
        's{(?:http://127\.0\.0\.\d+:2377|etcd-agent://127\.0\.0\.\d+:2378)/[0-9a-f]{32}}{$ENV{URL}}g' \
        "$WORK/blocks/$page.$n.sh"
    fi
    while read -r example; do
      if [ -z "${token_for[$example]:-}" ]; then
        [ -n "$enroll_token" ] ||
          fail "docs/guide/$page, block $n: shows an enrollment token but no earlier block printed one"
        token_for[$example]=$enroll_token
      fi
      FROM=$example TO=${token_for[$example]} perl -pi -e 's{\Q$ENV{FROM}\E}{$ENV{TO}}g' \
        "$WORK/blocks/$page.$n.sh"
    done < <(grep -oE "$TOKEN_RE" "$WORK/blocks/$page.$n.sh" | sort -u)
    for example in "${!token_for[@]}"; do
      FROM=$(token_id "$example") TO=$(token_id "${token_for[$example]}") \
        perl -pi -e 's{\b\Q$ENV{FROM}\E\b}{$ENV{TO}}g' "$WORK/blocks/$page.$n.sh"
    done
    t=$(date +%s.%N)
    printf '\n===== %s block %d (%s)\n' "$page" "$n" "$where" >&2
    sed 's/^/  $ /' "$WORK/blocks/$page.$n.sh" >&2
    if ! run_block "$WORK/blocks/$page.$n.sh" "$where" >"$WORK/out" 2>&1; then
      sed 's/^/  | /' "$WORK/out" >&2
      fail "docs/guide/$page, block $n (runs on: $where)"
    fi
    sed 's/^/  | /' "$WORK/out" | cut -c1-220 >&2
    if [ "$where" = operator ] && printed=$(grep -oE "$DISCOVERY_URL_RE" "$WORK/out" | tail -n 1); then
      discovery_url=$printed
    fi
    if [ "$where" = operator ] && printed=$(grep -oE "$TOKEN_RE" "$WORK/out" | tail -n 1); then
      enroll_token=$printed
    fi
    hosts_log "   ($(hosts_since "$t") s)"
    n=$((n + 1))
  done
done
echo "guide: PASS, $nblocks blocks in $(hosts_since "$T0") s" >&2
