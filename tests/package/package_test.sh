#!/usr/bin/env bash
# package.Contents: builds the .deb, the .rpm and the flat apt repository from the build directory
# with scripts/package.sh (into a temp dir), then checks what they contain and declare:
#   tests/package/package_test.sh SOURCE_DIR BUILD_DIR [OUT_DIR]
# With OUT_DIR the packages are kept there (ctest: the fixture package.Lifecycle installs).
# The .deb is unpacked into a throwaway root with `dpkg --root` and its maintainer scripts run
# against stub commands; nothing on this machine's dpkg database, apt configuration, users or
# units is touched. Installing on a booted host is the e2e tests' job.
set -euo pipefail

SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/package-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }
# has FILE LINE: FILE has exactly this line.
has() { grep -qxF -- "$2" "$1"; }

VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
OUT=${3:-$TMP/out}
rm -rf "$OUT"
"$SRC/scripts/package.sh" "$BUILD" "$OUT"
DEB=$OUT/etcd-agent_${VERSION}_amd64.deb
RPM=$OUT/etcd-agent-${VERSION}.x86_64.rpm
for f in "$DEB" "$RPM" "$OUT/apt/Packages" "$OUT/apt/Packages.gz" "$OUT/apt/Release" \
  "$OUT/apt/etcd-agent_${VERSION}_amd64.deb"; do
  [ -f "$f" ] || {
    echo "FAIL: scripts/package.sh did not write $f" >&2
    exit 1
  }
done
echo "sizes: deb $(stat -c %s "$DEB") bytes, rpm $(stat -c %s "$RPM") bytes"

