"""weft export --otf2 (src/export/otf2.c, docs/otf2.md), read back with two independent readers:
otf2-print (otf2-tools) and the otf2 Python module (python3-otf2). For a C program built with
-finstrument-functions, a Python program under `weft record --python` and tests/mpi/mpi_app.c
under Open MPI and MPICH (one `weft record` per rank), every location's Enter and Leave events
equal weft's own slices of that thread (the SQLite export), nest in time order, name the
regions weft names; the MPI job's point-to-point events equal weft's matched messages
(`weft report --mpi`) and its collectives appear. Skipped where libotf2, otf2-print or
python3-otf2 is missing."""
import collections
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import BUILD, SRC, WEFT, TraceTest, main, run, sanitizer  # noqa: E402

PY = "/usr/bin/python3"
MPI_APP = os.path.join(SRC, "tests", "mpi", "mpi_app.c")
FLAVORS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "4"]),
    "mpich": ("mpicc.mpich", ["mpirun.mpich", "-np", "4"]),
}
C_PROG = r"""
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static void *worker(void *a) {
	WEFT_SCOPE("worker");
	for (int i = 0; i < 3; i++) { WEFT_COUNTER("items", i); fib(12); }
	return a;
}
int main(void) {
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	for (int i = 0; i < 4; i++) {
		WEFT_SCOPE("step");
		WEFT_INSTANT("tick");
		uint64_t t0 = weft_now_ns();
		printf("%d\n", fib(10 + i));
		WEFT_COMPLETE("measured", t0, weft_now_ns());
	}
	pthread_join(t, NULL);
	return 0;
}
"""
PY_PROG = """
def leaf(n):
    return n * 2
def middle(n):
    return sum(leaf(i) for i in range(n))
def top():
    for i in range(5):
        middle(i)
top()
"""


def otf2_built():
    p = run([WEFT, "export", "--otf2", "-o", "/nonexistent/x", "/nonexistent"], check=False)
    return "OTF2 unavailable" not in p.stderr


def have_py_otf2():
    return subprocess.run([PY, "-c", "import otf2"], capture_output=True).returncode == 0


# per location: name, group, and its events in file order as (kind, time, region or fields)
READ = r"""
import json, sys, otf2
out = {"locs": {}, "regions": [], "comms": []}
with otf2.reader.open(sys.argv[1]) as r:
    out["res"] = r.timer_resolution
    out["regions"] = [g.name for g in r.definitions.regions]
    out["comms"] = [c.name for c in r.definitions.comms]
    for l in r.definitions.locations:
        assert l.name + "@" + l.group.name not in out["locs"], "two locations of one name"
        out["locs"][l.name + "@" + l.group.name] = []
    for loc, ev in r.events:
        k = type(ev).__name__
        rec = [k, ev.time]
        if k in ("Enter", "Leave"):
            rec.append(ev.region.name)
        elif k in ("MpiSend", "MpiIsend"):
            rec += [ev.receiver, ev.communicator.name, ev.msg_tag, ev.msg_length]
        elif k in ("MpiRecv", "MpiIrecv"):
            rec += [ev.sender, ev.communicator.name, ev.msg_tag, ev.msg_length]
        elif k == "MpiCollectiveEnd":
            rec += [str(ev.collective_op), ev.communicator.name]
        out["locs"][loc.name + "@" + loc.group.name].append(rec)
print(json.dumps(out))
"""


