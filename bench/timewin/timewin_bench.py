#!/usr/bin/env python3
"""`weft convert --time` of 1 s out of a 60 s trace vs a full convert (issue 20's target: the
window in <= 1/20 of the full convert's time), and what the time index costs the writer.

usage: bench/timewin/timewin_bench.py [BUILD] [ROUNDS]   (BUILD: a build with tests, default build)

Records tests/programs/timephases for ~60 s (60,000 steps of ~1 ms, 100 instants each: ~6.2 M events,
1M chunks), then converts it ROUNDS times in full and ROUNDS times for the window 30:31 (1 s),
interleaved, and prints the medians of wall, user and system time and peak memory; then the
same window from a copy of the trace without its index (the fallback for older traces). The
index's writer cost: weft_index_scan timed over every chunk of the trace (bench/timewin/
index_cost), against the writer threads' CPU that `weft info` reports."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
from test_time_window import strip_index  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
WEFT = os.path.join(BUILD, "weft")


def timed(cmd):
    p = subprocess.run(["/usr/bin/time", "-f", "@@ %e %U %S %M", *cmd], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{cmd} failed: {p.stderr}")
    m = re.search(r"@@ (\S+) (\S+) (\S+) (\S+)", p.stderr)
    return [float(m.group(i)) for i in range(1, 5)]


def main():
    d = tempfile.mkdtemp(prefix="weft-timewin-bench-")
    try:
        trace = os.path.join(d, "trace")
        subprocess.run([os.path.join(BUILD, "timephases"), "60000", "100", "1000"], check=True,
                       env=dict(os.environ, WEFT_OPTIONS=f"output={trace}"))
        info = subprocess.run([WEFT, "info", trace], capture_output=True, text=True, check=True).stdout
        for line in info.splitlines():
            if re.match(r"^(span|events|bytes disk):|^\s+(recorded|overhead):", line):
                print("#", line.strip())
        old = os.path.join(d, "old")
        shutil.copytree(trace, old)
        strip_index(old)
        runs = {"full": [], "window 30:31": [], "window 30:31, no index": []}
        for _ in range(ROUNDS):
            runs["full"].append(timed([WEFT, "convert", trace, "-q", "-o", os.path.join(d, "full.pftrace")]))
            runs["window 30:31"].append(timed([WEFT, "convert", trace, "-q", "--time", "30:31",
                                               "-o", os.path.join(d, "win.pftrace")]))
        for _ in range(max(1, ROUNDS // 2)):
            runs["window 30:31, no index"].append(timed([WEFT, "convert", old, "-q", "--time", "30:31",
                                                         "-o", os.path.join(d, "old.pftrace")]))
        full = statistics.median(r[0] for r in runs["full"])
        print(f"# {ROUNDS} interleaved rounds (fallback: {max(1, ROUNDS // 2)}), medians")
        print("| convert | wall s | user s | sys s | peak MiB | of full (wall) | .pftrace bytes |")
        print("|---|---|---|---|---|---|---|")
        for name, rs in runs.items():
            w, u, s, m = (statistics.median(r[i] for r in rs) for i in range(4))
            out = {"full": "full", "window 30:31": "win", "window 30:31, no index": "old"}[name]
            size = os.path.getsize(os.path.join(d, out + ".pftrace"))
            print(f"| {name} | {w:.3f} | {u:.3f} | {s:.3f} | {m / 1024:.0f} | 1/{full / w:.0f} | {size} |")
        cost = os.path.join(BUILD, "index_cost")
        if os.path.exists(cost):
            print(subprocess.run([cost, trace], capture_output=True, text=True, check=True).stdout.strip())
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
