#!/usr/bin/python3
"""The real-GPU checks of `make test-gpu` (scripts/test-gpu.sh): cuda_app (tests/gpu/cuda_app.cu)
under `weft record --gpu`, the .pftrace read back with trace_processor, then the launch overhead.
Prints PASS/FAIL per check and the measured figures; exits 1 on any failure.

usage: check_real.py BUILD_DIR OUT_DIR"""
import json
import os
import shutil
import statistics
import subprocess
import sys

build, out = sys.argv[1], sys.argv[2]
src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
weft = os.path.join(build, "weft")
app = os.path.join(out, "cuda_app")
tp = os.path.join(src, "tests", "tp", "tp_query.mjs")
failed = []


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'}: {name}{': ' + str(detail) if detail else ''}")
    if not ok:
        failed.append(name)


def sql(pf, *queries):
    p = subprocess.run(["node", tp, pf, *queries], capture_output=True, text=True, check=True)
    return [r["rows"] for r in json.loads(p.stdout)]


data = os.path.join(out, "real.data")
shutil.rmtree(data, ignore_errors=True)
p = subprocess.run([weft, "record", "--gpu", "-o", data, "--", app], capture_output=True, text=True)
print(p.stdout + p.stderr)
check("cuda_app ran under weft record --gpu", p.returncode == 0 and "kernels 16" in p.stdout, p.returncode)
check("no 'gpu unavailable'", "unavailable" not in p.stderr)
info = subprocess.run([weft, "info", data], capture_output=True, text=True).stdout
print(info)
pf = os.path.join(data, "trace.pftrace")
gpu, kernels, args, flows, copies, sync, dev, errs = sql(
    pf,
    "select name from track where name like 'GPU %:%' and parent_id is null",
    "select s.name, t.name as track, count(*) as n from slice s join track t on s.track_id = t.id "
    "join track p on t.parent_id = p.id where s.category = 'gpu_kernel' and p.name like 'GPU %' group by 1, 2",
    "select a.key from slice s join args a using(arg_set_id) where s.category = 'gpu_kernel' "
    "and s.id = (select min(id) from slice where category = 'gpu_kernel')",
    "select o.name as src, i.category as cat from flow f join slice o on f.slice_out = o.id "
    "join slice i on f.slice_in = i.id",
    "select name, extract_arg(arg_set_id, 'debug.bytes') as bytes from slice where category = 'gpu_memcpy'",
    "select ts, dur from slice where name = 'sync kernel'",
    "select ts, dur from slice where name like 'spin_kernel%'",
    "select name, value from stats where value > 0 and severity in ('error', 'data_loss')")
print("GPU tracks:", gpu)
print("kernels:", kernels)
check("a 'GPU N: NAME' track", len(gpu) >= 1, gpu)
check("kernel slices on 'stream N' tracks under it", sum(r["n"] for r in kernels) == 16 and
      all(r["track"].startswith("stream ") for r in kernels), kernels)
keys = {r["key"] for r in args}
need = {"debug." + k for k in ("grid", "block", "registers_per_thread", "static_shared_bytes", "dynamic_shared_bytes",
                               "local_bytes_per_thread", "occupancy", "correlation_id")}
check("kernel arguments", need <= keys, sorted(need - keys))
launch = [r for r in flows if r["src"].startswith("cudaLaunchKernel") and r["cat"] == "gpu_kernel"]
check("an arrow from each cudaLaunchKernel to its kernel", len(launch) == 16, len(launch))
check("memcpy slices both ways", {"Memcpy HtoD", "Memcpy DtoH"} <= {r["name"] for r in copies}, copies)
m = [l for l in info.splitlines() if l.strip().startswith("gpu")]
check("weft info: 0 records dropped by CUPTI", m and " 0 dropped" in m[0], m)
check("trace_processor: no errors", not errs, errs)
if sync and dev:
    h, d = sync[0], dev[0]
    early = h["ts"] - d["ts"]                          # > 0: the kernel starts before its host scope
    late = (d["ts"] + d["dur"]) - (h["ts"] + h["dur"])  # > 0: it ends after the scope
    print(f"sync kernel: device {d['dur']} ns inside host scope {h['dur']} ns; "
          f"start {-early} ns after the scope's, end {-late} ns before the scope's end")
    check("clock alignment: the sync kernel inside its host scope within 2 us", early <= 2000 and late <= 2000,
          (early, late))
else:
    check("the sync kernel and its scope", False, (sync, dev))


def launches(traced):
    d = os.path.join(out, "launch.data")
    shutil.rmtree(d, ignore_errors=True)
    cmd = [weft, "record", "--gpu", "--no-convert", "-o", d, "--", app, "launches", "100000"] \
        if traced else [app, "launches", "100000"]
    env = dict(os.environ, **({} if traced else {"WEFT_OPTIONS": "enable=0"}))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return float(r.stdout.split("ns per launch")[1])


rounds = {"untraced": [], "weft --gpu": []}
for _ in range(5):
    rounds["untraced"].append(launches(False))
    rounds["weft --gpu"].append(launches(True))
base = statistics.median(rounds["untraced"])
for k, v in rounds.items():
    print(f"{k}: median {statistics.median(v):.0f} ns per launch (rounds {', '.join(f'{x:.0f}' for x in v)})")
over = statistics.median(rounds["weft --gpu"]) - base
check("launch overhead <= 1 us", over <= 1000, f"{over:.0f} ns")
print("test-gpu:", "FAILED: " + ", ".join(failed) if failed else "every check passed")
sys.exit(1 if failed else 0)