# ---- .deb: contents -------------------------------------------------------------------------
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' >"$TMP/deb.list"
deb_files=(
  /usr/bin/etcd-agent /usr/bin/etcd-fleet
  /lib/systemd/system/etcd-agent.service /lib/systemd/system/etcd-agent@.service
  /etc/etcd-agent/agent.toml
  /usr/share/man/man8/etcd-agent.8.gz /usr/share/man/man1/etcd-fleet.1.gz
  /usr/share/bash-completion/completions/etcd-fleet
  /usr/share/polkit-1/rules.d/50-etcd-agent.rules
  /usr/share/etcd-agent/prometheus/etcd-agent-rules.yml /usr/share/etcd-agent/prometheus/rules_test.yml
  /usr/share/etcd-agent/prometheus/rules_long_test.yml /usr/share/etcd-agent/grafana/etcd-agent-dashboard.json
  /usr/share/doc/etcd-agent/README.md /usr/share/doc/etcd-agent/copyright
  /usr/share/doc/etcd-agent/changelog.Debian.gz
)
for doc in "$SRC"/docs/*.md; do deb_files+=("/usr/share/doc/etcd-agent/docs/$(basename "$doc")"); done
for f in "${deb_files[@]}"; do
  has "$TMP/deb.list" "$f" || fail "the .deb lacks $f"
done
# Member data is created by postinst, never shipped (dpkg would try to remove it).
grep -q '^/var/lib' "$TMP/deb.list" && fail "the .deb ships something under /var/lib"
dpkg-deb -c "$DEB" | awk '$2 != "root/root" {print}' | grep . &&
  fail "the .deb has files not owned by root/root"
pass "deb contents ($(wc -l <"$TMP/deb.list") entries)"

# ---- .deb: control ----------------------------------------------------------------------------
field() { dpkg-deb -f "$DEB" "$1"; }
[ "$(field Package)" = etcd-agent ] || fail "Package is $(field Package)"
[ "$(field Version)" = "$VERSION" ] || fail "Version is $(field Version), CMake says $VERSION"
[ "$(field Architecture)" = amd64 ] || fail "Architecture is $(field Architecture)"
DEPENDS=$(field Depends)
echo "Depends: $DEPENDS"
depends_on() { [[ ", $DEPENDS," == *", $1"[\ ,]* ]]; }
# etcd-client: the agent runs etcdctl snapshot restore (bootstrap --from-snapshot).
for p in etcd-server etcd-client adduser init-system-helpers; do
  depends_on "$p" || fail "Depends lacks $p: $DEPENDS"
done
# promtool and the server for the rules in /usr/share/etcd-agent/prometheus, usually on another host.
[ "$(field Suggests)" = prometheus ] || fail "Suggests is '$(field Suggests)', not prometheus"

# The shared libraries the staged binaries need, found independently of dpkg-shlibdeps: each
# NEEDED library's Debian package must be in Depends.
dpkg-deb -x "$DEB" "$TMP/x"
for bin in etcd-agent etcd-fleet; do
  readelf -d "$TMP/x/usr/bin/$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u >"$TMP/needed"
while read -r lib; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found {print $NF; found = 1}')
  [ -n "$path" ] || {
    fail "cannot find $lib (NEEDED by the binaries) with ldconfig"
    continue
  }
  pkg=""
  for candidate in "$path" "$(readlink -f "$path")" "/usr$path"; do
    pkg=$(dpkg -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
  done
  [ -n "$pkg" ] || {
    fail "no Debian package owns $path ($lib)"
    continue
  }
  depends_on "$pkg" || fail "$lib ($pkg) is NEEDED but not in Depends: $DEPENDS"
done <"$TMP/needed"
pass "Depends: etcd-server, etcd-client and the packages of $(paste -sd' ' "$TMP/needed")"

# Stripped: no symbol tables in the shipped binaries.
for bin in etcd-agent etcd-fleet; do
  readelf -S "$TMP/x/usr/bin/$bin" | grep -q '\.symtab' && fail "/usr/bin/$bin is not stripped"
  "$TMP/x/usr/bin/$bin" --version >/dev/null || fail "the packaged $bin does not run (--version)"
done
pass "binaries stripped and runnable: $(stat -c '%n %s' "$TMP"/x/usr/bin/* | sed "s|$TMP/x||" | paste -sd' ')"

# The shipped files are the project's.
cmp -s "$TMP/x/etc/etcd-agent/agent.toml" "$SRC/config/agent.toml" ||
  fail "/etc/etcd-agent/agent.toml differs from config/agent.toml"
for u in etcd-agent.service etcd-agent@.service; do
  cmp -s "$TMP/x/lib/systemd/system/$u" "$SRC/units/$u" || fail "/lib/systemd/system/$u differs from units/$u"
done
rules=$TMP/x/usr/share/polkit-1/rules.d/50-etcd-agent.rules
for s in 'subject.user == "etcd-agent"' org.freedesktop.systemd1.manage-unit-files \
  org.freedesktop.systemd1.reload-daemon; do
  grep -qF "$s" "$rules" || fail "the polkit rule lacks $s"
done
# Man pages: gzipped, and groff has no complaint.
for m in man8/etcd-agent.8 man1/etcd-fleet.1; do
  page=$TMP/x/usr/share/man/$m.gz
  warnings=$(zcat "$page" | groff -man -Tutf8 -ww -z 2>&1) || fail "groff cannot render $m"
  [ -z "$warnings" ] || fail "groff warns about $m: $warnings"
  zcat "$page" | grep -q '^\.SH NAME' || fail "$m has no NAME section"
done
grep -qF 'manage\-unit\-files' <(zcat "$TMP/x/usr/share/man/man8/etcd-agent.8.gz") ||
  fail "etcd-agent(8) does not say what the polkit rule allows"
pass "agent.toml, units, polkit rule, man pages"

# The alert rules and the dashboard are the project's; the packaged rules pass their packaged
# tests (promtool from Debian's prometheus, which ./dev test installs).
for f in prometheus/etcd-agent-rules.yml prometheus/rules_test.yml prometheus/rules_long_test.yml \
  grafana/etcd-agent-dashboard.json; do
  cmp -s "$TMP/x/usr/share/etcd-agent/$f" "$SRC/packaging/$f" || fail "/usr/share/etcd-agent/$f differs from packaging/$f"
done
if ! command -v promtool >/dev/null; then
  fail "promtool is missing: apt-get install prometheus (./dev test installs it)"
elif ! (cd "$TMP/x/usr/share/etcd-agent/prometheus" && promtool test rules rules_test.yml rules_long_test.yml) \
  >"$TMP/promtool.log" 2>&1; then
  cat "$TMP/promtool.log" >&2
  fail "promtool test rules fails on the packaged rules"
fi
pass "Prometheus rules and Grafana dashboard in /usr/share/etcd-agent (promtool test rules on the packaged files)"

# The unit's sandbox: systemd's own exposure score of the shipped etcd-agent.service must stay
# at 1.2 or below, whatever the unit gains (the socket, the keys, the user). What is left is what
# an etcd member needs: the network (PrivateNetwork, IPAddressDeny, AF_INET), the Unix socket,
# the host's users and root directory, /proc/net for the port checks (ProcSubset).
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (Debian's systemd)"
score_line=$(systemd-analyze security --offline=yes --no-pager \
  "$TMP/x/lib/systemd/system/etcd-agent.service" 2>&1 | grep 'Overall exposure level') ||
  fail "systemd-analyze security --offline=yes gave no exposure level for etcd-agent.service"
score=$(sed -E 's/.*etcd-agent.service: ([0-9.]+).*/\1/' <<<"$score_line")
awk -v s="$score" 'BEGIN { exit !(s + 0 <= 1.2) }' ||
  fail "etcd-agent.service's exposure level is $score (systemd-analyze security), above 1.2"
