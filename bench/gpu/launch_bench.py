#!/usr/bin/python3
"""The GPU collector's cost per CUDA launch (issue 13's target: <= 1 us per launch over
untraced), on the fake CUPTI (tests/gpu/fake_cupti.c): gpu_app launches N tiny kernels back to
back, untraced (enable=0: no subscriber, no activity kind enabled, the fake's own call costs
only) and traced (gpu=1: weft's API callback slices and flows, the fake's records into weft's
buffers, their conversion on the fake's worker thread or at the flush). Interleaved rounds;
medians of the app's own wall ns per launch (the launch loop only) and of the whole process's
CPU time per launch (every thread: the conversion included). A real GPU adds CUPTI's own cost
(its callback dispatch and activity records), which this machine cannot measure.

usage: launch_bench.py BUILD_DIR [N] [ROUNDS]"""
import os
import statistics
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
app = os.path.join(build, "gpu_app")
fake = os.path.join(build, "fake_cupti.so")


def one(opts, tmp):
    env = dict(os.environ, WEFT_OPTIONS=opts)
    p = subprocess.Popen([app, "launches", str(n)], stdout=subprocess.PIPE, env=env, cwd=tmp, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        sys.exit(f"gpu_app failed: {status}")
    wall = float(out.split("ns per launch")[1])
    cpu = (ru.ru_utime + ru.ru_stime) * 1e9 / n
    return wall, cpu


with tempfile.TemporaryDirectory() as tmp:
    modes = {"untraced (enable=0)": "enable=0",
             "weft gpu=1": f"output={tmp}/t.data:gpu=1:cupti_lib={fake}"}
    res = {m: [] for m in modes}
    for r in range(rounds):
        for m, o in modes.items():
            res[m].append(one(o, tmp))
            subprocess.run(["rm", "-rf", f"{tmp}/t.data", f"{tmp}/t.data.old"])
    # drops at the default buffer size, from the last traced round
    opts = f"output={tmp}/d.data:gpu=1:cupti_lib={fake}"
    one(opts, tmp)
    info = subprocess.run([os.path.join(build, "weft"), "info", f"{tmp}/d.data"], capture_output=True,
                          text=True).stdout
    dropped = [l.split()[1] for l in info.splitlines() if l.startswith("dropped:")]

base = res["untraced (enable=0)"]
bw, bc = statistics.median(x[0] for x in base), statistics.median(x[1] for x in base)
print(f"{n} launches of a tiny kernel, {rounds} interleaved rounds, medians")
print()
print("| mode | wall ns/launch (launch loop) | CPU ns/launch (process) | over untraced: wall | CPU |")
print("|---|---|---|---|---|")
for m, v in res.items():
    w, c = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
    print(f"| {m} | {w:.0f} | {c:.0f} | {w - bw:+.0f} | {c - bc:+.0f} |")
print()
print(f"records dropped in a traced run of {n} launches at the default buffer size: "
      f"{dropped[0] if dropped else '?'}")
