"""Issue 29 item 4: `weft convert` run as an MPI job (src/tool/convert-job.c).

A 4-rank job of tests/mpi/mpi_app.c is recorded once (MPICH), then converted by one process and
by `mpirun -np N weft convert D -o F` under MPICH's Hydra (N = 2, 3) and Open MPI (N = 3):
- F is byte for byte the one-process conversion, and trace_processor reads the same processes,
  threads, slices, arguments and flows from it (an independent reader, not only cmp);
- no part file is left beside F;
- a rank that fails (MPMD: rank 1 reads a directory with no trace) fails the command with its
  reason in one line from rank 0, and leaves neither F nor a part;
- a rank whose part never comes (rank 1 is not weft at all) fails rank 0 after
  WEFT_CONVERT_JOB_TIMEOUT with a line that says which rank and where it looked;
- WEFT_CONVERT_SPLIT=0 keeps every rank converting alone (each writes F whole).
The same for `mpirun -np N weft report --mpi D` (src/tool/report-mpi.c): the text and CSV
reports are the one-process report's, byte for byte, the JSON too but for pending_peak; the
messages and collectives that cross the ranks' shares are matched in the merge; a failing rank
fails it in one line; the parts are not left in D; any other report is printed once."""
import glob
import json
import os
import re
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import WEFT, TraceTest, main, mpich_app_job, run  # noqa: E402

OMPI = ["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root"]
MPICH = ["mpirun.mpich"]
TABLES = ["select count(*) from process where pid > 0",
          "select count(*) from thread where tid > 0",
          "select count(*), sum(dur), count(distinct name) from slice",
          "select count(*) from args",
          "select count(*) from flow"]


def have(*progs):
    return all(shutil.which(p) for p in progs)


@unittest.skipUnless(have("mpicc.mpich", "mpirun.mpich"), "MPICH not installed (mpich, libmpich-dev)")
class ConvertJob(TraceTest):
    @classmethod
    def setUpClass(cls):
        cls.data = mpich_app_job(cls, "weft-convert-job-")
        cls.one = os.path.join(cls.dir, "one.pftrace")
        run([WEFT, "convert", "-q", cls.data, "-o", cls.one])
        with open(cls.one, "rb") as f:
            cls.one_bytes = f.read()

    def parts_left(self, out):
        return glob.glob(out + ".weft-part-*")

    def converted_by(self, launcher, n):
        out = os.path.join(self.tmp, f"by{n}.pftrace")
        p = run([*launcher, "-np", str(n), WEFT, "convert", self.data, "-o", out], timeout=120)
        self.assertIn(f"(converted by {n} ranks)", p.stderr)
        self.assertEqual(p.stderr.count("weft: convert: wrote"), 1, p.stderr)  # rank 0 says it, once
        with open(out, "rb") as f:
            self.assertEqual(f.read(), self.one_bytes, "not the one-process conversion's bytes")
        self.assertEqual(self.parts_left(out), [])
        return out

    def test_mpich_2_and_3_ranks(self):
        out = self.converted_by(MPICH, 2)
        self.assertEqual(self.tp(out, *TABLES), self.tp(self.one, *TABLES))
        self.tp_no_errors(out)
        self.converted_by(MPICH, 3)

    @unittest.skipUnless(have("mpirun.openmpi"), "Open MPI not installed (openmpi-bin)")
    def test_openmpi_3_ranks(self):
        out = self.converted_by(OMPI, 3)
        rows = self.tp(out, *TABLES)
        self.assertEqual(rows, self.tp(self.one, *TABLES))
        self.assertEqual(list(rows[0][0].values()), [4])  # the job's 4 processes

    def test_failing_rank(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        out = os.path.join(self.tmp, "F.pftrace")
        p = run([*MPICH, "-np", "1", WEFT, "convert", self.data, "-o", out, ":",
                 "-np", "1", WEFT, "convert", empty, "-o", out], check=False, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        lines = [line for line in p.stderr.splitlines() if line.startswith("weft: ")]
        self.assertEqual(len(lines), 1, p.stderr)  # one line, from rank 0, with rank 1's reason
        self.assertTrue(lines[0].startswith("weft: convert: rank 1 of 2 failed: "), lines)
        self.assertIn("no weft trace files", lines[0])
        self.assertFalse(os.path.exists(out))
        self.assertEqual(self.parts_left(out), [])
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("F.pftrace")], [])

    def test_missing_rank_times_out(self):
        out = os.path.join(self.tmp, "F.pftrace")
        p = run([*MPICH, "-np", "1", "-env", "WEFT_CONVERT_JOB_TIMEOUT", "1", WEFT, "convert", self.data, "-o", out,
                 ":", "-np", "1", "true"], check=False, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("weft: convert: no part from rank 1 of 2 in 1 s (is", p.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("F.pftrace")], [])

    def test_split_off(self):
        out = os.path.join(self.tmp, "F.pftrace")
        p = run([*MPICH, "-np", "2", "-genv", "WEFT_CONVERT_SPLIT", "0", WEFT, "convert", self.data, "-o", out],
                timeout=120)
        self.assertEqual(p.stderr.count("weft: convert: wrote"), 2, p.stderr)
        self.assertNotIn("converted by", p.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), self.one_bytes)