pass "systemd-analyze security: etcd-agent.service exposure $score"

# ---- .deb: conffiles and maintainer scripts ----------------------------------------------------
dpkg-deb -e "$DEB" "$TMP/ctl"
[ "$(cat "$TMP/ctl/conffiles")" = /etc/etcd-agent/agent.toml ] ||
  fail "conffiles is not exactly /etc/etcd-agent/agent.toml: $(cat "$TMP/ctl/conffiles")"
for s in postinst prerm postrm; do
  [ -x "$TMP/ctl/$s" ] || fail "DEBIAN/$s is missing or not executable"
  sh -n "$TMP/ctl/$s" || fail "DEBIAN/$s has a syntax error"
done
[ -s "$TMP/ctl/md5sums" ] || fail "DEBIAN/md5sums is missing"
(cd "$TMP/x" && md5sum --quiet -c "$TMP/ctl/md5sums") || fail "DEBIAN/md5sums does not match the files"
pass "conffiles, maintainer scripts, md5sums"

# The maintainer scripts, run against stubs that log their arguments: every command that would
# change this machine is a stub (checked: the log must show each call we expect).
STUBS=$TMP/stubs
mkdir -p "$STUBS"
for c in adduser mkdir chown chmod rm deb-systemd-helper deb-systemd-invoke dpkg-statoverride; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$c" "$TMP" >"$STUBS/$c"
done
# dpkg-statoverride --list: no override. systemctl: is-enabled answers $ETCD_STATE.
printf '#!/bin/sh\necho "dpkg-statoverride $*" >>"%s/calls"\nexit 1\n' "$TMP" >"$STUBS/dpkg-statoverride"
cat >"$STUBS/systemctl" <<EOF
#!/bin/sh
echo "systemctl \$*" >>"$TMP/calls"
case "\$1" in
  is-enabled) [ "\$ETCD_STATE" = absent ] && { echo "Failed to get unit file state" >&2; exit 1; }
              echo "\$ETCD_STATE"; [ "\$ETCD_STATE" = enabled ] ;;
  is-active) exit 3 ;;
