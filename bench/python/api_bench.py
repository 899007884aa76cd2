"""Cost of @weft.trace per call, against a plain call and a pure-Python timing decorator.

    PYTHONPATH=BUILD/python /usr/bin/python3 bench/python/api_bench.py [--calls N] [--rounds R]

Variants, each a loop of N calls of a one-argument function that returns its argument:
  plain          the undecorated function
  traced         @weft.trace, tracing on (two 16-byte events per call)
  traced_off     @weft.trace on a site that is off (category filtered out: the same state byte
                 and branch as enable=0, measured in the same process)
  pydeco         a Python decorator doing what a tracer would: time.perf_counter_ns() before and
                 after, each appended to a list
  scope          `with weft.scope("s"):` around a plain call (tracing on)
The rounds interleave the variants (so drift and frequency changes hit all alike); each
variant's figure is the median over rounds of CPU time (time.thread_time_ns) per call. The
writer thread's compression of the events runs on another thread and is not counted here.
Prints one line per variant: ns per call, and ns over the plain call.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

tmp = tempfile.mkdtemp(prefix="weft-api-bench-")
os.environ["WEFT_OPTIONS"] = f"output={tmp}/trace.data"
import weft  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()

    weft.configure(categories="-off")
    weft.start()

    def plain(x):
        return x

    @weft.trace
    def traced(x):
        return x

    @weft.trace(category="off")
    def traced_off(x):
        return x

    events = []
    clock = time.perf_counter_ns

    def pydeco(f):
        def wrapper(*args, **kw):
            events.append(clock())
            r = f(*args, **kw)
            events.append(clock())
            return r
        return wrapper

    @pydeco
    def pyd(x):
        return x

    def loop(f, n):
        for _ in range(n):
            f(1)

    def scoped(n, scope=weft.scope("s"), f=plain):
        for _ in range(n):
            with scope:
                f(1)

    variants = {
        "plain": lambda n: loop(plain, n),
        "traced": lambda n: loop(traced, n),
        "traced_off": lambda n: loop(traced_off, n),
        "pydeco": lambda n: loop(pyd, n),
        "scope": scoped,
    }
    for run in variants.values():  # warm up (first events register sites, thread buffers)
        run(1000)
    res = {k: [] for k in variants}
    for _ in range(a.rounds):
        for k, run in variants.items():
            t0 = time.thread_time_ns()
            run(a.calls)
            res[k].append((time.thread_time_ns() - t0) / a.calls)
            events.clear()
    weft.stop()
    base = statistics.median(res["plain"])
    print(f"python {sys.version.split()[0]}, {a.calls} calls x {a.rounds} rounds, "
          f"median CPU ns per call (thread_time_ns)")
    for k, v in res.items():
        m = statistics.median(v)
        print(f"  {k:<11} {m:7.1f} ns   {m - base:+7.1f} ns over plain")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
