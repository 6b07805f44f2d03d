#!/usr/bin/env bash
# Sourced by the tests/systemd/*_inner.sh scripts (inside their private mount namespace): a real
# systemd user manager with its own D-Bus session bus, started here and stopped by PID, plus the
# small test helpers. The sourcing script sets WORK (a temp dir) first and defines
# stop_units (what to stop before the manager goes) before calling start_user_manager.
SD_PID=""
DBUS_PID=""
failures=0
passes=0

cleanup() {
  set +e
  if [ -n "$SD_PID" ]; then
    stop_units
    kill "$SD_PID" 2>/dev/null && wait "$SD_PID" 2>/dev/null
  fi
  [ -n "$DBUS_PID" ] && kill "$DBUS_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

check() {  # check NAME COMMAND...: runs COMMAND, counts a failure with NAME
  if "${@:2}"; then echo "ok   - $1"; passes=$((passes + 1)); else echo "FAIL - $1"; failures=$((failures + 1)); fi
}

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ARCHITECTURE.md §6: a tmpfs over /run/systemd (this namespace only), a session bus, and
# `systemd --user`, waited for (bounded) until it runs.
start_user_manager() {
  mount -t tmpfs tmpfs /run/systemd
  mkdir -p /run/systemd/system
  export XDG_RUNTIME_DIR="$WORK/run" XDG_CONFIG_HOME="$WORK/config"
  mkdir -p "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME/systemd/user"
  chmod 700 "$XDG_RUNTIME_DIR"
  export DBUS_SESSION_BUS_ADDRESS="unix:path=$XDG_RUNTIME_DIR/bus"
  DBUS_PID=$(dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork --print-pid)
  /lib/systemd/systemd --user >"$WORK/systemd.log" 2>&1 &
  SD_PID=$!
  local state=""
  for _ in $(seq 1 100); do
    state=$(systemctl --user is-system-running 2>/dev/null || true)
    [ "$state" = running ] || [ "$state" = degraded ] && break
    sleep 0.1
  done
  check "user manager is running ($state)" test "$state" = running -o "$state" = degraded
}
