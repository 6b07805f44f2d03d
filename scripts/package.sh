#!/usr/bin/env bash
# Builds the etcd-agent packages from an already built CMake build directory:
#   scripts/package.sh BUILD_DIR OUT_DIR
# writes OUT_DIR/etcd-agent_<version>_amd64.deb, OUT_DIR/etcd-agent-<version>.x86_64.rpm and a
# flat apt repository OUT_DIR/apt/ (Packages, Packages.gz, Release) holding the .deb:
#   echo "deb [trusted=yes] file:$OUT_DIR/apt ./" > /etc/apt/sources.list.d/etcd-agent.list
#   apt-get update && apt install etcd-agent
# Both packages hold the files `cmake --install --prefix /usr --strip` stages (packaging/
# CMakeLists.txt lists them), plus packaging/deb/ (control, maintainer scripts, changelog,
# copyright) or packaging/rpm/etcd-agent.spec. Nothing is compiled here.
set -euo pipefail
umask 022

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG=$ROOT/packaging

die() {
  echo "package.sh: $*" >&2
  exit 1
}

[ $# -eq 2 ] || die "usage: scripts/package.sh BUILD_DIR OUT_DIR"
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "build directory $1 does not exist: build first (./dev build)"
mkdir -p "$2"
OUT=$(cd "$2" && pwd)

for tool in dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev dpkg-gencontrol:dpkg-dev rpmbuild:rpm \
  apt-ftparchive:apt-utils; do
  command -v "${tool%%:*}" >/dev/null ||
    die "${tool%%:*} is missing: apt-get install ${tool##*:} (./dev package installs it)"
done
for bin in agent/etcd-agent fleetctl/etcd-fleet; do
  [ -x "$BUILD/$bin" ] || die "$BUILD/$bin is missing: build it first (ninja -C $BUILD etcd-agent etcd-fleet)"
done

VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
[ -n "$VERSION" ] || die "no CMAKE_PROJECT_VERSION in $BUILD/CMakeCache.txt: configure $BUILD with cmake"
CHANGELOG_VERSION=$(dpkg-parsechangelog -l "$PKG/deb/changelog" -S Version)
[ "$CHANGELOG_VERSION" = "$VERSION" ] ||
  die "packaging/deb/changelog is at $CHANGELOG_VERSION but CMake's project version is $VERSION:" \
    "add a changelog entry (dch -v $VERSION) and one to packaging/rpm/etcd-agent.spec"
# Reproducible timestamps: the changelog's date, not the build's.
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$PKG/deb/changelog" -S Timestamp)
export SOURCE_DATE_EPOCH

WORK=$(mktemp -d "${TMPDIR:-/tmp}/etcd-agent-package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# 1. The files both packages share.
STAGE=$WORK/stage
DESTDIR=$STAGE cmake --install "$BUILD" --prefix /usr --strip >/dev/null
for f in usr/bin/etcd-agent usr/bin/etcd-fleet etc/etcd-agent/agent.toml \
  lib/systemd/system/etcd-agent.service usr/share/man/man8/etcd-agent.8; do
  [ -e "$STAGE/$f" ] || die "cmake --install did not stage /$f: re-configure $BUILD (cmake -S $ROOT -B $BUILD)"
done
find "$STAGE/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +

# 2. The .deb: the staged tree plus Debian's copyright and changelog, control from
#    packaging/deb/control with Depends completed by dpkg-shlibdeps.
DEB=$WORK/deb
cp -a "$STAGE" "$DEB"
DOC=$DEB/usr/share/doc/etcd-agent
install -m 0644 "$PKG/deb/copyright" "$DOC/copyright"
gzip -9n <"$PKG/deb/changelog" >"$DOC/changelog.Debian.gz"
install -d "$DEB/DEBIAN"
install -m 0755 "$PKG/deb/postinst" "$PKG/deb/prerm" "$PKG/deb/postrm" "$DEB/DEBIAN/"
install -m 0644 "$PKG/deb/conffiles" "$DEB/DEBIAN/"

# md5sums for `dpkg --verify` and debsums (conffiles are tracked by dpkg itself).
(
  cd "$DEB"
  find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 md5sum >DEBIAN/md5sums
)
chmod 0644 "$DEB/DEBIAN/md5sums"

SRC=$WORK/src
install -d "$SRC/debian"
cp "$PKG/deb/control" "$PKG/deb/changelog" "$SRC/debian/"
# gRPC, protobuf, abseil, c-ares, RE2, OpenSSL and zlib are linked in statically (see
# cmake/GrpcDeps.cmake): Built-Using names the source versions, so a security update of one of
# them shows that this package needs a rebuild.
BUILT_USING=""
if ! readelf -d "$DEB/usr/bin/etcd-agent" | grep -q 'NEEDED.*libgrpc'; then
  BUILT_USING=$(dpkg-query -W -f='${source:Package} (= ${source:Version})\n' \
    libgrpc++-dev libprotobuf-dev libabsl-dev libc-ares-dev libre2-dev libssl-dev zlib1g-dev |
    sort -u | paste -sd, | sed 's/,/, /g')
fi
(
  cd "$SRC"
  dpkg-shlibdeps -Tdebian/substvars -e"$DEB/usr/bin/etcd-agent" -e"$DEB/usr/bin/etcd-fleet"
  dpkg-gencontrol -petcd-agent -P"$DEB" -Tdebian/substvars -fdebian/files \
    ${BUILT_USING:+"-DBuilt-Using=$BUILT_USING"}
)
DEB_FILE=$OUT/etcd-agent_${VERSION}_amd64.deb
# --root-owner-group: every file root:root without needing root to build.
dpkg-deb --root-owner-group -Zxz --build "$DEB" "$DEB_FILE" >/dev/null

# 3. The .rpm from the same staged files (packaging/rpm/etcd-agent.spec copies them).
rpmbuild -bb --quiet \
  --define "_topdir $WORK/rpm" \
  --define "stagedir $STAGE" \
  --define "pkgversion $VERSION" \
  --define "_build_id_links none" \
  "$PKG/rpm/etcd-agent.spec" >"$WORK/rpmbuild.log" 2>&1 ||
  { cat "$WORK/rpmbuild.log" >&2; die "rpmbuild failed (log above)"; }
RPM_BUILT=$(find "$WORK/rpm/RPMS" -name "etcd-agent-$VERSION-1.*.rpm" | head -n1)
[ -n "$RPM_BUILT" ] || die "rpmbuild wrote no etcd-agent-$VERSION-1.*.rpm under $WORK/rpm/RPMS"
RPM_FILE=$OUT/etcd-agent-${VERSION}.x86_64.rpm
cp "$RPM_BUILT" "$RPM_FILE"

# 4. The flat apt repository: `deb [trusted=yes] file:$OUT/apt ./`.
APT=$OUT/apt
rm -rf "$APT"
install -d "$APT"
cp "$DEB_FILE" "$APT/"
(
  cd "$APT"
  apt-ftparchive packages . >Packages
  gzip -9nk Packages
  apt-ftparchive \
    -o APT::FTPArchive::Release::Origin=etcd-agent \
    -o APT::FTPArchive::Release::Label=etcd-agent \
    -o APT::FTPArchive::Release::Architectures=amd64 \
    -o APT::FTPArchive::Release::Description="etcd-agent $VERSION (local)" \
    release . >"$WORK/Release"
  mv "$WORK/Release" Release
)

for f in "$DEB_FILE" "$RPM_FILE"; do
  printf '%s\t%s\n' "$(du -h "$f" | cut -f1)" "$f"
done
echo "apt repository: $APT (deb [trusted=yes] file:$APT ./)"
