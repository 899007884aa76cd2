"""weft report --mpi and weft plot mpi on a hand-made 4-rank MPI job (tests/unit/mpi_job_trace.c
writes it, with the slices, arguments and flows libweft-mpi.so writes; its comment holds the
timeline). The expected numbers below are worked out from that timeline by the definitions in
src/analysis/mpi.c: time in MPI adds the outermost MPI slices, outside = span - in MPI, a
receive waits from its own begin to its send's begin, a collective member from its own begin
to the last member's begin (both clipped to the slice)."""
import csv
import io
import json
import os
import shutil
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD
from test_export import read_png

GEN = os.path.join(BUILD, "mpi_job_trace")
# sanitizer builds: fontconfig's never-freed configuration (cairo's text) is not weft's leak
PLOT_ENV = {"LSAN_OPTIONS": "suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                           "lsan-cairo-fonts.supp")}
SPAN = 2200000  # every rank's "main" slice: 1,000,000 .. 3,200,000

# rank -> function -> (calls, total_ns, bytes, wait_ns)
EXPECTED = {
    0: {"MPI_Send": (1, 10000, 1000, 0),
        "MPI_Recv": (1, 390000, 4000, 2300000 - 2010000),  # rank 3's send began at 2,300,000
        "MPI_Barrier": (1, 500010, 0, 3000000 - 2500000),  # rank 3 arrived last, at 3,000,000
        "MPI_Bcast": (1, 50000, 64, 3120000 - 3100000)},   # comm 77: rank 1 arrived at 3,120,000
    1: {"MPI_Send": (1, 10000, 2000, 0),
        "MPI_Recv": (1, 10000, 1000, 0),                   # rank 0's send began before it
        "MPI_Barrier": (1, 400020, 0, 3000000 - 2600000),
        "MPI_Bcast": (1, 30000, 64, 0),
        "MPI_Sendrecv": (1, 20000, 500, 3170000 - 3160000)},  # rank 3's side began later
    2: {"MPI_Recv": (1, 160000, 2000, 2100000 - 2050000),  # posted 50 us before rank 1's send
        "MPI_Send": (1, 10000, 3000, 0),
        "MPI_Barrier": (1, 300030, 0, 3000000 - 2700000)},
    3: {"MPI_Send": (1, 10000, 4000, 0),
        "MPI_Recv": (1, 10000, 3000, 0),
        "MPI_Get_count": (1, 1000, 0, 0),                  # nested in MPI_Recv
        "MPI_Sendrecv": (1, 20000, 500, 0),
        "MPI_Barrier": (1, 40, 0, 0)},
}
HOST = {0: "nodeA", 1: "nodeA", 2: "nodeB", 3: "nodeB"}
# nodeA holds rank 0: the reference host; nodeB's pids are made unique (docs/hosts.md: pid | 1 << 22)
NODEB = 1 << 22
PID = {0: 202, 1: 204, 2: 201 | NODEB, 3: 203 | NODEB}
# outermost slices only: rank 3's MPI_Get_count is inside its MPI_Recv
IN_MPI = {r: sum(v[1] for f, v in fns.items() if f != "MPI_Get_count") for r, fns in EXPECTED.items()}
WAIT = {r: sum(v[3] for v in fns.values()) for r, fns in EXPECTED.items()}
COMPUTE = {r: SPAN - IN_MPI[r] for r in EXPECTED}
# the Sendrecvs' bytes come from the receiving side (the destination is only the arrow's end)
MATRIX = {(0, 1): 1000, (1, 2): 2000, (2, 3): 3000, (3, 0): 4000, (1, 3): 500, (3, 1): 500}


class ReportMpi(TraceTest):
    def job(self, variant=None):
        d = os.path.join(self.tmp, "job-" + (variant or "plain"))
        os.makedirs(d)
        run([GEN, d] + ([variant] if variant else []))
        return d

    def test_numbers_worked_out(self):
        # the expectations themselves, spelled out once
        self.assertEqual(IN_MPI, {0: 950010, 1: 470020, 2: 470030, 3: 40040})
        self.assertEqual(WAIT, {0: 810000, 1: 410000, 2: 350000, 3: 0})

    def test_csv(self):
        p = run([WEFT, "report", "--mpi", "--format=csv", self.job()])
        rows = list(csv.reader(io.StringIO(p.stdout)))
        self.assertEqual(rows[0], ["rank", "host", "function", "calls", "total_ns", "bytes", "wait_ns"])
        want = [[str(r), HOST[r], f, *map(str, v)] for r in sorted(EXPECTED) for f, v in sorted(EXPECTED[r].items())]
        self.assertEqual(rows[1:], want)
        self.assertEqual(p.stderr, "")

    def test_json(self):
        j = json.loads(run([WEFT, "report", "--mpi", "-f", "json", self.job()]).stdout)
        self.assertEqual((j["calls"], j["messages"], j["unmatched_flows"], j["collectives"],
                          j["incomplete_collectives"], j["hosts"]), (17, 6, 0, 2, 0, 2))
        # what the pass held: ranks are walked in rank order; after rank 0: its send and receive,
        # the barrier and the broadcast (4), then rank 1's send (5) before its receive matched
        # rank 0's send, and again at rank 1's Sendrecv (its out and in ends) and rank 2's send;
        # each freed once its other ends were seen
        self.assertEqual((j["pending_peak"], j["pending_end"]), (5, 0))
        # the launcher (pid 200: no rank, no MPI call) is not a rank
        self.assertEqual([r["rank"] for r in j["ranks"]], [0, 1, 2, 3])
        for r in j["ranks"]:
            k = r["rank"]
            self.assertEqual((r["host"], r["pid"], r["by_pid"], r["span_ns"], r["mpi_ns"], r["outside_ns"], r["wait_ns"]),
                             (HOST[k], PID[k], False, SPAN, IN_MPI[k], COMPUTE[k], WAIT[k]))
            self.assertEqual({f["function"]: (f["calls"], f["total_ns"], f["bytes"], f["wait_ns"]) for f in r["functions"]},
                             EXPECTED[k])
        tot = {f["function"]: (f["calls"], f["total_ns"], f["bytes"], f["wait_ns"]) for f in j["functions"]}
        names = {f for fns in EXPECTED.values() for f in fns}
        self.assertEqual(tot, {f: tuple(sum(EXPECTED[r][f][i] for r in EXPECTED if f in EXPECTED[r]) for i in range(4))
                               for f in names})
        self.assertEqual([f["function"] for f in j["functions"]][:2], ["MPI_Barrier", "MPI_Recv"])  # by total
        im = j["imbalance"]
        mean = sum(COMPUTE.values()) // 4
        self.assertEqual((im["max_ns"], im["min_ns"], im["mean_ns"], im["slowest_rank"], im["fastest_rank"]),
                         (COMPUTE[3], COMPUTE[0], mean, 3, 0))
        self.assertAlmostEqual(im["ratio"], COMPUTE[3] * 4 / sum(COMPUTE.values()), places=5)
        self.assertEqual({(m["from"], m["to"]): m["bytes"] for m in j["matrix"]}, MATRIX)
        self.assertEqual({m["messages"] for m in j["matrix"]}, {1})
        self.assertEqual(j["pending_end"], 0)

    def test_text(self):
        out = run([WEFT, "report", "--mpi", self.job()]).stdout
        lines = out.splitlines()
        self.assertEqual(lines[0], "# MPI: 4 ranks on 2 hosts, 17 calls, 6 messages matched, 0 flow ends unmatched, "
                                   "2 collective instances (0 incomplete)")
        self.assertNotIn("pid order", out)
        for r in EXPECTED:  # columns in us (the largest value, 2.2 ms, is below 100 ms)
            row = next(l for l in lines if l.split()[:3] == [str(r), HOST[r], str(PID[r])])
            self.assertEqual(row.split()[3:8], ["%.3f" % (v / 1000) for v in (SPAN, IN_MPI[r], COMPUTE[r], WAIT[r])]
                             + ["%.1f" % (100 * IN_MPI[r] / SPAN)])
        fn = {l.split()[-1]: l.split()[:4] for l in lines if l.strip().endswith(tuple(n for n in EXPECTED[3]))}
        self.assertEqual(fn["MPI_Barrier"], ["4", "1200.100", "0", "1200.000"])
        self.assertEqual(fn["MPI_Recv"], ["4", "570.000", "10000", "340.000"])
        mean = sum(COMPUTE.values()) / 4
        self.assertIn("imbalance: compute time (outside MPI) max/mean %.3f: slowest rank 3 (%.3f us), fastest rank 0 "
                      "(%.3f us), mean %.3f us" % (COMPUTE[3] / mean, COMPUTE[3] / 1e3, COMPUTE[0] / 1e3,
                                                   (sum(COMPUTE.values()) // 4) / 1e3), out)
        i = lines.index("bytes sent (row: from rank, column: to rank)")
        self.assertEqual(lines[i + 1].split(), ["0", "1", "2", "3"])
        for s in range(4):
            self.assertEqual(lines[i + 2 + s].split(), [str(s)] + [str(MATRIX.get((s, d), 0)) for d in range(4)])

    def test_units_and_nonblocking_receives(self):
        """One unit for a table's times (Outside beside Span, Wait beside Total), --unit to fix
        it; an MPI_Irecv's bytes are its completing MPI_Wait's, and its row says so."""
        d = self.job("irecv")
        out = run([WEFT, "report", "--mpi", d]).stdout
        self.assertRegex(out, r"\n  Rank  Host +Pid +Span \(us\) +In MPI \(us\) +Outside \(us\) +Wait \(us\) +MPI %  Process\n")
        self.assertRegex(out, r"\n +Calls +Total \(us\) +Bytes +Wait \(us\)  Function \(all ranks\)\n")
        fn = {l.split()[-1]: l.split()[:4] for l in out.splitlines() if l.strip().startswith(("1 ", "3 ", "4 "))}
        self.assertEqual(fn["MPI_Irecv"], ["1", "1.000", "-", "0.000"])
        self.assertEqual(fn["MPI_Wait"], ["1", "159.000", "2000", "49.000"])  # rank 1's send began at 2,100,000
        self.assertIn("\n(-: a nonblocking receive's bytes are counted on the call that completed it, MPI_Wait* or "
                      "MPI_Test*)\n", out)
        out = run([WEFT, "report", "--mpi", "--unit", "ms", d]).stdout
        row = next(l for l in out.splitlines() if l.split()[:3] == ["2", HOST[2], str(PID[2])])
        self.assertEqual(row.split()[3], "%.3f" % (SPAN / 1e6))
        self.assertIn("Outside (ms)", out)
        self.assertIn("Total (ms)", out)
        self.assertRegex(out, r"slowest rank 3 \([0-9.]+ ms\)")
        p = run([WEFT, "report", "--mpi", "--unit", "min", d], check=False)
        self.assertEqual((p.returncode, p.stderr), (2, "weft: report: --unit takes ns, us, ms or s, not 'min'\n"))

    def test_many_ranks_pairs(self):
        # over 16 ranks the text lists the pairs by bytes instead of the matrix (-n: how many)
        d = self.job("wide")
        out = run([WEFT, "report", "--mpi", d]).stdout
        self.assertNotIn("row: from rank", out)
        i = out.index("bytes sent: the 20 largest of 20 pairs\n")
        rows = [l.split() for l in out[i:].splitlines()[2:]]
        self.assertEqual(rows, [[str(r), str((r + 1) % 20), str(100 * (r + 1)), "1"] for r in range(19, -1, -1)])
        out = run([WEFT, "report", "--mpi", "-n", "3", d]).stdout
        i = out.index("bytes sent: the 3 largest of 20 pairs\n")
        self.assertEqual([l.split()[0] for l in out[i:].splitlines()[2:]], ["19", "18", "17"])

    def test_unranked_by_pid(self):
        # no JOB records: the MPI processes are numbered in pid order, and said so (no rank 0:
        # the reference host is the first process's, 200's: nodeA, whose pids stay)
        d = self.job("unranked")
        j = json.loads(run([WEFT, "report", "--mpi", "-f", "json", d]).stdout)
        self.assertEqual([(r["rank"], r["pid"], r["by_pid"]) for r in j["ranks"]],
                         [(0, 202, True), (1, 204, True), (2, 201 | NODEB, True), (3, 203 | NODEB, True)])
        by_pid = {202: 0, 204: 1, 201 | NODEB: 2, 203 | NODEB: 3}  # the pid's rank in the ranked job
        self.assertEqual({r["pid"]: r["mpi_ns"] for r in j["ranks"]}, {p: IN_MPI[k] for p, k in by_pid.items()})
        out = run([WEFT, "report", "--mpi", d]).stdout
        self.assertIn("# ranks marked * had no rank in the trace: numbered after the others in pid order", out)
        self.assertRegex(out, r"\n +0\* +nodeA +202 ")

    def test_no_mpi(self):
        d = self.job("nompi")
        for fmt in ("text", "csv", "json"):
            p = run([WEFT, "report", "--mpi", "-f", fmt, d], check=False)
            self.assertEqual((p.returncode, p.stdout), (1, ""))
            self.assertEqual(p.stderr, "weft: report: --mpi: this trace has no MPI calls (record an MPI program with "
                                       "weft record; libweft-mpi.so writes them)\n")
        p = run([WEFT, "report", "--mpi", "--memory", d], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--mpi reports per rank", p.stderr)

    def plot(self, d, name, *args):
        png = os.path.join(self.tmp, name)
        out = run([WEFT, "plot", "mpi", d, "-o", png, "--describe", *args], env=PLOT_ENV).stdout
        return png, [json.loads(l) for l in out.splitlines()]

    def close(self, got, want):  # cairo rounds x * 255 its own way
        self.assertTrue(all(abs(a - b) <= 1 for a, b in zip(got, want)), (got, want))

    def test_plot(self):
        d = self.job()
        png, desc = self.plot(d, "mpi.png")
        w, h, px = read_png(png)
        self.assertEqual((w, h), (1600, 900))
        frame = desc[0]["frame"]
        self.assertEqual((frame["ranks"], frame["min_bytes"], frame["max_bytes"]), (4, 500, 4000))
        cells = {(c["cell"]["from"], c["cell"]["to"]): c["cell"] for c in desc if "cell" in c}
        self.assertEqual({k: c["bytes"] for k, c in cells.items()}, MATRIX)
        for c in cells.values():  # each cell drawn in its colour, in its place
            self.assertEqual(c["x"], frame["matrix_x"] + c["to"] * frame["matrix_side"] // 4)
            self.assertEqual(c["y"], frame["matrix_y"] + c["from"] * frame["matrix_side"] // 4)
            self.close(px(c["x"] + c["w"] // 2, c["y"] + c["h"] // 2), c["rgb"])
        # more bytes, darker
        dark = [sum(cells[k]["rgb"]) for k in sorted(MATRIX, key=MATRIX.get)]
        self.assertEqual(dark, sorted(dark, reverse=True))
        self.assertEqual(px(frame["matrix_x"] + 5, frame["matrix_y"] + 5), (255, 255, 255))  # 0 -> 0: nothing
        bars = {b["bar"]["rank"]: b["bar"] for b in desc if "bar" in b}
        ns_px = next(x["frame"]["ns_per_px"] for x in desc if "bars_x" in x.get("frame", {}))
        for r, b in bars.items():
            self.assertEqual((b["mpi_ns"], b["wait_ns"], b["compute_ns"]), (IN_MPI[r], WAIT[r], COMPUTE[r]))
            self.assertAlmostEqual(b["wait_w"], WAIT[r] / ns_px, delta=1)
            self.assertAlmostEqual(b["compute_w"], COMPUTE[r] / ns_px, delta=1)
            y = b["y"] + b["h"] // 2
            if b["wait_w"] > 2:
                self.close(px(b["x"] + 1, y), (217, 38, 38))  # waiting: red
            self.close(px(b["x"] + b["wait_w"] + b["mpi_w"] + b["compute_w"] // 2, y), (77, 176, 79))  # outside: green
        # the same job with other bytes: another picture; another size: that size
        heavy = self.job("heavy")
        png2, _ = self.plot(heavy, "heavy.png", "--size", "800x600")
        self.assertEqual(read_png(png2)[:2], (800, 600))
        png3, desc3 = self.plot(heavy, "heavy3.png")
        with open(png, "rb") as a, open(png3, "rb") as b:
            self.assertNotEqual(a.read(), b.read())
        self.assertEqual({(c["cell"]["from"], c["cell"]["to"]): c["cell"]["bytes"] for c in desc3 if "cell" in c}[0, 1],
                         100000)

    def test_plot_many_ranks(self):
        # 100 ranks: the rank labels step by 10 (over 80 ranks the label step once never ended)
        d = self.job("wider")
        png, desc = self.plot(d, "wider.png")
        frame = desc[0]["frame"]
        self.assertEqual(frame["ranks"], 100)
        cells = {(c["cell"]["from"], c["cell"]["to"]): c["cell"]["bytes"] for c in desc if "cell" in c}
        self.assertEqual(cells, {(r, (r + 1) % 100): 100 * (r + 1) for r in range(100)})
        self.assertEqual(len([b for b in desc if "bar" in b]), 100)
        self.assertEqual(read_png(png)[:2], (1600, 900))

    def test_plot_no_mpi(self):
        png = os.path.join(self.tmp, "none.png")
        p = run([WEFT, "plot", "mpi", self.job("nompi"), "-o", png], env=PLOT_ENV, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "weft: plot: this trace has no MPI calls: nothing to draw\n")
        self.assertFalse(os.path.exists(png))


SRC = os.environ.get("WEFT_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
MPI_APP = os.path.join(SRC, "tests", "mpi", "mpi_app.c")


@unittest.skipIf(sanitizer(), "the MPI launchers are not built with the sanitizer")
@unittest.skipUnless(os.path.exists(os.path.join(BUILD, "libweft-mpi.so")) and os.path.exists(MPI_APP)
                     and shutil.which("mpicc.openmpi"), "needs libweft-mpi.so, tests/mpi/mpi_app.c and Open MPI")
class ReportMpiRecorded(TraceTest):
    """A real recording: tests/mpi/mpi_app.c (libweft-mpi.so's test program, every message known)
    on 4 Open MPI ranks. Its bytes per pair are fixed by its phases; its last phase keeps rank r
    busy (r + 1) x 30 ms before a barrier, so rank 3 computes longest and rank 0 waits longest."""

    def test_job(self):
        app = os.path.join(self.tmp, "mpi_app")
        run(["mpicc.openmpi", "-O1", "-Wno-stringop-overflow", "-o", app, MPI_APP])
        data = os.path.join(self.tmp, "run.data")
        run([WEFT, "record", "-q", "-o", data, "--", "mpirun.openmpi", "--allow-run-as-root", "--oversubscribe",
             "-np", "4", app], timeout=120)
        j = json.loads(run([WEFT, "report", "--mpi", "-f", "json", data]).stdout)
        self.assertEqual([r["rank"] for r in j["ranks"]], [0, 1, 2, 3])
        self.assertEqual((j["unmatched_flows"], j["incomplete_collectives"], j["pending_end"]), (0, 0, 0))
        # bytes: ring 4, nonblocking 32 each way, Sendrecv 32 with rank ^ 1, split communicator 8
        # from its rank 0 to its rank 1, rank k's k ints to 0, persistent 2 x 4, Mprobe 12, Test 4
        ring = {(r, (r + 1) % 4): 4 + 32 + 8 + 12 + 4 for r in range(4)}
        want = dict(ring)
        for r in range(4):
            want[r, (r + 3) % 4] = want.get((r, (r + 3) % 4), 0) + 32
            want[r, r ^ 1] = want.get((r, r ^ 1), 0) + 32
        want[0, 2] = want.get((0, 2), 0) + 8
        want[1, 3] = want.get((1, 3), 0) + 8
        for k in (1, 2, 3):
            want[k, 0] = want.get((k, 0), 0) + 4 * k
        self.assertEqual({(m["from"], m["to"]): m["bytes"] for m in j["matrix"]}, want)
        for r in j["ranks"]:
            # (weft's own clock sync is neither: docs/mpi-report.md)
            self.assertGreater(r["weft_sync_ns"], 0)
            self.assertEqual(r["mpi_ns"] + r["outside_ns"] + r["weft_sync_ns"], r["span_ns"])
            self.assertEqual(r["wait_ns"], sum(f["wait_ns"] for f in r["functions"]))
            for f in r["functions"]:
                self.assertLessEqual(f["wait_ns"], f["total_ns"], f)
        # the deliberate imbalance, between the ranks 90 ms apart (adjacent ranks are 30 ms apart,
        # less than what an oversubscribed machine's preemptions can move time outside MPI by)
        compute = {r["rank"]: r["outside_ns"] for r in j["ranks"]}
        self.assertGreater(compute[3], compute[0])
        im = j["imbalance"]
        self.assertEqual((im["max_ns"], im["min_ns"]), (max(compute.values()), min(compute.values())))
        self.assertEqual((compute[im["slowest_rank"]], compute[im["fastest_rank"]]), (im["max_ns"], im["min_ns"]))
        barrier = {r["rank"]: next(f["wait_ns"] for f in r["functions"] if f["function"] == "MPI_Barrier")
                   for r in j["ranks"]}
        self.assertGreater(barrier[0], barrier[3])
        self.assertEqual(min(barrier.values()), 0)  # the last to arrive waited for no one


if __name__ == "__main__":
    main()
