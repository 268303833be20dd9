#!/usr/bin/env python3
"""Two builds of redisgo_task side by side: bench.py's sections run alternately on each
(A, B, A, B, ...), so that a change in the machine's load falls on both, and each figure is
the median of the runs of one build, with the spread of those runs beside it.

  python3 bench/compare.py --a BUILD_A --b BUILD_B [--runs 5] [--sections handover,overhead,rss]
                           [--quick] [--out FILE.md]

A build is a CMake build directory (preset default) holding redisgo_task,
redisgo_lease_bench and redisgo_bench_stamp. Nothing here is asserted; it prints a table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (label, path into bench.py's results, unit): the figures that answer "is B worse than A?".
FIGURES = [
    ("handover median", ("handover", "median_ms"), "ms"),
    ("handover p99", ("handover", "p99_ms"), "ms"),
    ("overhead over `true`", ("overhead", "overhead_ms"), "ms"),
    ("start-up (`version`)", ("overhead", "startup_ms"), "ms"),
    ("peak RSS, supervise leader", ("rss", "vmhwm_kib"), "KiB"),
    ("fairness, largest deviation", ("fairness", "one node", "max_dev_pp"), "pp"),
    ("fairness, runs/s", ("fairness", "one node", "runs_per_s"), "/s"),
    ("herd: 200 standbys, handover median", ("herd", "200", "median_ms"), "ms"),
    ("herd: 200 standbys, commands 1 s after a release", ("herd", "200", "herd_commands", 0), ""),
    ("capacity: all 3 slots busy, one node", ("capacity", "one node", "all_busy_pct"), "%"),
    ("capacity: all 3 slots busy, 3 Redlock nodes", ("capacity", "3 Redlock nodes", "all_busy_pct"), "%"),
    ("capacity: 3 nodes' p90 end -> next start", ("capacity", "3 Redlock nodes", "gap_p90_ms"), "ms"),
]


def dig(d, path):
    for p in path:
        if isinstance(d, dict):
            d = d.get(p, d.get(str(p)))
        elif isinstance(d, list) and isinstance(p, int) and p < len(d):
            d = d[p]
        else:
            return None
        if d is None:
            return None
    return d if isinstance(d, (int, float)) else None


def run_once(build, sections, quick, out):
    argv = [sys.executable, os.path.join(HERE, "bench.py"), "--build", build, "--out", out, "--only", sections]
    if quick:
        argv.append("--quick")
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="build directory of the baseline")
    ap.add_argument("--b", required=True, help="build directory of the change")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sections", default="handover,overhead,rss")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    builds = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    got = {"A": [], "B": []}
    load = [open("/proc/loadavg", encoding="utf-8").read().split()[:3]]
    with tempfile.TemporaryDirectory(prefix="redisgo_compare.") as tmp:
        for i in range(args.runs):
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                print(f"run {i + 1}/{args.runs}: {name}", file=sys.stderr, flush=True)
                got[name].append(run_once(builds[name], args.sections, args.quick, os.path.join(tmp, f"{name}{i}.json")))
    load.append(open("/proc/loadavg", encoding="utf-8").read().split()[:3])
    lines = [f"A = `{builds['A']}`, B = `{builds['B']}`; {args.runs} interleaved runs of each "
             f"(sections {args.sections}{', quick' if args.quick else ''}); load average at start / end: "
             f"{' '.join(load[0])} / {' '.join(load[1])}",
             "",
             "| figure | A: median (min–max) | B: median (min–max) | B − A | spread of A |",
             "| --- | --- | --- | --- | --- |"]
    for label, path, unit in FIGURES:
        a = [v for v in (dig(r["results"], path) for r in got["A"]) if v is not None]
        b = [v for v in (dig(r["results"], path) for r in got["B"]) if v is not None]
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        lines.append(f"| {label} | {ma:.2f} {unit} ({min(a):.2f}–{max(a):.2f}) | {mb:.2f} {unit} "
                     f"({min(b):.2f}–{max(b):.2f}) | {mb - ma:+.2f} {unit} | {max(a) - min(a):.2f} {unit} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
