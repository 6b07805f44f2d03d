#!/usr/bin/env bash
# prometheus.Rules: the alert rules and the Grafana dashboard that the packages install under
# /usr/share/etcd-agent, checked with Debian's promtool (package prometheus) without a server:
#   1. `promtool check rules` on packaging/prometheus/etcd-agent-rules.yml;
#   2. `promtool test rules` on its unit tests (synthetic series: each alert fires when it should
#      and stays quiet when it should not), and every alert of the file has a firing case there;
#   3. the dashboard's structure (promcheck.py dashboard), and every panel query parsed by
#      promtool as a recording rule.
# Usage: rules_test.sh SOURCE_DIR
set -euo pipefail
SRC=$(cd "${1:?usage: rules_test.sh SOURCE_DIR}" && pwd)
RULES_DIR=$SRC/packaging/prometheus
DASHBOARD=$SRC/packaging/grafana/etcd-agent-dashboard.json
CHECK=$SRC/tests/prometheus/promcheck.py

command -v promtool >/dev/null ||
  { echo "FAIL: promtool is missing: apt-get install prometheus (./dev test installs it)" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/prometheus-rules-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

promtool check rules "$RULES_DIR/etcd-agent-rules.yml"
# promtool reads rule_files relative to the test file: run where they are.
(cd "$RULES_DIR" && promtool test rules rules_test.yml rules_long_test.yml)
python3 "$CHECK" coverage "$RULES_DIR/etcd-agent-rules.yml" "$RULES_DIR/rules_test.yml" \
  "$RULES_DIR/rules_long_test.yml"
python3 "$CHECK" dashboard "$DASHBOARD" "$TMP/dashboard-queries.yml"
promtool check rules "$TMP/dashboard-queries.yml"
echo "ok: rules, their tests and the dashboard"
