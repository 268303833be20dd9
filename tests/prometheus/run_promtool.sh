#!/bin/sh
# CTest prometheus_rules: Debian's promtool checks contrib/prometheus's rules, runs their unit
# tests (redisgo_task.rules.test.yml) and parses every query of the Grafana dashboard.
# No promtool is a failure, not a skip: scripts/setup installs it (package prometheus).
# Usage: run_promtool.sh <source dir>
set -eu
src=${1:?usage: run_promtool.sh <source dir>}
if ! command -v promtool >/dev/null 2>&1; then
  echo "prometheus_rules: promtool not found; install it with scripts/setup (Debian package prometheus)" >&2
  exit 1
fi
promtool check rules "$src/contrib/prometheus/redisgo_task.rules.yml"
# The test file names the rules relative to itself.
(cd "$src/tests/prometheus" && promtool test rules redisgo_task.rules.test.yml)

# The dashboard's queries, with Grafana's variables given values, as recording rules:
# `promtool check rules` then parses each one.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$src/contrib/grafana/redisgo_task.json" "$tmp/dashboard.rules.yml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
exprs = []
def walk(panels):
    for p in panels:
        walk(p.get("panels", []))
        for t in p.get("targets", []):
            exprs.append(t["expr"])
walk(dash["panels"])
if not exprs:
    sys.exit("the dashboard has no queries")
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace("$key", ".*")
        out.write("      - record: dashboard:q%d\n        expr: %s\n" % (i, json.dumps(e)))
print("dashboard: %d queries" % len(exprs))
PY
promtool check rules "$tmp/dashboard.rules.yml"
