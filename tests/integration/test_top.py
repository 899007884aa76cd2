"""Issue 31: `weft top`, a live view of a running recording, tested as a person uses it.

The programs are gated by files, so what runs is known without timing: tests/programs/topbusy.c
(phase_alpha calling alpha_leaf until GATE.beta exists, then phase_beta/beta_leaf until
GATE.quit; a thread blocked inside worker_wait), a Python script of the same shape, and
tests/mpi/mpi_top.c (rank 2 computes until GATE.go exists while ranks 0, 1 and 3 wait in
MPI_Barrier). Each check polls `weft top` until what must show shows, with a deadline far past
what a person would wait (the latency seen is printed; bench/RESULTS.md has the measurements):
- --once -f json: the function the program is busy in is the innermost open call and tops the
  self time; after the phase change the new function does; the idle thread shows its open call;
- tmux: the program in one pane, `weft top` in another, the screen read with capture-pane,
  keys s (sort), f (filter) and q (quit) pressed there;
- --python, a flight recorder, a 4-rank job under MPICH's and Open MPI's launchers and under
  Slurm's srun: 4 ranks shown, the ranks in MPI_Barrier show it, and the one they wait for;
- a run that ended shows its final totals and says so; a directory with no recorder and no
  trace is one line and exit 1; CSV parses with Python's csv module."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_mpi_jobs import MPICH, OMPI, have  # noqa: E402
from weftlib import BUILD, SRC, WEFT, TraceTest, main, run, sanitizer, slurm_local  # noqa: E402

TOPBUSY = os.path.join(BUILD, "topbusy")
MPI_TOP = os.path.join(SRC, "tests", "mpi", "mpi_top.c")
DEADLINE = 30  # s: far past the 2 s a person waits; the latency seen is printed
PY_BUSY = """
import os, sys
gate = sys.argv[1]
def gate_open(suffix):
    if not os.path.isdir(os.path.dirname(gate)):
        sys.exit(3)  # the test ended without opening the gates
    return os.path.exists(gate + suffix)
def leaf_alpha(i):
    return i * 3
def phase_alpha():
    i = 0
    while not gate_open(".beta"):
        for _ in range(500):
            leaf_alpha(i)
            i += 1
def leaf_beta(i):
    return i ^ 5
def phase_beta():
    i = 0
    while not gate_open(".quit"):
        for _ in range(500):
            leaf_beta(i)
            i += 1
