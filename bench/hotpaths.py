#!/usr/bin/python3
"""Every recording hot path of weft against another build (the previous commit's), in one run,
interleaved: each round runs, for every path, the program untraced, under the new build and
under the base build, and the table gives medians over the rounds. The paths:

  function   fib(30) built with gcc -O2 -finstrument-functions (2.69 M calls, 5.4 M events),
             `weft record --no-convert`: CPU per event over untraced (the whole process: the
             program's thread and the writer), and wall time
  flight     the same under `--flight-recorder=16M` against `--options buffer_size=4M` (equal
             buffers): the flight recording's wall time over the normal one's, per build
  py311      /usr/bin/python3 (3.11), `weft record --python`, 1 M calls of an empty function
             (bench/python/calls_workload.py loop) and fib(25): CPU per call over untraced, and
             cProfile's in the same rounds (the ratio)
  py313      the same on Debian 13's python3.13 (sys.monitoring) in the trixie root that
             scripts/python-next.sh makes (--py313-root; both source trees are built there, in
             /var/tmp/weft-hotpaths-*; skipped with the reason when the root is missing)
  memory     bench/memory/mem_bench.c (1 thread, 300,000 malloc/free pairs), `weft record
             --memory`: the program thread's CPU per event (its own clock) and the writer's
             (the whole process's CPU per event over untraced, less the thread's)
  mpi        bench/mpi/mpi_bench.c under MPICH: procnull (1 M MPI_Send to MPI_PROC_NULL) the
             rank thread's CPU per call over untraced; pingpong (2 ranks, 100,000 round trips)
             the event bytes on disk per call and per message

usage: bench/hotpaths.py NEW_BUILD BASE_BUILD [--rounds R] [--paths P,P...] [--py313-root DIR]
       (NEW_SRC and BASE_SRC, needed for py313, are the builds' source trees: CMakeCache.txt)
Prints a markdown table (for bench/RESULTS.md). Needs gcc, mpicc.mpich, and root for py313."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
FIB_C = r"""
#include <stdio.h>
#include <stdlib.h>
static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv) { printf("%ld\n", fib(argc > 1 ? atoi(argv[1]) : 30)); return 0; }
"""
FIB_N, FIB_EVENTS = 30, 2 * 2692537
PY_CALLS = {"loop": (1000000, 1000001), "fib": (25, 242785)}
MEM_ITERS = 300000
MPI_CALLS, MPI_PINGS = 1000000, 100000


def cpu_run(cmd, env=None):
    """(CPU ns of cmd and its children, wall ns, stdout) from wait4."""
    import time
    t0 = time.monotonic_ns()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic_ns() - t0
    err = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{cmd} failed: {err.decode(errors='replace')[-2000:]}")
    return (ru.ru_utime + ru.ru_stime) * 1e9, wall, out.decode()


def src_of(build):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return line.split("=", 1)[1].strip()
    sys.exit(f"{build}: no CMakeCache.txt")


class Bench:
    def __init__(self, builds, tmp, py313_root):
        self.builds = builds  # {"new": dir, "base": dir}
        self.tmp = tmp
        self.runs = {}
        self.notes = []
        self.root = py313_root
        self.fib = os.path.join(tmp, "fib")
        subprocess.run(["gcc", "-O2", "-finstrument-functions", "-x", "c", "-", "-o", self.fib],
                       input=FIB_C.encode(), check=True)
        self.mem = os.path.join(tmp, "mem_bench")
        subprocess.run(["gcc", "-O2", "-pthread", os.path.join(HERE, "memory", "mem_bench.c"), "-o", self.mem],
                       check=True)
        self.mpi = None
        if shutil.which("mpicc.mpich"):
            self.mpi = os.path.join(tmp, "mpi_bench")
            subprocess.run(["mpicc.mpich", "-O2", "-o", self.mpi, os.path.join(HERE, "mpi", "mpi_bench.c")],
                           check=True)

    def add(self, key, v):
        self.runs.setdefault(key, []).append(v)

    def med(self, key):
        return statistics.median(self.runs[key])

    def rec(self, b, name, *opts):
        d = os.path.join(self.tmp, name)
        shutil.rmtree(d, ignore_errors=True)
        return [os.path.join(self.builds[b], "weft"), "record", "-q", "--no-convert", "-o", d, *opts, "--"]

    # ---- one round of each path ----
    def function(self):
        c, w, _ = cpu_run([self.fib, str(FIB_N)])
        self.add(("function", "untraced", "cpu"), c)
        self.add(("function", "untraced", "wall"), w)
        for b in self.builds:
            c, w, _ = cpu_run(self.rec(b, "f.data") + [self.fib, str(FIB_N)])
            self.add(("function", b, "cpu"), c)
            self.add(("function", b, "wall"), w)

    def flight(self):
        for b in self.builds:
            _, w, _ = cpu_run(self.rec(b, "n.data", "--options", "buffer_size=4M") + [self.fib, str(FIB_N)])
            _, wf, _ = cpu_run(self.rec(b, "fl.data", "--flight-recorder=16M") + [self.fib, str(FIB_N)])
            self.add(("flight", b, "ratio"), wf / w)

    def python(self, tag, py, rec_prefix, builds):
        wl = os.path.join(HERE, "python", "calls_workload.py")
        for kind, (n, _) in PY_CALLS.items():
            for size in (0, n):
                c, _, _ = cpu_run(rec_prefix + [py, wl, kind, str(size)])
                self.add((tag, "untraced", kind, size), c)
                c, _, _ = cpu_run(rec_prefix + [py, "-m", "cProfile", "-o", os.devnull, wl, kind, str(size)])
                self.add((tag, "cProfile", kind, size), c)
                for b, weft in builds.items():
                    d = os.path.join(self.tmp, "p.data")
                    shutil.rmtree(d, ignore_errors=True)
                    c, _, _ = cpu_run(rec_prefix + [weft, "record", "-q", "--no-convert", "-o", d, "--python", "--",
                                                    py, wl, kind, str(size)])
                    self.add((tag, b, kind, size), c)

    def memory(self):
        args = [self.mem, "1", str(MEM_ITERS)]
        for b in ["untraced", *self.builds]:
            c, _, out = cpu_run(args if b == "untraced" else self.rec(b, "m.data", "--memory") + args)
            self.add(("memory", b, "cpu"), c)
            self.add(("memory", b, "thread"), float(re.search(r"cpu_ns_per_event=([\d.]+)", out).group(1)))

    def mpi_path(self):
        run1 = ["mpirun.mpich", "-np", "1", self.mpi, "procnull", str(MPI_CALLS)]
        run2 = ["mpirun.mpich", "-np", "2", self.mpi, "pingpong", str(MPI_PINGS)]
        _, _, out = cpu_run(run1)
        self.add(("mpi", "untraced", "cpu"), float(re.search(r"cpu/call ([\d.]+)", out).group(1)))
        for b in self.builds:
            _, _, out = cpu_run(self.rec(b, "mp.data") + run1)
            self.add(("mpi", b, "cpu"), float(re.search(r"cpu/call ([\d.]+)", out).group(1)))
            cmd = self.rec(b, "pp.data") + run2
            _, _, out = cpu_run(cmd)
            calls = int(re.search(r"calls (\d+)", out).group(1)) * 2  # per rank in the output
            d = os.path.join(self.tmp, "pp.data")
            size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".wevents"))
            self.add(("mpi", b, "bytes"), size / calls)

    # ---- Python 3.13 in the trixie root ----
    def py313_setup(self):
        if not self.root or not os.path.isdir(os.path.join(self.root, "usr", "bin")):
            self.notes.append(f"py313: skipped: no trixie root at {self.root} (make test-python-next makes it)")
            return None
        if os.geteuid():
            self.notes.append("py313: skipped: needs root (chroot, bind mounts)")
            return None
        self.mounts = []
        for kind, what, where in (("proc", "proc", "proc"), ("bind", "/dev", "dev")):
            target = os.path.join(self.root, where)
            if not os.path.ismount(target):
                subprocess.run(["mount", "-t", "proc", "proc", target] if kind == "proc" else
                               ["mount", "--bind", what, target], check=True)
                self.mounts.append(target)
        builds = {}
        for b, build in self.builds.items():
            src = src_of(build)
            inside = self.root + src
            os.makedirs(inside, exist_ok=True)
            subprocess.run(["mount", "--bind", src, inside], check=True)
            self.mounts.append(inside)
            out = f"/var/tmp/weft-hotpaths-{b}"
            for cmd in (["cmake", "-S", src, "-B", out, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DWEFT_BUILD_TESTS=OFF"],
                        ["cmake", "--build", out, "-j2", "--target", "weft-cli", "weft-preload", "weft-python"]):
                subprocess.run(["chroot", self.root, *cmd], check=True, stdout=subprocess.DEVNULL)
            builds[b] = out + "/weft"
        tmp_in = self.root + self.tmp
        os.makedirs(tmp_in, exist_ok=True)
        subprocess.run(["mount", "--bind", self.tmp, tmp_in], check=True)
        self.mounts.append(tmp_in)
        here_in = self.root + HERE
        if not os.path.isdir(os.path.join(here_in, "python")):
            os.makedirs(here_in, exist_ok=True)
            subprocess.run(["mount", "--bind", HERE, here_in], check=True)
            self.mounts.append(here_in)
        return builds

    def py313_teardown(self):
        for m in reversed(getattr(self, "mounts", [])):
            subprocess.run(["umount", m], check=False)

    # ---- the table ----
    def table(self, paths):
        rows = []
        b0 = list(self.builds)

        def cmp(label, new, base, unit, lower=True):
            rows.append(f"| {label} | {new:.2f} {unit} | {base:.2f} {unit} | {new / base:.3f} |")

        if "function" in paths:
            per = {b: (self.med(("function", b, "cpu")) - self.med(("function", "untraced", "cpu"))) / FIB_EVENTS
                   for b in b0}
            cmp("function events: CPU per event over untraced (fib 30)", per["new"], per["base"], "ns")
            cmp("function events: wall (fib 30)", self.med(("function", "new", "wall")) / 1e6,
                self.med(("function", "base", "wall")) / 1e6, "ms")
        if "flight" in paths:
            cmp("flight recorder 16M: wall over normal recording, 4M buffers (fib 30)",
                self.med(("flight", "new", "ratio")), self.med(("flight", "base", "ratio")), "x")
        for tag, label in (("py311", "Python 3.11"), ("py313", "Python 3.13")):
            if tag not in paths or (tag, "untraced", "loop", 0) not in self.runs:
                continue
            for kind, (n, calls) in PY_CALLS.items():
                def over(mode):
                    return (self.med((tag, mode, kind, n)) - self.med((tag, mode, kind, 0)) -
                            (self.med((tag, "untraced", kind, n)) - self.med((tag, "untraced", kind, 0)))) / calls
                cp = over("cProfile")
                cmp(f"{label} --python: CPU per call over untraced ({kind} {n})", over("new"), over("base"), "ns")
                cmp(f"{label} --python: x cProfile ({cp:.1f} ns a call) ({kind} {n})", over("new") / cp,
                    over("base") / cp, "x")
        if "memory" in paths:
            th = {b: self.med(("memory", b, "thread")) - self.med(("memory", "untraced", "thread")) for b in b0}
            tot = {b: (self.med(("memory", b, "cpu")) - self.med(("memory", "untraced", "cpu"))) / (2 * MEM_ITERS)
                   for b in b0}
            cmp("memory: the program thread's CPU per event over untraced", th["new"], th["base"], "ns")
            cmp("memory: the writer's CPU per event (process less thread)", tot["new"] - th["new"],
                tot["base"] - th["base"], "ns")
        if "mpi" in paths and ("mpi", "untraced", "cpu") in self.runs:
            u = self.med(("mpi", "untraced", "cpu"))
            cmp("MPI_Send to MPI_PROC_NULL: the rank's CPU per call over untraced",
                self.med(("mpi", "new", "cpu")) - u, self.med(("mpi", "base", "cpu")) - u, "ns")
            cmp("MPI pingpong: event bytes on disk per call", self.med(("mpi", "new", "bytes")),
                self.med(("mpi", "base", "bytes")), "B")
            cmp("MPI pingpong: event bytes on disk per message (a send and a receive)",
                2 * self.med(("mpi", "new", "bytes")), 2 * self.med(("mpi", "base", "bytes")), "B")
        return rows


def main():
    args = sys.argv[1:]
    opts = {"--rounds": "7", "--paths": "function,flight,py311,py313,memory,mpi",
            "--py313-root": "/var/cache/weft/trixie"}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    builds = {"new": os.path.abspath(args[0]), "base": os.path.abspath(args[1])}
    paths = opts["--paths"].split(",")
    rounds = int(opts["--rounds"])
    tmp = tempfile.mkdtemp(prefix="weft-hotpaths-", dir="/tmp")
    b = Bench(builds, tmp, opts["--py313-root"])
    if "mpi" in paths and not b.mpi:
        b.notes.append("mpi: skipped: no mpicc.mpich (scripts/deps.sh test installs MPICH)")
    py313 = b.py313_setup() if "py313" in paths else None
    try:
        for _ in range(rounds):
            if "function" in paths:
                b.function()
            if "flight" in paths:
                b.flight()
            if "py311" in paths:
                b.python("py311", PY, [], {k: os.path.join(v, "weft") for k, v in builds.items()})
            if py313:
                b.python("py313", "/usr/bin/python3", ["chroot", b.root], py313)
            if "memory" in paths:
                b.memory()
            if "mpi" in paths and b.mpi:
                b.mpi_path()
        print(f"# bench/hotpaths.py {args[0]} {args[1]}: medians of {rounds} interleaved rounds; "
              f"ratio new/base (below 1: the new build is cheaper)")
        print("| path | new | base | new/base |")
        print("|---|---|---|---|")
        for r in b.table(paths):
            print(r)
        for n in b.notes:
            print(f"\n{n}")
    finally:
        b.py313_teardown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
