#!/usr/bin/python3
"""Python call tracing cost: CPU time (user + system of the child process and its children,
from wait4) per Python call over the untraced run, for weft record --python (and, to show the
hook's floor, with every function filtered out), weft's fallback profile hook, cProfile, an
empty sys.setprofile callback and yappi, and weft record --python=c-calls (the profile hook, C calls recorded too). Three
workloads: fib(25) (242785 calls), a loop of 1M calls of an empty function and a loop of 1M
calls of the builtin len() (C calls: recorded by c-calls, cProfile and yappi, not by the
default --python mode). Rounds are interleaved (every mode once per round) and the median taken;
each mode is also run on an empty workload (N = 0) so that its start-up and exit cost (weft's
runtime, cProfile's import and output) is taken off:
    ns/call = ((mode N) - (mode 0) - ((untraced N) - (untraced 0))) / calls
usage: bench/python/calls_bench.py [BUILD] [--base BUILD0] [--rounds R] [--modes M,M...] [--workloads W,W...]
(BUILD default ./build; all modes and workloads by default; untraced is always run; with
--base, each weft mode is also run on BUILD0, the previous commit's build, as "base MODE", in
the same rounds)
Prints a table; nothing is written into the source tree."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
W = os.path.join(HERE, "calls_workload.py")


def fib_calls(n):
    a, b = 1, 1  # calls(n) = calls(n-1) + calls(n-2) + 1, calls(0) = calls(1) = 1
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return b if n > 0 else 1


WORKLOADS = [("fib", 25, fib_calls(25)), ("loop", 1000000, 1000000 + 1), ("len", 1000000, 1000000 + 1)]


def modes(build, tmp):
    weft = os.path.join(build, "weft")
    runner = "import runpy, sys; sys.argv = sys.argv[1:]; {setup}; runpy.run_path(sys.argv[0], run_name='__main__')"
    return {
        "untraced": lambda a: [PY, W, *a],
        "weft --python": lambda a: [weft, "record", "-q", "--no-convert", "-o", os.path.join(tmp, "w.data"),
                                    "--python", "--", PY, W, *a],
        # the hook's floor: installed, every code object filtered out (3.11 then stops inlining
        # Python-to-Python calls, so each call recurses through the C evaluator)
        "weft, none kept": lambda a: [weft, "record", "-q", "--no-convert", "-o", os.path.join(tmp, "w.data"),
                                      "--python", "-F", "no-such-function", "--", PY, W, *a],
        "weft c-calls": lambda a: [weft, "record", "-q", "--no-convert", "-o", os.path.join(tmp, "w.data"),
                                   "--python=c-calls", "--", PY, W, *a],
        "c-calls none kept": lambda a: [weft, "record", "-q", "--no-convert", "-o", os.path.join(tmp, "w.data"),
                                         "--python=c-calls", "-F", "no-such-function", "--", PY, W, *a],
        # the fallback hook (a C profile function: what 3.12+ had before the sys.monitoring hook)
        "weft profile hook": lambda a: ["env", f"PYTHONPATH={os.path.join(build, 'python')}",
                                        f"WEFT_OPTIONS=output={os.path.join(tmp, 'p.data')}", PY, "-c",
                                        runner.format(setup="from weft import _record; _record.start('profile')"),
                                        W, *a],
        "cProfile": lambda a: [PY, "-m", "cProfile", "-o", os.devnull, W, *a],
        "setprofile": lambda a: [PY, "-c", runner.format(setup="sys.setprofile(lambda f, e, a: None)"), W, *a],
        "yappi": lambda a: [PY, "-c", runner.format(setup="import yappi; yappi.start()"), W, *a],
    }


def cpu_ns(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read()
    p.stderr.close()
    if p.returncode:
        raise SystemExit(f"{cmd} failed ({p.returncode}): {err.decode(errors='replace')}")
    return (ru.ru_utime + ru.ru_stime) * 1e9


def main():
    args = sys.argv[1:]
    rounds = 7
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    only = {}
    for opt in ("--base", "--modes", "--workloads"):
        if opt in args:
            i = args.index(opt)
            only[opt] = args[i + 1].split(",")
            del args[i:i + 2]
    workloads = [w for w in WORKLOADS if w[0] in only.get("--workloads", [w[0]])]
    build = os.path.abspath(args[0] if args else "build")
    tmp = tempfile.mkdtemp(prefix="weft-pybench-")
    try:
        ms = modes(build, tmp)
        if "--modes" in only:
            ms = {k: v for k, v in ms.items() if k in ("untraced", "cProfile") or k in only["--modes"]}
        if "--base" in only:
            old = modes(os.path.abspath(only["--base"][0]), tmp)
            for k in [k for k in ms if k not in ("untraced", "cProfile", "setprofile", "yappi")]:
                ms["base " + k] = old[k]
        runs = {}
        for r in range(rounds):
            for kind, n, _ in workloads:
                for size in (0, n):
                    for name, cmd in ms.items():
                        runs.setdefault((name, kind, size), []).append(cpu_ns(cmd([kind, str(size)])))
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"CPU time per run (median of {rounds} interleaved rounds), CPython {sys.version.split()[0]}")
        for kind, n, calls in workloads:
            base = med[("untraced", kind, n)] - med[("untraced", kind, 0)]
            print(f"\n{kind} {n}: {calls} calls; untraced {base / 1e6:.1f} ms of calls "
                  f"({base / calls:.1f} ns/call), start-up {med[('untraced', kind, 0)] / 1e6:.1f} ms")
            print(f"  {'mode':<22} {'ms (N)':>9} {'ms (0)':>8} {'ns/call over untraced':>22} {'x cProfile':>11}")
            over = {name: (med[(name, kind, n)] - med[(name, kind, 0)] - base) / calls for name in ms}
            for name in ms:
                ratio = over[name] / over["cProfile"] if over["cProfile"] > 0 else float("nan")
                print(f"  {name:<22} {med[(name, kind, n)] / 1e6:9.1f} {med[(name, kind, 0)] / 1e6:8.1f} "
                      f"{over[name]:22.1f} {ratio:11.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
