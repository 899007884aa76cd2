#!/usr/bin/python3
"""record_ab.py NEW_WEFT BASE_WEFT [ROUNDS]: the CPU a Python call costs under `weft record
--python` (the whole process tree's, from os.wait4: the program, weft's threads and weft record
itself), for two builds of weft, interleaved: per round and build, calls_workload.py's loop with
0 and with 1,000,000 calls; prints each build's medians and the difference a call. A check of
hotpaths.py's py311 rows when they swing."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WL = os.path.join(HERE, "calls_workload.py")
N = 1000000


def cpu_ns(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        sys.exit(f"record_ab: {cmd} failed ({status})")
    return (ru.ru_utime + ru.ru_stime) * 1e9


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    builds = {"new": sys.argv[1], "base": sys.argv[2]}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    res = {b: {0: [], N: []} for b in builds}
    tmp = tempfile.mkdtemp(prefix="weft-record-ab-")
    data = os.path.join(tmp, "d")
    try:
        for _ in range(rounds):
            for size in (0, N):
                for b, weft in builds.items():
                    shutil.rmtree(data, ignore_errors=True)
                    res[b][size].append(cpu_ns([weft, "record", "-q", "--no-convert", "-o", data, "--python", "--",
                                                "/usr/bin/python3", WL, "loop", str(size)]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for b in builds:
        z, n = statistics.median(res[b][0]), statistics.median(res[b][N])
        print(f"{b}: 0 calls {z / 1e6:.1f} ms, {N} calls {n / 1e6:.1f} ms, {(n - z) / N:.2f} ns a call "
              f"(the call itself included), medians of {rounds}")


if __name__ == "__main__":
    main()
