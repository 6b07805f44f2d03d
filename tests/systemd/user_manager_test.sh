#!/usr/bin/env bash
# etcd-agent as a Type=notify unit under a real systemd user manager (ARCHITECTURE.md §6):
# `systemctl --user status` shows it active (running) with the member in its Status: line, and
# `etcd-fleet autostart enable|disable` (SetAutostart over sd-bus) flips `is-enabled`.
#
# Run as root: it starts its own private user manager and D-Bus in a mount namespace and stops
# both (by PID) on exit. Usage: user_manager_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "${1:?usage: user_manager_test.sh BUILD_DIR}" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root for unshare -m"; exit 77; fi
exec unshare -m bash "$(dirname "$0")/user_manager_inner.sh" "$BUILD"
