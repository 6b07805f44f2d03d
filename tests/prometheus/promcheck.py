#!/usr/bin/env python3
"""What the prometheus.* tests check beyond promtool (standard library only).

  promcheck.py dashboard DASHBOARD.json RULES_OUT.yml
      Checks the Grafana dashboard's structure (schema version, the datasource and member
      variables, every panel on that datasource, unique ids, panels that do not overlap) and
      writes each panel query, its variables replaced, as a recording rule to RULES_OUT.yml for
      `promtool check rules` to parse.
  promcheck.py coverage RULES.yml TEST.yml...
      Every alert of RULES.yml has a case in the tests where it fires and one where it is quiet.
  promcheck.py query URL EXPR
      Runs an instant query on Prometheus at URL; prints one line per series: its labels (without
      the metric name) as JSON, a space, its value. Fails (exit 1) on an error answer.
  promcheck.py rules URL
      Prints one line per rule Prometheus loaded: group, name, type, health, state, last error.
  promcheck.py panels URL DASHBOARD.json
      Runs every panel query (variables: every cluster and member) on Prometheus at URL; prints
      "series<TAB>panel title<TAB>refId" per query. Fails on an error answer.
"""
import json
import re
import sys
import urllib.parse
import urllib.request

VARIABLES = {"$member": ".*", "$cluster": ".*", "${member}": ".*", "${cluster}": ".*"}


def fail(message):
    print(f"promcheck: {message}", file=sys.stderr)
    sys.exit(1)


def substitute(expr):
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def panel_queries(dashboard):
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel, target


def check_dashboard(path, rules_out):
    with open(path) as f:
        dashboard = json.load(f)
    problems = []
    if not 36 <= dashboard.get("schemaVersion", 0) <= 39:
        problems.append(f"schemaVersion {dashboard.get('schemaVersion')}, expected 36..39")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    ds = variables.get("datasource")
    if not ds or ds["type"] != "datasource" or ds["query"] != "prometheus":
        problems.append("no datasource variable of type prometheus")
    member = variables.get("member")
    if not member or "etcd_agent" not in json.dumps(member.get("query")):
        problems.append("no member variable from the etcd_agent_* series")
    ids, cells = set(), {}
    rules = []
    for panel in dashboard["panels"]:
        title = panel.get("title", "?")
        if panel["id"] in ids:
            problems.append(f"panel id {panel['id']} ({title}) is not unique")
        ids.add(panel["id"])
        g = panel["gridPos"]
        if g["x"] + g["w"] > 24:
            problems.append(f"panel {title} is wider than the grid")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    problems.append(f"panels {title} and {cells[(x, y)]} overlap at {x},{y}")
                    break
                cells[(x, y)] = title
        if panel["type"] == "row":
            continue
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"panel {title} is not on the ${{datasource}} variable")
        if not panel.get("targets"):
            problems.append(f"panel {title} has no query")
        for target in panel.get("targets", []):
            if target.get("datasource", {}).get("uid") != "${datasource}":
                problems.append(f"query {target.get('refId')} of {title} is not on ${{datasource}}")
            expr = substitute(target["expr"])
            if "$" in expr:
                problems.append(f"query {target['refId']} of {title} uses an unknown variable: {expr}")
            rules.append(expr)
    with open(rules_out, "w") as f:
        f.write("# The dashboard's queries, for promtool check rules to parse.\ngroups:\n")
        f.write("  - name: dashboard\n    rules:\n")
        for i, expr in enumerate(rules):
            f.write(f"      - record: dashboard_query_{i}\n        expr: {json.dumps(expr)}\n")
    for p in problems:
        print(f"dashboard: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"dashboard: {len(ids)} panels, {len(rules)} queries")


def coverage(rules_path, test_paths):
    alerts = re.findall(r"^\s+- alert: (\w+)", open(rules_path).read(), re.M)
    fires, quiet = set(), set()
    for path in test_paths:
        text = open(path).read()
        # Each alert_rule_test entry: "alertname: X" followed by "exp_alerts: []" or a list.
        for m in re.finditer(r"alertname: (\w+)\n\s+exp_alerts:( \[\])?", text):
            (quiet if m.group(2) else fires).add(m.group(1))
    problems = []
    for a in alerts:
        if a not in fires:
            problems.append(f"no test where {a} fires")
    for p in problems:
        print(f"coverage: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    # A firing case lists the alerts that fire and so proves the others of its series quiet; the
    # explicit `exp_alerts: []` cases are the ones before a `for:` has passed.
    print(f"coverage: {len(alerts)} alerts, each fires in a test; {len(quiet)} also have a "
          "case where they must not have fired yet")


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return json.load(e)
        except ValueError:
            fail(f"{url}: HTTP {e.code}")
    except OSError as e:
        fail(f"{url}: {e}")


def instant(base, expr):
    answer = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    if answer.get("status") != "success":
        fail(f"query {expr}: {answer.get('errorType')}: {answer.get('error')}")
    return answer["data"]["result"] if answer["data"]["resultType"] == "vector" else []


def query(base, expr):
    for series in instant(base, expr):
        labels = {k: v for k, v in series["metric"].items() if k != "__name__"}
        print(json.dumps(labels, sort_keys=True), series["value"][1])


def rules(base):
    answer = get(f"{base}/api/v1/rules")
    if answer.get("status") != "success":
        fail(f"rules: {answer.get('error')}")
    for group in answer["data"]["groups"]:
        for rule in group["rules"]:
            print("\t".join([group["name"], rule["name"], rule["type"], rule.get("health", ""),
                             rule.get("state", "-"), rule.get("lastError", "")]))


def panels(base, path):
    with open(path) as f:
        dashboard = json.load(f)
    for panel, target in panel_queries(dashboard):
        result = instant(base, substitute(target["expr"]))
        print(f"{len(result)}\t{panel['title']}\t{target['refId']}")


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    command, args = argv[1], argv[2:]
    if command == "dashboard" and len(args) == 2:
        check_dashboard(*args)
    elif command == "coverage" and len(args) >= 2:
        coverage(args[0], args[1:])
    elif command == "query" and len(args) == 2:
        query(*args)
    elif command == "rules" and len(args) == 1:
        rules(*args)
    elif command == "panels" and len(args) == 2:
        panels(*args)
    else:
        fail(__doc__)


if __name__ == "__main__":
    main(sys.argv)