@unittest.skipUnless(have("mpicc.mpich", "mpirun.mpich"), "MPICH not installed (mpich, libmpich-dev)")
class ReportJob(TraceTest):
    @classmethod
    def setUpClass(cls):
        cls.data = mpich_app_job(cls, "weft-report-job-")
        cls.one = {fmt: run([WEFT, "report", "--mpi", f"--format={fmt}", cls.data]).stdout
                   for fmt in ("text", "csv", "json")}

    def left(self):
        return [n for n in os.listdir(self.data) if n.startswith(".weft-report")]

    def reported_by(self, launcher, n):
        for fmt, want in self.one.items():
            cmd = [*launcher, "-np", str(n), WEFT, "report", "--mpi", f"--format={fmt}", self.data]
            p = run(cmd, timeout=120, check=False)
            if p.returncode == -13 and not p.stdout and not p.stderr:
                # Hydra's mpiexec itself killed by SIGPIPE, nothing printed (once in a CI run,
                # pristine stage, the JSON report: its stdout forwarding as the ranks end;
                # pmodels/mpich#1455 is of that kind): said, and run again once
                print(f"{cmd}: the launcher died of SIGPIPE; again", file=sys.stderr)
                p = run(cmd, timeout=120, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr, f"weft: report: (the ranks of the trace analysed by {n} ranks)\n")
            if fmt == "json":  # the most held at once: by one share or by the merge, not by one walk
                got, want = (json.loads(x) for x in (p.stdout, want))
                self.assertGreater(got.pop("pending_peak"), 0)
                want.pop("pending_peak")
            else:
                got = p.stdout
            self.assertEqual(got, want, f"--format={fmt} by {n} ranks")
            self.assertEqual(self.left(), [])

    def test_mpich_2_and_3_ranks(self):
        summary = re.match(r"# MPI: 4 ranks on 1 host, \d+ calls, (\d+) messages matched, 0 flow ends unmatched, "
                           r"(\d+) collective instances \(0 incomplete\)", self.one["text"])
        self.assertTrue(summary, self.one["text"])
        self.assertGreater(int(summary.group(1)), 10)  # messages between the shares: matched in the merge
        self.assertGreater(int(summary.group(2)), 5)
        self.reported_by(MPICH, 2)
        self.reported_by(MPICH, 3)

    @unittest.skipUnless(have("mpirun.openmpi"), "Open MPI not installed (openmpi-bin)")
    def test_openmpi_3_ranks(self):
        self.reported_by(OMPI, 3)

    def test_failing_rank(self):
        # rank 1 asks for a window after the trace's end: it cannot open it
        p = run([*MPICH, "-np", "1", WEFT, "report", "--mpi", self.data, ":",
                 "-np", "1", WEFT, "report", "--mpi", "--time", "1000:2000", self.data], check=False, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        lines = [line for line in p.stderr.splitlines() if line.startswith("weft: ")]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith("weft: report: rank 1 of 2 failed: --time: the window starts at 1000 s"),
                        lines)
        self.assertEqual(p.stdout, "")
        self.assertEqual(self.left(), [])

    def test_missing_rank_times_out(self):
        p = run([*MPICH, "-np", "1", "-env", "WEFT_CONVERT_JOB_TIMEOUT", "1", WEFT, "report", "--mpi", self.data,
                 ":", "-np", "1", "true"], check=False, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("weft: report: no part from rank 1 of 2 in 1 s (is", p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(self.left(), [])

    def test_other_reports_once(self):
        for args in (["report"], ["report", "--processes"]):
            want = run([WEFT, *args, self.data]).stdout
            p = run([*MPICH, "-np", "3", WEFT, *args, self.data], timeout=120)
            self.assertEqual(p.stdout, want, args)

    def test_split_off(self):
        p = run([*MPICH, "-np", "2", "-genv", "WEFT_CONVERT_SPLIT", "0", WEFT, "report", "--mpi", self.data],
                timeout=120)
        self.assertEqual(p.stdout, self.one["text"] * 2)
        self.assertEqual(p.stderr, "")


if __name__ == "__main__":
    main()
