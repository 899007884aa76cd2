#!/usr/bin/python3
"""libweft-mpi.so's cost per MPI call (issue 19's target: recording <= ~60 ns over untraced,
--mpi=off within noise, <= 8 B on disk per call). bench/mpi/mpi_bench.c under MPICH (mpicc.mpich,
mpirun.mpich), three modes interleaved over ROUNDS rounds, medians: untraced (no weft), weft
record --mpi=off (the library loaded, calls passed through), weft record (recording). procnull
is the wrappers' own cost (MPI returns at once); pingpong (2 ranks, 8 bytes) and allreduce
(2 ranks, one double) are real calls on a 2-core machine, where MPICH's busy polling makes
them noisy. Bytes on disk per call: the recorded directory's event bytes / the calls made.

usage: mpi_bench.py BUILD_DIR [N] [ROUNDS]"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
weft = os.path.join(build, "weft")
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_bench.c")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        sys.exit(f"{cmd} failed: {p.stderr}")
    m = re.search(r"ns/call ([\d.]+) cpu/call ([\d.]+) calls (\d+)", p.stdout)
    return float(m.group(1)), float(m.group(2)), int(m.group(3))


def disk_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".wevents"))


with tempfile.TemporaryDirectory() as tmp:
    app = os.path.join(tmp, "mpi_bench")
    subprocess.run(["mpicc.mpich", "-O2", "-o", app, src], check=True)
    print(f"# {n} calls per run, {rounds} interleaved rounds, medians (MPICH 4.0, this machine)")
    print("| workload | mode | wall ns/call | CPU ns/call | over untraced (wall / CPU) | disk B/call |")
    print("|---|---|---|---|---|---|")
    for work, np_, calls_n in (("procnull", 1, n), ("pingpong", 2, n // 10), ("allreduce", 2, n // 10)):
        launcher = ["mpirun.mpich", "-np", str(np_), app, work, str(calls_n)]
        modes = {"untraced": [], "--mpi=off": ["--mpi=off"], "recording": []}
        res = {m: [] for m in modes}
        disk = []
        for i in range(rounds):
            for m, opts in modes.items():
                if m == "untraced":
                    res[m].append(run(launcher))
                else:
                    d = os.path.join(tmp, f"d{i}{m}")
                    res[m].append(run([weft, "record", "-q", "--no-convert", "-o", d, *opts, "--", *launcher]))
                    if m == "recording":
                        disk.append(disk_bytes(d) / res[m][-1][2] / np_)
        base = [statistics.median(x[k] for x in res["untraced"]) for k in (0, 1)]
        for m in modes:
            w = statistics.median(x[0] for x in res[m])
            c = statistics.median(x[1] for x in res[m])
            b = f"{statistics.median(disk):.1f}" if m == "recording" else "-"
            print(f"| {work} | {m} | {w:.1f} | {c:.1f} | {w - base[0]:+.1f} / {c - base[1]:+.1f} | {b} |")