print("ready", os.getpid(), flush=True)
phase_alpha()
phase_beta()
"""


def top_json(data, *extra):
    """One frame of weft top as JSON (two samples 0.3 s apart), or None when it failed."""
    p = subprocess.run([WEFT, "top", "--once", "-d", "0.3", "-f", "json", *extra, data], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


def innermost(thread):
    return thread["open_now"][-1]["name"] if thread["open_now"] else None


class Recording:
    """LAUNCH... weft record -o DATA -- PROGRAM GATE in the background, its stdout a pipe."""

    def __init__(self, test, cmd, ready_lines=1):
        self.test = test
        self.p = subprocess.Popen(cmd, cwd=test.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.kill)
        self.ready = [self.p.stdout.readline() for _ in range(ready_lines)]
        for line in self.ready:
            test.assertTrue(line.startswith("ready"), f"the program did not start: {line!r}")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def finish(self, timeout=120):
        out, err = self.p.communicate(timeout=timeout)
        self.test.assertEqual(self.p.returncode, 0, err)
        return out, err


class TopTest(TraceTest):
    def setUp(self):
        super().setUp()
        self.gate = os.path.join(self.tmp, "gate")
        self.data = os.path.join(self.tmp, "D")

    def touch(self, suffix):
        open(self.gate + suffix, "w").close()

    def until(self, what, fn, deadline=DEADLINE):
        """Polls fn() (a frame or None) until it returns something true: that, and the time."""
        t0 = time.time()
        last = None
        while time.time() - t0 < deadline:
            last = fn()
            if last:
                took = time.time() - t0
                print(f"{self.id()}: {what} shown after {took:.2f} s", file=sys.stderr)
                return last
            time.sleep(0.1)
        self.fail(f"{what}: not shown in {deadline} s; last frame: {self.last_frame or last}")

    last_frame = None

    def busy_in(self, name, *extra, inside=None):
        """A frame whose main thread is inside name (innermost, or, with inside=PHASE, inside
        PHASE, the function that calls it: a state as of a chunk's end, while the writer is
        behind, has the leaf call closed) and whose top self-time function is name."""
        def check():
            f = top_json(self.data, *extra)
            self.last_frame = f
            if not f or not f["processes"]:
                return None
            p = f["processes"][0]
            main = [t for t in p["threads"] if t["tid"] == p["pid"]]
            busy = main and (inside in [o["name"] for o in main[0]["open_now"]] if inside else
                             innermost(main[0]) == name)
            top = [fn["name"] for fn in f["functions"] if fn["name"] not in ("worker_wait", "<module>")]
            return f if busy and top and top[0] == name else None
        return self.until(f"busy in {name}", check)


NO_PRELOAD = os.environ.get("WEFT_TEST_NO_PRELOAD")  # (TSan: see the Makefile's test-tsan)


class Errors(TopTest):
    def test_no_recorder(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        for d in (empty, os.path.join(self.tmp, "missing")):
            p = run([WEFT, "top", "--once", d], check=False)
            self.assertEqual(p.returncode, 1)
            self.assertEqual(p.stdout, "")
            self.assertEqual(p.stderr, f"weft: top: nothing records {d}, and it holds no trace to show\n")
        p = run([WEFT, "top", "-d", "0", empty], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad -d", p.stderr)


@unittest.skipIf(NO_PRELOAD, "preloading is not testable in this build (TSan)")
class Program(TopTest):
    def test_c_program_busy_function_phase_change_and_idle_thread(self):
        r = Recording(self, [WEFT, "record", "--no-convert", "--options", "overflow=block", "-o", self.data, "--", TOPBUSY, self.gate])
        # the watch begins late: main and phase_alpha were opened in chunks the writer took
        # before anyone asked (the stack its walk keeps while nobody watches)
        self.until("2 MB of events written", lambda: sum(os.path.getsize(os.path.join(self.data, n))
                                                       for n in os.listdir(self.data) if n.endswith(".wevents"))
                   > 2 << 20)
        f = self.busy_in("alpha_leaf", inside="phase_alpha")
        p = f["processes"][0]
        self.assertEqual(p["pid"], int(r.ready[0].split()[1]))
        self.assertEqual(p["process"], "topbusy")
        self.assertFalse(p["flight_recorder"])
        self.assertGreater(p["events_per_s"], 0)
        main_t = [t for t in p["threads"] if t["tid"] == p["pid"]][0]
        self.assertEqual([o["name"] for o in main_t["open_now"]][:2], ["main", "phase_alpha"])
        self.assertIn([o["name"] for o in main_t["open_now"]][2:], ([], ["alpha_leaf"]))
        self.assertGreater(main_t["calls_per_s"], 1000)
        # the idle thread blocked in read(): its open call is shown though it records nothing
        worker = [t for t in p["threads"] if t["name"] == "topworker"]
        self.assertEqual(len(worker), 1, p["threads"])
        self.assertEqual([o["name"] for o in worker[0]["open_now"]], ["worker", "worker_wait"])
        self.assertEqual(worker[0]["events_per_s"], 0)
        self.touch(".beta")
        self.busy_in("beta_leaf", inside="phase_beta")
        f = top_json(self.data)  # both samples after the phase change
        alpha = [fn for fn in f["functions"] if fn["name"] == "alpha_leaf"]
        self.assertTrue(alpha and alpha[0]["calls_per_s"] == 0, alpha)  # the old phase: no calls now
        # the filter: one thread only
        g = top_json(self.data, "--filter", "tid=%d" % worker[0]["tid"])
        self.assertEqual([t["name"] for t in g["processes"][0]["threads"]], ["topworker"])
        self.assertEqual([fn["name"] for fn in g["functions"] if fn["self_pct"] > 0], ["worker_wait"])
        self.touch(".quit")
        r.finish()
        # ended: the final totals from the trace, said as such
        p = run([WEFT, "top", self.data])
        self.assertIn("the run has ended: final totals", p.stdout)
        rows = [line.split() for line in p.stdout.splitlines()]
        names = [row[-1] for row in rows if len(row) == 6 and row[0].replace(".", "").isdigit()]
        self.assertIn("alpha_leaf", names)
        self.assertIn("beta_leaf", names)
        j = json.loads(run([WEFT, "top", "-f", "json", self.data]).stdout)
        self.assertTrue(j["ended"])
        calls = {fn["name"]: fn["calls"] for fn in j["functions"]}
        self.assertEqual(calls["phase_alpha"], 1)
        self.assertEqual(calls["phase_beta"], 1)
        self.assertGreater(calls["alpha_leaf"], 1000)

    def test_csv(self):
        r = Recording(self, [WEFT, "record", "--no-convert", "--options", "overflow=block", "-o", self.data, "--", TOPBUSY, self.gate])
        self.busy_in("alpha_leaf", inside="phase_alpha")
        p = run([WEFT, "top", "--once", "-d", "0.3", "-f", "csv", self.data])
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        tables = {r["table"] for r in rows}
        self.assertEqual(tables, {"process", "thread", "function"})
        procs = [r for r in rows if r["table"] == "process"]
        self.assertEqual(len(procs), 1)
        self.assertTrue(procs[0]["open_now"].startswith("main > phase_alpha"), procs[0])
        funcs = [r["name"] for r in rows if r["table"] == "function"]
        self.assertIn("alpha_leaf", funcs)
        self.touch(".beta")
        self.touch(".quit")
        r.finish()

    def test_flight_recorder(self):
        r = Recording(self, [WEFT, "record", "--no-convert", "--options", "overflow=block", "--flight-recorder=4M", "-o", self.data, "--", TOPBUSY, self.gate])
        f = self.busy_in("alpha_leaf", inside="phase_alpha")
        self.assertTrue(f["processes"][0]["flight_recorder"])
        self.touch(".beta")
        self.busy_in("beta_leaf", inside="phase_beta")
        self.touch(".quit")
        r.finish()

    def test_python(self):
        script = os.path.join(self.tmp, "busy.py")
        with open(script, "w") as f:
            f.write(PY_BUSY)
        r = Recording(self, [WEFT, "record", "--no-convert", "--options", "overflow=block", "--python", "-o", self.data, "--", "/usr/bin/python3", script,
                             self.gate])
        # a Python loop's own frame holds most of its time; its calls are counted
        f = self.busy_in("phase_alpha", inside="phase_alpha")
        main_t = f["processes"][0]["threads"][0]
        names = [o["name"] for o in main_t["open_now"]]
        self.assertIn("phase_alpha", names)
        below = names[names.index("phase_alpha") + 1:]  # gate_open may be in os.path's functions
        self.assertTrue(below in ([], ["leaf_alpha"]) or below[0] == "gate_open", names)
        leaf = [fn for fn in f["functions"] if fn["name"] == "leaf_alpha"]
        self.assertTrue(leaf and leaf[0]["calls_per_s"] > 1000, leaf)
        self.touch(".beta")
        self.busy_in("phase_beta", inside="phase_beta")
        self.touch(".quit")
        r.finish()

    def test_forks_while_the_writer_works(self):
        """A fork while a writer keeps weft top's stacks: before the fix a fork that took the
        live view's lock before a writer's (which takes it while it holds its own) hung the
        program for ever, at its first run here."""
        for k in range(4):
            data = os.path.join(self.tmp, f"f{k}")
            p = subprocess.run([WEFT, "record", "-q", "--no-convert", "-o", data, "--",
                                os.path.join(BUILD, "forkbusy"), "300"], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_recorders_on_other_hosts(self):
        """A job whose ranks share DIR over several hosts registers each recorder as
        .weft-run-PID@HOST (tracedir.c); those of other hosts cannot be asked from here (their
        sockets are their host's), which weft top says instead of leaving them out silently."""
        r = Recording(self, [WEFT, "record", "--no-convert", "--options", "overflow=block", "-o", self.data, "--",
                             TOPBUSY, self.gate])
        fakes = [os.path.join(self.data, f".weft-run-{4242 + k}@node{h}") for k, h in enumerate("BC")]
        for f in fakes:
            open(f, "w").close()
        j = top_json(self.data)
        self.assertEqual((j["recorders"], j["recorders_elsewhere"]), (1, 2))
        self.assertEqual(sorted(j["other_hosts"].split(", ")), ["nodeB", "nodeC"])
        p = run([WEFT, "top", "--once", "-d", "0.2", self.data])
        self.assertIn("not shown: 2 recorders of the job on other hosts (node", p.stdout)
        for f in fakes:
            os.unlink(f)
        self.touch(".beta")
        self.touch(".quit")
        r.finish()
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.mkdir(elsewhere)
        open(os.path.join(elsewhere, ".weft-run-4242@nodeB"), "w").close()
        p = run([WEFT, "top", "--once", elsewhere], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"weft: top: nothing records {elsewhere} from this host; 1 recorder of its job "
                                   "runs on other hosts (nodeB): run weft top there\n")

@unittest.skipUnless(shutil.which("tmux"), "tmux not installed")
@unittest.skipIf(NO_PRELOAD, "preloading is not testable in this build (TSan)")
class Tmux(TopTest):
    """The program in one tmux pane, weft top in another, the screen read with capture-pane."""

    def setUp(self):
        super().setUp()
        self.sock = f"weft-top-{os.getpid()}"
        self.addCleanup(subprocess.run, ["tmux", "-L", self.sock, "kill-server"], capture_output=True)

    def tmux(self, *args):
        return run(["tmux", "-L", self.sock, *args]).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "t:0.1")

    def test_top_in_a_pane_beside_the_program(self):
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160", "-y", "48",
                  f"{WEFT} record --no-convert --options overflow=block -o {self.data} -- {TOPBUSY} {self.gate}; sleep 600")
        self.until("the recorder", lambda: any(n.startswith(".control.") for n in os.listdir(self.data))
                   if os.path.isdir(self.data) else False)
        self.tmux("split-window", "-t", "t", "-v", f"{WEFT} top {self.data}; echo weft-top-exit=$?; sleep 600")

        def first_function(name, phase):
            def check():
                s = self.screen()
                lines = s.splitlines()
                i = [k for k, line in enumerate(lines) if "FUNCTION OR SLICE" in line]
                rows = [line.split() for line in lines[i[0] + 1:]] if i else []
                rows = [r for r in rows if r and r[-1] not in ("worker_wait", "main", "worker")]
                return s if rows and rows[0][-1] == name and f"main > {phase}" in s else None
            return check
        s = self.until("alpha_leaf on the screen", first_function("alpha_leaf", "phase_alpha"))
        self.assertIn("worker > worker_wait", s)
        self.assertIn("sort: self", s)
        self.touch(".beta")
        self.until("the phase change on the screen", first_function("beta_leaf", "phase_beta"))
        self.tmux("send-keys", "-t", "t:0.1", "s")
        self.until("sort by calls", lambda: "sort: calls" in self.screen())
        self.tmux("send-keys", "-t", "t:0.1", "f", "topworker", "Enter")

        def filtered():
            s = self.screen()
            return s if "filter: topworker" in s and "topworker" in s and "phase_beta >" not in s else None
        self.until("the thread filter", filtered)
        self.tmux("send-keys", "-t", "t:0.1", "q")
        self.until("weft top's exit", lambda: "weft-top-exit=0" in self.screen())
        self.touch(".quit")
        self.until("the recording's end", lambda: not any(n.startswith(".control.") for n in os.listdir(self.data)))


