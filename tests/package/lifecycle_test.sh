#!/usr/bin/env bash
# package.Lifecycle: the .deb's whole life on one systemd-booted test host (tests/e2e/hosts.sh: the
# machine's OS in systemd-nspawn over an overlay, here with a private network so the package's
# default addresses 127.0.0.1:2377/2378 collide with nothing):
#   apt install etcd-agent   Debian's etcd.service (running) stopped and disabled, and said so;
#                            etcd-agent active, idle, "waiting for a bootstrap plan", as the
#                            system user etcd-agent, /var/lib/etcd-agent 0700; secure by
#                            default: "waiting for enrollment: put a token in
#                            /etc/etcd-agent/enroll.token", no plaintext on 127.0.0.1:2378
#   etcd-fleet autostart     disable / enable / status through the agent's socket (root on
#                            the host): the polkit rule lets
#                            the unprivileged agent (de)activate its own unit
#   apt-get --reinstall      the upgrade path: the agent restarts; a disabled unit stays disabled
#   apt remove               the agent stops, member data and config stay
#   apt purge                asks nothing, /etc/etcd-agent goes, member data stays
#   tests/package/lifecycle_test.sh SOURCE_DIR BUILD_DIR [DIST_DIR]   (root; exit 77 = skipped)
# DIST_DIR holds packages already built by scripts/package.sh (ctest: package.Contents's); without
# it they are built here.
set -euo pipefail

SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
if [ "$(id -u)" -ne 0 ] || ! command -v systemd-nspawn >/dev/null; then
  echo "SKIP: needs root and systemd-nspawn (apt-get install systemd-container)" >&2
  exit 77
fi
# shellcheck source=../e2e/hosts.sh
source "$SRC/tests/e2e/hosts.sh"

die() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { hosts_log "== $*"; }

hosts_init ""  # no deadline of its own: ctest's TIMEOUT bounds this test
DIST=${3:-}
if [ -z "$DIST" ]; then
  DIST=$HOSTS_DIR/dist
  step "packages: scripts/package.sh"
  "$SRC/scripts/package.sh" "$BUILD" "$DIST" >"$HOSTS_DIR/package.log" 2>&1 ||
    { cat "$HOSTS_DIR/package.log" >&2; die "scripts/package.sh failed"; }
fi
[ -f "$DIST/apt/Packages" ] || die "no apt repository in $DIST/apt: run scripts/package.sh $BUILD $DIST"

step "boot host p1 (private network; Debian's etcd.service enabled as the machine has it)"
# shellcheck disable=SC2034  # read by hosts.sh
HOSTS_NSPAWN_ARGS=(--private-network "--bind-ro=$DIST/apt:/debs")
host_start p1 --unmask etcd.service
host_wait p1
# The machine image may carry Docker's policy-rc.d ("start no service"): a real host has none.
# shellcheck disable=SC2016  # expanded inside the host
host_run p1 sh -ec '
  mkdir -p /etc/apt/sources.list.off
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
    [ -e "$f" ] && mv "$f" /etc/apt/sources.list.off/ || true
  done
  echo "deb [trusted=yes] file:/debs ./" > /etc/apt/sources.list.d/etcd-agent.list
  rm -f /usr/sbin/policy-rc.d
  systemctl start etcd.service || true'
etcd_before=$(host_run p1 systemctl is-active etcd.service || true)
hosts_log "p1: etcd.service is $etcd_before before the install"

step "apt install etcd-agent"
host_run p1 sh -ec 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt install -y etcd-agent' \
  >"$HOSTS_DIR/install.log" 2>&1 || { cat "$HOSTS_DIR/install.log" >&2; die "apt install etcd-agent failed"; }
grep "Debian's etcd.service" "$HOSTS_DIR/install.log" >&2 ||
  die "the install did not say that it stopped and disabled Debian's etcd.service"
[ "$(host_run p1 systemctl is-enabled etcd.service || true)" = disabled ] ||
  die "etcd.service is still enabled after the install"
! host_run p1 systemctl is-active --quiet etcd.service || die "etcd.service still runs after the install"

# Bounded wait for the agent: up and idle.
status=""
for ((i = 0; i < 100; i++)); do
  status=$(host_run p1 systemctl show -P StatusText etcd-agent.service || true)
  [[ $status == *"waiting for a bootstrap plan"* ]] && break
  sleep 0.2
done
[[ $status == *"waiting for a bootstrap plan"* ]] ||
  { host_run p1 systemctl status --no-pager etcd-agent >&2 || true; die "etcd-agent is not idle and waiting: '$status'"; }
[ "$(host_run p1 systemctl is-enabled etcd-agent.service)" = enabled ] || die "etcd-agent.service is not enabled"
[ "$(host_run p1 ps -o user= -p "$(host_run p1 systemctl show -P MainPID etcd-agent.service)")" = etcd-agent ] ||
  die "the agent does not run as etcd-agent"
[ "$(host_run p1 stat -c '%a %U %G' /var/lib/etcd-agent)" = "700 etcd-agent etcd-agent" ] ||
  die "/var/lib/etcd-agent is $(host_run p1 stat -c '%a %U %G' /var/lib/etcd-agent), not 700 etcd-agent"
host_run p1 getent passwd etcd-agent | grep -q ':/var/lib/etcd-agent:/usr/sbin/nologin$' ||
  die "the etcd-agent user is not a no-login system user with home /var/lib/etcd-agent"
host_run p1 test -s /usr/share/man/man8/etcd-agent.8.gz || die "no man page etcd-agent(8)"
[[ $status == *"waiting for enrollment: put a token in /etc/etcd-agent/enroll.token"* ]] ||
  die "the Status line does not say that the agent waits for an enrollment token: '$status'"
