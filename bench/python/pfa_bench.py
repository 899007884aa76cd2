"""Cost per decorated call of PerfFlowAspect's annotation, on weft and (when its source is
given) PerfFlowAspect's own, against a plain call and @weft.trace.

    PYTHONPATH=BUILD/python /usr/bin/python3 bench/python/pfa_bench.py [--pfa-src DIR]
        [--calls N] [--rounds R]

Variants, each a loop of calls of a one-argument function that returns its argument:
  plain        the undecorated function
  weft.trace   @weft.trace (tracing on)
  pfa-on-weft  @perfflowaspect.aspect.critical_path() from this repository (python/perfflowaspect)
  pfa-real     @perfflowaspect.aspect.critical_path() from PerfFlowAspect's own Python package:
               DIR holds its `perfflowaspect` directory (src/python of its repository). Its
               module imports psutil, used only with cpu-mem-usage=True: when psutil is not
               installed an empty stand-in module is put on its path (the default options
               measured here never call it)
Both perfflowaspect packages have the same name, so each runs in its own child process
(default options, log-dir and weft's trace in a scratch directory); every child measures its
own plain loop too. Figures: CPU time of the calling thread (time.thread_time_ns) per call,
the median over interleaved rounds; the .pfw is written by weft at exit, PerfFlowAspect's
per event (its cost is in its call). Prints ns per call, ns over plain, and the ratio of
PerfFlowAspect's overhead to this package's.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


def child(kind, calls, rounds):
    """Runs in the child: measures plain and the kind's variants, prints JSON."""
    import perfflowaspect.aspect as aspect
    variants = {}

    def plain(x):
        return x
    variants["plain"] = plain
    if kind == "weft":
        import weft
        variants["weft.trace"] = weft.trace(plain)
        variants["pfa-on-weft"] = aspect.critical_path()(plain)
    else:
        variants["pfa-real"] = aspect.critical_path()(plain)

    def loop(f, n):
        for _ in range(n):
            f(1)

    res = {k: [] for k in variants}
    for name, f in variants.items():
        loop(f, min(calls, 1000))  # warm-up: first events, file creation
    for _ in range(rounds):
        for name, f in variants.items():
            t0 = time.thread_time_ns()
            loop(f, calls)
            res[name].append((time.thread_time_ns() - t0) / calls)
    print(json.dumps({k: statistics.median(v) for k, v in res.items()}))


def run_child(kind, pypath, calls, rounds, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEFT_", "PERFFLOW_"))}
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(x) for x in pypath.split(os.pathsep) if x)
    env["PERFFLOW_OPTIONS"] = f"log-dir={tmp}/{kind}"
    p = subprocess.run([sys.executable, HERE, "--child", kind, "--calls", str(calls),
                        "--rounds", str(rounds)], env=env, cwd=tmp, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"pfa_bench: the {kind} child failed: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pfa-src", help="directory holding PerfFlowAspect's perfflowaspect package")
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--pfa-calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.calls, a.rounds)

    tmp = tempfile.mkdtemp(prefix="weft-pfa-bench-")
    try:
        ours = os.environ.get("PYTHONPATH", "")
        w = run_child("weft", ours, a.calls, a.rounds, tmp)
        rows = [("plain", w["plain"], w["plain"]), ("weft.trace", w["weft.trace"], w["plain"]),
                ("pfa-on-weft", w["pfa-on-weft"], w["plain"])]
        real = None
        if a.pfa_src:
            if not os.path.isfile(os.path.join(a.pfa_src, "perfflowaspect", "aspect.py")):
                sys.exit(f"pfa_bench: no perfflowaspect/aspect.py under {a.pfa_src}")
            path = a.pfa_src
            try:
                import psutil  # noqa: F401
            except ImportError:
                stub = os.path.join(tmp, "stub")
                os.makedirs(stub)
                open(os.path.join(stub, "psutil.py"), "w").close()
                path += os.pathsep + stub
            r = run_child("pfa", path, a.pfa_calls, max(3, a.rounds // 3), tmp)
            real = r["pfa-real"] - r["plain"]
            rows.append(("pfa-real", r["pfa-real"], r["plain"]))
        print(f"{'variant':<14}{'ns/call':>12}{'over plain':>12}")
        for name, ns, base in rows:
            print(f"{name:<14}{ns:>12.1f}{ns - base:>12.1f}")
        if real is not None:
            mine = max(w["pfa-on-weft"] - w["plain"], 0.1)
            print(f"PerfFlowAspect's overhead / pfa-on-weft's: {real / mine:.0f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