class Job(TopTest):
    """4 ranks, rank 2 computing while the others wait for it in MPI_Barrier."""

    def build(self, compiler):
        if sanitizer():
            self.skipTest("built with a sanitizer: the MPI launchers and libraries are not")
        if not have(compiler):
            self.skipTest(f"{compiler} not installed")
        exe = os.path.join(self.tmp, "mpi_top")
        run([compiler, "-O1", "-o", exe, MPI_TOP])
        return exe

    def watch(self, launch):
        r = Recording(self, launch, ready_lines=4)

        def check():
            f = top_json(self.data)
            if not f or len(f["processes"]) != 4:
                return None
            inside = {p["rank"]: innermost(p["threads"][0]) for p in f["processes"]}
            # the waiting ranks' share in MPI grows while they wait: over half, once top's
            # interval holds more of the wait than of what came before it (a loaded CI run saw
            # 46.8% at the first sighting of the barrier)
            waiting = all(p["mpi_pct"] > 50 for p in f["processes"] if p["rank"] != 2)
            return f if inside.get(2) != "MPI_Barrier" and waiting and \
                all(inside.get(k) == "MPI_Barrier" for k in (0, 1, 3)) else None
        f = self.until("4 ranks, 3 in MPI_Barrier", check)
        self.assertEqual(sorted(p["rank"] for p in f["processes"]), [0, 1, 2, 3])
        pids = {int(line.split()[1]): int(line.split()[2]) for line in r.ready}
        self.assertEqual({p["rank"]: p["pid"] for p in f["processes"]}, pids)
        self.assertIn("waiting for rank 2", f["waiting"])
        for p in f["processes"]:
            self.assertGreater(p["mpi_pct"], 50 if p["rank"] != 2 else -1)
        self.assertEqual([p["mpi_pct"] for p in f["processes"] if p["rank"] == 2], [0.0])
        if shutil.which("tmux"):  # and on the screen, as a person sees it
            sock = f"weft-top-job-{os.getpid()}"
            self.addCleanup(subprocess.run, ["tmux", "-L", sock, "kill-server"], capture_output=True)
            run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "200", "-y", "40",
                 f"{WEFT} top {self.data}; sleep 600"])

            def screen():
                s = run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "t"]).stdout
                ranks = [line.split() for line in s.splitlines()]
                ranks = [r for r in ranks if len(r) > 4 and r[0] in pids.values() and r[1] in "0123"]
                barrier = [r[1] for r in ranks if r[-1] == "MPI_Barrier"]
                ok = len(ranks) >= 4 and sorted(barrier) == ["0", "1", "3"] and "waiting for rank 2" in s
                return s if ok else None
            pids = {k: str(v) for k, v in pids.items()}
            self.until("4 ranks on the screen, 3 in MPI_Barrier", screen)
        self.touch(".go")
        r.finish()

    def test_mpich(self):
        exe = self.build("mpicc.mpich")
        self.watch([*MPICH, "-np", "4", WEFT, "record", "-o", self.data, "--", exe, self.gate])

    def test_openmpi(self):
        exe = self.build("mpicc.openmpi")
        self.watch([*OMPI, "-np", "4", WEFT, "record", "-o", self.data, "--", exe, self.gate])