# Nothing in plaintext on the API port: a plaintext client gets no answer.
! host_run p1 etcd-fleet agent status --host 127.0.0.1 >/dev/null 2>&1 ||
  die "the installed agent answered plaintext on 127.0.0.1:2378 without enrollment"
hosts_log "p1: etcd-agent active: $status"

step "etcd-fleet autostart disable / enable (the polkit rule)"
# No --host: root on the host reaches its agent through /run/etcd-agent/api.sock.
fleet() { host_run p1 etcd-fleet "$@"; }
fleet autostart disable >&2 || die "etcd-fleet autostart disable failed (polkit rule?)"
[ "$(host_run p1 systemctl is-enabled etcd-agent.service || true)" = disabled ] ||
  die "autostart disable did not disable etcd-agent.service"
fleet autostart status | grep -q disabled || die "autostart status does not say disabled"
fleet autostart enable >&2 || die "etcd-fleet autostart enable failed"
[ "$(host_run p1 systemctl is-enabled etcd-agent.service)" = enabled ] ||
  die "autostart enable did not enable etcd-agent.service"
# Control: without the rule polkit refuses the unprivileged agent (polkitd reloads its rules when
# the directory changes; bounded wait).
rule=/usr/share/polkit-1/rules.d/50-etcd-agent.rules
host_run p1 mv "$rule" /root/
refused=no
for ((i = 0; i < 20; i++)); do
  before=$(host_run p1 systemctl is-enabled etcd-agent.service || true)
  if ! fleet autostart disable >/dev/null 2>&1; then
    refused=yes
    after=$(host_run p1 systemctl is-enabled etcd-agent.service || true)
    break
  fi
  # Still allowed (polkitd had not reloaded yet): back to enabled, which may be refused already.
  fleet autostart enable >/dev/null 2>&1 || true
  sleep 0.5
done
host_run p1 mv /root/50-etcd-agent.rules "$rule"
[ "$refused" = yes ] || die "autostart disable works even without the polkit rule: the test proves nothing"
[ "$after" = "$before" ] ||
  die "the refused autostart disable changed etcd-agent.service ($before -> $after)"
# The rule is back: enabled again once polkitd reloaded it (bounded).
for ((i = 0; i < 20; i++)); do
  fleet autostart enable >/dev/null 2>&1 && break
  sleep 0.5
done
[ "$(host_run p1 systemctl is-enabled etcd-agent.service)" = enabled ] ||
  die "etcd-agent.service is not enabled again with the polkit rule back"
hosts_log "p1: without the polkit rule autostart disable is refused"

step "reinstall (the upgrade path): an enabled agent restarts, a disabled one stays disabled"
pid_before=$(host_run p1 systemctl show -P MainPID etcd-agent.service)
host_run p1 sh -ec 'DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall etcd-agent' \
  >"$HOSTS_DIR/reinstall.log" 2>&1 || { cat "$HOSTS_DIR/reinstall.log" >&2; die "reinstall failed"; }
pid_after=$(host_run p1 systemctl show -P MainPID etcd-agent.service)
host_run p1 systemctl is-active --quiet etcd-agent.service || die "etcd-agent is not active after the reinstall"
[ "$pid_after" != "$pid_before" ] || die "the reinstall did not restart etcd-agent (MainPID $pid_before)"
fleet autostart disable >&2 || die "etcd-fleet autostart disable failed"
host_run p1 sh -ec 'DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall etcd-agent' \
  >>"$HOSTS_DIR/reinstall.log" 2>&1 || { cat "$HOSTS_DIR/reinstall.log" >&2; die "reinstall failed"; }
[ "$(host_run p1 systemctl is-enabled etcd-agent.service || true)" = disabled ] ||
  die "a reinstall enabled etcd-agent.service again after autostart disable"
fleet autostart enable >&2 || die "etcd-fleet autostart enable failed"

step "apt remove: the agent stops, data and config stay"
# Stand-in member data, owned like the agent's.
host_run p1 sh -ec 'install -d -o etcd-agent -g etcd-agent -m 0700 /var/lib/etcd-agent/p1/data
  echo member-data > /var/lib/etcd-agent/p1/data/marker'
host_run p1 sh -ec 'DEBIAN_FRONTEND=noninteractive apt remove -y etcd-agent' >"$HOSTS_DIR/remove.log" 2>&1 ||
  { cat "$HOSTS_DIR/remove.log" >&2; die "apt remove failed"; }
! host_run p1 systemctl is-active --quiet etcd-agent.service || die "etcd-agent still runs after apt remove"
host_run p1 test ! -e /usr/bin/etcd-agent || die "/usr/bin/etcd-agent is still there after apt remove"
host_run p1 grep -qx member-data /var/lib/etcd-agent/p1/data/marker || die "apt remove deleted member data"
host_run p1 test -f /etc/etcd-agent/agent.toml || die "apt remove deleted the configuration"

step "apt purge: config goes, data stays"
host_run p1 sh -ec 'DEBIAN_FRONTEND=noninteractive apt purge -y etcd-agent </dev/null' \
  >"$HOSTS_DIR/purge.log" 2>&1 || { cat "$HOSTS_DIR/purge.log" >&2; die "apt purge failed"; }
host_run p1 test ! -e /etc/etcd-agent || die "apt purge left /etc/etcd-agent"
host_run p1 grep -qx member-data /var/lib/etcd-agent/p1/data/marker || die "apt purge deleted member data"
grep -q 'kept the member data in /var/lib/etcd-agent' "$HOSTS_DIR/purge.log" ||
  die "apt purge did not say that it kept the member data"

echo "package lifecycle passed: install, autostart via polkit, remove, purge"
