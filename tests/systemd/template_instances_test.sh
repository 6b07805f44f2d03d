#!/usr/bin/env bash
# The single-host topology (dev and CI): three etcd-agent@ instances (m1, m2, m3) under a real
# systemd user manager, on one address with auto-allocated etcd ports (client_port = 0,
# peer_port = 0), bootstrapped into one cluster by `etcd-fleet bootstrap`. The instance unit is
# units/etcd-agent@.service itself, with only what a user manager cannot do removed (User=,
# Group=, the sandboxing that needs privileges) and the paths pointed at the build.
#
# Run as root: it starts its own private user manager and D-Bus in a mount namespace and stops
# both (by PID) on exit. Usage: template_instances_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "${1:?usage: template_instances_test.sh BUILD_DIR}" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root for unshare -m"; exit 77; fi
exec unshare -m bash "$(dirname "$0")/template_instances_inner.sh" "$BUILD" "$(cd "$(dirname "$0")/../.." && pwd)"