@unittest.skipUnless(have("srun", "sinfo") and (have("slurmctld", "slurmd") or os.path.exists("/usr/sbin/slurmd")),
                     "Slurm not installed (slurmctld, slurmd, slurm-client)")
@unittest.skipUnless(os.geteuid() == 0, "the local Slurm runs as root")
class Slurm(Job):
    @classmethod
    def setUpClass(cls):
        if sanitizer():
            raise unittest.SkipTest("built with a sanitizer: the MPI launchers and libraries are not")
        cls.sdir = tempfile.mkdtemp(prefix="weft-top-slurm-")
        cls.addClassCleanup(shutil.rmtree, cls.sdir, ignore_errors=True)  # after the daemons' stop
        slurm_local(cls, cls.sdir)
        cls.saved_conf = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = os.path.join(cls.sdir, "slurm.conf")

    @classmethod
    def tearDownClass(cls):
        if cls.saved_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = cls.saved_conf

    def test_mpich(self):
        exe = self.build("mpicc.mpich")
        plugins = run(["srun", "--mpi=list"], check=False)
        if "pmi2" not in plugins.stdout + plugins.stderr:
            self.skipTest("this Slurm has no --mpi=pmi2 plugin")
        self.watch(["srun", "-n", "4", "--overcommit", "--mpi=pmi2", WEFT, "record", "-o", self.data, "--", exe,
                    self.gate])

    def test_openmpi(self):
        exe = self.build("mpicc.openmpi")
        plugins = run(["srun", "--mpi=list"], check=False)
        if "pmix" not in plugins.stdout + plugins.stderr:
            self.skipTest("this Slurm has no --mpi=pmix plugin")
        self.watch(["srun", "-n", "4", "--overcommit", "--mpi=pmix", WEFT, "record", "-o", self.data, "--", exe,
                    self.gate])


if __name__ == "__main__":
    main()