esac
EOF
chmod +x "$STUBS"/*
run_script() { # STATE SCRIPT ARGS...: runs a maintainer script, prints its stdout
  local state=$1 script=$2
  shift 2
  : >"$TMP/calls"
  ETCD_STATE=$state PATH="$STUBS:$PATH" sh "$TMP/ctl/$script" "$@"
}
called() { grep -qF -- "$1" "$TMP/calls"; }

out=$(run_script enabled postinst configure) || fail "postinst configure failed with etcd.service enabled"
called "adduser --system --group --quiet --home /var/lib/etcd-agent --no-create-home --shell /usr/sbin/nologin" ||
  fail "postinst does not create the etcd-agent system user: $(cat "$TMP/calls")"
called "chmod 0700 /var/lib/etcd-agent" || fail "postinst does not make /var/lib/etcd-agent 0700"
called "chown etcd-agent:etcd-agent /var/lib/etcd-agent" || fail "postinst does not chown /var/lib/etcd-agent"
called "systemctl disable --quiet etcd.service" || fail "postinst does not disable an enabled etcd.service"
if [ "$(grep -c . <<<"$out")" != 1 ] || [[ $out != *"Debian's etcd.service"* ]]; then
  fail "postinst should print one line about etcd.service, printed: $out"
fi
called "deb-systemd-helper enable etcd-agent.service" || fail "postinst does not enable etcd-agent.service"
for state in masked absent disabled; do
  out=$(run_script "$state" postinst configure) || fail "postinst fails when etcd.service is $state"
  called "systemctl disable" && fail "postinst disables etcd.service when it is $state"
  [ -z "$out" ] || fail "postinst prints something when etcd.service is $state: $out"
done
run_script enabled postrm remove >/dev/null || fail "postrm remove failed"
called "deb-systemd-helper mask etcd-agent.service" || fail "postrm remove does not mask the unit"
called "rm " && fail "postrm remove deletes something: $(cat "$TMP/calls")"
run_script enabled postrm purge >/dev/null || fail "postrm purge failed"
called "rm -rf /etc/etcd-agent" || fail "postrm purge does not delete /etc/etcd-agent"
called "deb-systemd-helper purge etcd-agent.service" || fail "postrm purge does not purge the unit's state"
grep '^rm ' "$TMP/calls" | grep -v '^rm -rf /etc/etcd-agent$' | grep . &&
  fail "postrm purge deletes more than /etc/etcd-agent"
run_script enabled prerm remove >/dev/null || fail "prerm remove failed"
pass "maintainer scripts (etcd.service enabled, masked, absent, disabled; remove; purge)"

# A throwaway dpkg root: unpack (no preinst runs), then dpkg's own view of the package.
ROOT=$TMP/root
mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates"
: >"$ROOT/var/lib/dpkg/status"
: >"$ROOT/var/lib/dpkg/available"
dpkg --root="$ROOT" --force-depends --unpack "$DEB" >/dev/null || fail "dpkg --root --unpack failed"
dpkg --root="$ROOT" -s etcd-agent | grep -q '^ /etc/etcd-agent/agent.toml ' ||
  fail "dpkg --root does not list /etc/etcd-agent/agent.toml as a conffile"
if [ ! -x "$ROOT/usr/bin/etcd-agent" ] || [ ! -f "$ROOT/lib/systemd/system/etcd-agent.service" ]; then
  fail "dpkg --root did not unpack the binaries and units"
fi
pass "dpkg --root unpack"

# ---- .rpm -----------------------------------------------------------------------------------------
rpm -qpl "$RPM" >"$TMP/rpm.list"
for f in /usr/bin/etcd-agent /usr/bin/etcd-fleet /usr/lib/systemd/system/etcd-agent.service \
  /usr/lib/systemd/system/etcd-agent@.service /etc/etcd-agent/agent.toml \
  /usr/share/man/man8/etcd-agent.8.gz /usr/share/man/man1/etcd-fleet.1.gz \
  /usr/share/bash-completion/completions/etcd-fleet /usr/share/polkit-1/rules.d/50-etcd-agent.rules \
  /usr/share/etcd-agent/prometheus/etcd-agent-rules.yml /usr/share/etcd-agent/grafana/etcd-agent-dashboard.json \
  /usr/share/doc/etcd-agent/README.md /var/lib/etcd-agent; do
  has "$TMP/rpm.list" "$f" || fail "rpm -qpl lacks $f"
done
rpm -qp --qf '%{NAME} %{VERSION} %{RELEASE} %{ARCH}\n' "$RPM" | grep -qx "etcd-agent $VERSION 1 x86_64" ||
  fail "rpm is not etcd-agent $VERSION-1 x86_64: $(rpm -qp --qf '%{NVRA}' "$RPM")"
rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$RPM" | grep -qx '/etc/etcd-agent/agent.toml cn' ||
  fail "agent.toml is not %config(noreplace) in the rpm"
rpm -qp --qf '[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME}\n]' "$RPM" |
  grep -qx '/var/lib/etcd-agent drwx------ etcd-agent' || fail "/var/lib/etcd-agent is not 0700 etcd-agent in the rpm"
rpm -qp --scripts "$RPM" >"$TMP/rpm.scripts"
for s in 'useradd -r -g etcd-agent -d /var/lib/etcd-agent' 'groupadd -r etcd-agent' \
  'systemctl --no-reload preset etcd-agent.service' \
  'systemctl --no-reload disable --now etcd-agent.service' 'systemctl try-restart etcd-agent.service'; do
  grep -qF -- "$s" "$TMP/rpm.scripts" || fail "rpm -qp --scripts lacks: $s"
done
for section in preinstall postinstall preuninstall postuninstall; do
  grep -q "^$section scriptlet" "$TMP/rpm.scripts" || fail "the rpm has no $section scriptlet"
done
rpm -qp --requires "$RPM" >"$TMP/rpm.requires"
# toml++ is compiled in (header-only): no libtomlplusplus.so.3 to require.
for r in etcd /usr/bin/etcdctl 'libsystemd.so.0()(64bit)' 'libstdc++.so.6()(64bit)' \
  'libc.so.6()(64bit)' shadow-utils; do
  has "$TMP/rpm.requires" "$r" || fail "rpm -qp --requires lacks $r"
done
if grep -q 'libgrpc' "$TMP/rpm.requires" && ! grep -q 'libgrpc' "$TMP/needed"; then
  fail "the rpm requires gRPC libraries the binaries do not load"
fi
# rpm unpacks it into a throwaway root (no scriptlets: they would run on this machine's paths).
RROOT=$TMP/rpmroot
mkdir -p "$RROOT"
if rpm --root "$RROOT" --initdb &&
  rpm --root "$RROOT" -i --nodeps --noscripts --notriggers "$RPM" >"$TMP/rpm-install.log" 2>&1; then
  if [ ! -x "$RROOT/usr/bin/etcd-agent" ] || [ ! -f "$RROOT/usr/lib/systemd/system/etcd-agent.service" ]; then
    fail "rpm --root -i did not unpack the binaries and units"
  fi
  [ "$(stat -c %a "$RROOT/var/lib/etcd-agent")" = 700 ] || fail "rpm --root -i: /var/lib/etcd-agent is not 0700"
else
  cat "$TMP/rpm-install.log" >&2
  fail "rpm --root -i failed"
fi
pass "rpm files, scriptlets, requires, rpm --root install"

# ---- apt repository -----------------------------------------------------------------------------
APT=$OUT/apt
grep -qx 'Package: etcd-agent' "$APT/Packages" || fail "Packages lacks etcd-agent"
grep -qx "Version: $VERSION" "$APT/Packages" || fail "Packages lacks Version: $VERSION"
grep -qx "Filename: ./etcd-agent_${VERSION}_amd64.deb" "$APT/Packages" || fail "Packages has a wrong Filename"
grep -qx "SHA256: $(sha256sum <"$APT/etcd-agent_${VERSION}_amd64.deb" | cut -d' ' -f1)" "$APT/Packages" ||
  fail "Packages' SHA256 does not match the .deb"
cmp -s <(zcat "$APT/Packages.gz") "$APT/Packages" || fail "Packages.gz is not Packages"
for f in Packages Packages.gz; do
  grep -q "^ $(sha256sum <"$APT/$f" | cut -d' ' -f1) .* $f\$" "$APT/Release" || fail "Release lacks the SHA256 of $f"
done
# apt itself reads the repository: a private apt state (sources, lists, cache) in the temp dir,
# this machine's dpkg status read only. `install -s` simulates: nothing is installed.
A=$TMP/aptstate
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/sources.list.d" "$A/preferences.d"
echo "deb [trusted=yes] file:$APT ./" >"$A/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$A/sources.list" -o "Dir::Etc::SourceParts=$A/sources.list.d"
  -o "Dir::Etc::Preferences=$A/preferences" -o "Dir::Etc::PreferencesParts=$A/preferences.d"
  -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o Debug::NoLocking=1
  -o APT::Sandbox::User=root -q)
apt-get "${apt_opts[@]}" update >"$TMP/apt-update.log" 2>&1 || {
  cat "$TMP/apt-update.log" >&2
  fail "apt-get update on the flat repository failed"
}
apt-get "${apt_opts[@]}" -s install etcd-agent >"$TMP/apt-install.log" 2>&1 || true
grep -q "^Inst etcd-agent ($VERSION " "$TMP/apt-install.log" || {
  cat "$TMP/apt-install.log" >&2
  fail "apt-get -s install etcd-agent does not install $VERSION from the repository"
}
pass "apt repository (Packages, Packages.gz, Release; apt-get update and install -s)"

# ---- bash completion matches `etcd-fleet --help` ---------------------------------------------
FLEET=$TMP/x/usr/bin/etcd-fleet
COMPLETION=$TMP/x/usr/share/bash-completion/completions/etcd-fleet
"$FLEET" --help | sed -n '/^COMMANDS/,/^OPTIONS/p' | grep -P '^\t' | sed 's/^\t//; s/\t.*//' >"$TMP/commands"
[ -s "$TMP/commands" ] || fail "cannot read the command list from etcd-fleet --help"
# The packaged copy of packaging/etcd-fleet.bash-completion (what shellcheck reads for it).
# shellcheck source=../../packaging/etcd-fleet.bash-completion
source "$COMPLETION"
read -r -d '' -a top <<<"$_etcd_fleet_commands" || true
while read -r cmd sub; do
  [[ " ${top[*]} " == *" $cmd "* ]] || fail "completion lacks the command $cmd"
  if [ -n "$sub" ]; then
    [[ " $(_etcd_fleet_subcommands "$cmd") " == *" $sub "* ]] || fail "completion lacks $cmd $sub"
  fi
  want=$("$FLEET" "$cmd" ${sub:+"$sub"} --help 2>&1 | sed -n '/^OPTIONS/,/^GLOBAL/p' |
    grep -oP '^\s+(-\w, )?--\K[a-z-]+(\[=|=)?' | grep -v '^help' | sed 's/\[=$//; s/^/--/' | sort | paste -sd' ' || true)
  got=$(_etcd_fleet_command_flags "$cmd${sub:+ $sub}" | tr ' ' '\n' | grep '^--' | sort | paste -sd' ' || true)
  [ "$want" = "$got" ] || fail "completion flags of '$cmd${sub:+ $sub}': have '$got', etcd-fleet --help says '$want'"
done <"$TMP/commands"
for c in "${top[@]}"; do
  grep -q "^$c\\b" "$TMP/commands" || fail "completion offers $c, which etcd-fleet --help does not list"
done
want=$("$FLEET" put --help 2>&1 | sed -n '/^GLOBAL OPTIONS/,$p' | grep -oP '^\s+(-\w, )?--\K[a-z-]+(\[=|=)?' |
  sed 's/\[=$//; s/^/--/' | sort | paste -sd' ')
got=$(tr -s ' \n' '\n' <<<"$_etcd_fleet_global_flags" | grep '^--' | grep -v -e '^--help$' -e '^--version$' |
  sort | paste -sd' ')
[ "$want" = "$got" ] || fail "completion global flags: have '$got', etcd-fleet --help says '$want'"
pass "bash completion matches etcd-fleet --help ($(wc -l <"$TMP/commands") commands)"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all package checks passed"