@unittest.skipIf(not shutil.which("otf2-print"), "otf2-print not installed (otf2-tools)")
@unittest.skipIf(not have_py_otf2(), "python3-otf2 not installed (import otf2 fails)")
class Otf2Test(TraceTest):
    def setUp(self):
        super().setUp()
        if not otf2_built():
            self.skipTest("this weft was built without libotf2 (libotf2-trace-dev)")

    def export(self, data):
        out = os.path.join(self.tmp, "a.otf2")
        p = run([WEFT, "export", "--otf2", data, "-o", out])
        self.assertRegex(p.stderr, r"^weft: export: wrote .*/traces\.otf2: \d+ OTF2 events on \d+ locations, "
                                   r"[\d.]+ MB, from \d+ events, 0 dropped\n$")
        return os.path.join(out, "traces.otf2")

    def read(self, anchor):
        """Both readers: the Python module's events, and otf2-print's per location counts."""
        import json
        p = run([PY, "-c", READ, anchor])
        doc = json.loads(p.stdout)
        self.assertEqual(doc["res"], 10**9)
        printed = run(["otf2-print", anchor], timeout=240).stdout
        counts = collections.Counter()
        for m in re.finditer(r"^(\w+) +(\d+) +(\d+) ", printed, re.M):
            counts[(int(m.group(2)), m.group(1))] += 1
        return doc, counts

    def weft_slices(self, data):
        """weft's own slice count per (thread name or tid, track), from the SQLite export."""
        db = os.path.join(self.tmp, "t.db")
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        rows = con.execute("select p.upid, t.tid, t.name, s.track, count(*) from slices s join threads t using(utid) "
                           "join processes p using(upid) where s.track is null or s.track not like 'async %' "
                           "group by s.utid, s.track").fetchall()
        return rows, con

    def check_nesting(self, doc):
        """Enter/Leave balanced per location, in time order, each Leave naming its Enter's region."""
        for name, evs in doc["locs"].items():
            stack, last = [], 0
            for e in evs:
                self.assertGreaterEqual(e[1], last, f"{name}: events out of time order")
                last = e[1]
                if e[0] == "Enter":
                    stack.append(e[2])
                elif e[0] == "Leave":
                    self.assertTrue(stack, f"{name}: a Leave without an Enter")
                    self.assertEqual(stack.pop(), e[2], f"{name}: Leave of another region")
            self.assertEqual(stack, [], f"{name}: regions left open")

    def check_counts(self, data, doc, counts):
        """Each thread's location holds as many Enter and Leave events as weft has slices on it."""
        rows, con = self.weft_slices(data)
        by_loc = {}
        for name, evs in doc["locs"].items():
            c = collections.Counter(e[0] for e in evs)
            by_loc[name] = (c["Enter"], c["Leave"])
        # the location ids otf2-print shows are in definition order, as the module lists them
        for i, name in enumerate(doc["locs"]):
            self.assertEqual((counts[(i, "ENTER")], counts[(i, "LEAVE")]), by_loc[name], name)
        total = sum(r[4] for r in rows)
        self.assertEqual(sum(v[0] for v in by_loc.values()), total)
        self.assertEqual(sum(v[1] for v in by_loc.values()), total)
        threads = con.execute("select t.tid, t.name, p.name from threads t join processes p using(upid)").fetchall()
        for upid, tid, tname, track, n in rows:
            label = f"{tname} tid {tid}" if tname else f"tid {tid}"
            if track:
                label = f"{track} ({label})"
            match = [v for k, v in by_loc.items() if k.split("@")[0] == label]
            self.assertIn((n, n), match, f"{label}: {n} slices, locations {by_loc}")
        return threads

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_c_program(self):
        src = os.path.join(self.tmp, "prog.c")
        with open(src, "w") as f:
            f.write(C_PROG)
        exe = os.path.join(self.tmp, "prog")
        run(["cc", "-O1", "-g", "-finstrument-functions", "-I", os.path.join(SRC, "include"), src, "-o", exe,
             "-L", BUILD, "-lweft", "-lpthread", f"-Wl,-rpath,{BUILD}"])
        data = os.path.join(self.tmp, "c.data")
        run([WEFT, "record", "-q", "-o", data, "--", exe], cwd=self.tmp)
        doc, counts = self.read(self.export(data))
        self.check_nesting(doc)
        self.check_counts(data, doc, counts)
        for r in ("main", "fib", "worker", "step", "tick", "measured"):
            self.assertIn(r, doc["regions"])
        # the complete slice encloses the fib calls it measured: 4 of them on the main thread
        main_loc = [v for k, v in doc["locs"].items() if any(e[0] == "Enter" and e[2] == "step" for e in v)]
        self.assertEqual(len(main_loc), 1)
        depth, inside = [], 0
        for e in main_loc[0]:
            if e[0] == "Enter":
                if depth and depth[-1] == "measured" and e[2] == "fib":
                    inside += 1
                depth.append(e[2])
            elif e[0] == "Leave":
                depth.pop()
        self.assertEqual(inside, 4)
        metrics = sum(1 for v in doc["locs"].values() for e in v if e[0] == "Metric")
        self.assertEqual(metrics, 3)

    def test_python_program(self):
        if sanitizer():
            self.skipTest("python under a sanitizer build")
        src = os.path.join(self.tmp, "prog.py")
        with open(src, "w") as f:
            f.write(PY_PROG)
        data = os.path.join(self.tmp, "py.data")
        p = run([WEFT, "record", "-q", "--python", "-o", data, "--", PY, src], cwd=self.tmp, check=False)
        if p.returncode and "python" in p.stderr.lower():
            self.skipTest(f"weft record --python unavailable: {p.stderr.strip()}")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc, counts = self.read(self.export(data))
        self.check_nesting(doc)
        self.check_counts(data, doc, counts)
        for r in ("top", "middle", "leaf"):
            self.assertIn(r, doc["regions"])

    def mpi_job(self, flavor):
        cc, launcher = FLAVORS[flavor]
        if not shutil.which(cc) or not shutil.which(launcher[0]):
            self.skipTest(f"{cc} or {launcher[0]} not installed")
        if sanitizer():
            self.skipTest("the MPI launchers are not built with the sanitizer")
        exe = os.path.join(self.tmp, "mpi_app")
        run([cc, "-O1", "-Wno-stringop-overflow", "-o", exe, MPI_APP])
        data = os.path.join(self.tmp, "D")
        run(launcher + [WEFT, "record", "-q", "-o", data, "--", exe], cwd=self.tmp, timeout=120)
        doc, counts = self.read(self.export(data))
        self.check_nesting(doc)
        self.check_counts(data, doc, counts)
        rep = run([WEFT, "report", "--mpi", data]).stdout
        m = re.search(r"(\d+) messages matched, 0 flow ends unmatched, (\d+) collective instances", rep)
        self.assertTrue(m, rep)
        messages = int(m.group(1))
        kinds = collections.Counter(e[0] for v in doc["locs"].values() for e in v)
        self.assertEqual(kinds["MpiSend"] + kinds["MpiIsend"], messages)
        self.assertEqual(kinds["MpiRecv"] + kinds["MpiIrecv"], messages)
        self.assertEqual(kinds["MpiIrecvRequest"], kinds["MpiIrecv"])
        # otf2-print sees the same
        self.assertEqual(sum(n for (_, k), n in counts.items() if k in ("MPI_SEND", "MPI_ISEND")), messages)
        self.assertEqual(sum(n for (_, k), n in counts.items() if k in ("MPI_RECV", "MPI_IRECV")), messages)
        # every send has its receive: (sender, receiver, comm, tag, bytes) pairs up
        groups = {k.split("@")[1] for k in doc["locs"]}
        self.assertEqual(sorted(groups), [f"mpi_app rank {r}" for r in range(4)])
        rank = {k: int(k.rsplit(" ", 1)[1]) for k in doc["locs"]}
        sends, recvs = collections.Counter(), collections.Counter()
        for k, v in doc["locs"].items():
            for e in v:
                if e[0] in ("MpiSend", "MpiIsend"):
                    sends[(rank[k], e[3], e[4], e[5])] += 1
                elif e[0] in ("MpiRecv", "MpiIrecv"):
                    recvs[(e[3], e[4], e[5])] += 1
        self.assertEqual(sum(sends.values()), messages)
        self.assertIn("MPI_COMM_WORLD", doc["comms"])
        # collectives: Barrier, Bcast, Reduce, Gather, 2 Allreduce, Comm_split, Comm_free per rank
        colls = [e for v in doc["locs"].values() for e in v if e[0] == "MpiCollectiveEnd"]
        ops = collections.Counter(e[2].split(".")[-1] for e in colls)
        for op, n in (("BARRIER", 4), ("BCAST", 4), ("REDUCE", 4), ("GATHER", 4), ("ALLREDUCE", 8)):
            self.assertEqual(ops[op], n, ops)
        begins = sum(1 for v in doc["locs"].values() for e in v if e[0] == "MpiCollectiveBegin")
        self.assertEqual(begins, len(colls))

    def test_mpi_openmpi(self):
        self.mpi_job("openmpi")

    def test_mpi_mpich(self):
        self.mpi_job("mpich")

    def test_output_directory(self):
        """a user's directory is never written over; weft's own archive is replaced whole"""
        data, _ = self.record("features")
        out = os.path.join(self.tmp, "o")
        os.mkdir(out)
        with open(os.path.join(out, "mine.txt"), "w") as f:
            f.write("x")
        p = run([WEFT, "export", "--otf2", data, "-o", out], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("refusing to write", p.stderr)
        self.assertEqual(os.listdir(out), ["mine.txt"])
        os.remove(os.path.join(out, "mine.txt"))
        run([WEFT, "export", "-q", "--otf2", data, "-o", out])  # an empty directory
        self.assertEqual(sorted(os.listdir(out)), ["traces", "traces.def", "traces.otf2"])
        p = run([WEFT, "export", "--otf2", data, "-o", out])  # weft's own: replaced
        self.assertIn("traces.otf2", p.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)), sorted(["o", "trace.data"]))  # no sibling left
        p = run([WEFT, "export", "-q", "--otf2", "/nonexistent.data", "-o", os.path.join(self.tmp, "n")],
                check=False)
        self.assertEqual(p.returncode, 1)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "n")))
        self.assertEqual(sorted(os.listdir(self.tmp)), sorted(["o", "trace.data"]))


if __name__ == "__main__":
    main()
