"""Snapshot triggers and policy (issue 20), in a normal recording: every request leaves a
`weft: snapshot` marker (SNAPSHOT metadata, an instant on the process's track) with its reason and
origin, and `weft info` counts them; the throttles refuse exactly what they must and say why;
--trigger marks the end of each matching slice that lasted too long and nothing else;
--snapshot-signal takes a snapshot without disturbing the program; a crash keeps its status and
leaves a fatal marker; the exit leaves none (it does only under the flight recorder); weft record
converts every DIR/snapshot-N. tests/programs/snapper.c is the program."""
import glob
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import threading
import time
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD

SNAPPER = os.path.join(BUILD, "snapper")
NO_PRELOAD = os.environ.get("WEFT_TEST_NO_PRELOAD")
EBUSY = 16
MARKERS = ("select s.ts, s.name, extract_arg(s.arg_set_id, 'debug.reason') as reason, "
           "extract_arg(s.arg_set_id, 'debug.origin') as origin, extract_arg(s.arg_set_id, 'debug.why') as why, "
           "t.type from slice s join track t on s.track_id = t.id where s.name like 'weft: snapshot%' order by s.ts")


def snapshot_records(data):
    """The SNAPSHOT records (type 36) of every .wmeta in DATA, read straight from the files (a
    running program's too): [(origin, number, refused, reason)]."""
    out = []
    for path in sorted(glob.glob(os.path.join(data, "*.wmeta"))):
        with open(path, "rb") as f:
            raw = f.read()
        at = 32
        while at + 8 <= len(raw):
            typ, _, n = struct.unpack_from("<HHI", raw, at)
            body = raw[at + 8:at + 8 + n]
            at += 8 + n
            if typ == 36 and len(body) >= 24:
                origin, number, refused, _err = struct.unpack_from("<IIII", body, 8)
                out.append((origin, number, refused, body[24:].split(b"\0")[0].decode()))
    return out


class Triggers(TraceTest):
    def pftrace(self, data):
        out, _ = self.convert(data, "t.pftrace")
        self.tp_no_errors(out)
        return out

    def markers(self, data):
        rows, = self.tp(self.pftrace(data), MARKERS)
        for r in rows:
            self.assertEqual(r["type"], "process_track_event", r)
        return rows

    def info(self, data):
        return run([WEFT, "info", data]).stdout

    def test_api_request_leaves_a_marker(self):
        data, p = self.record("snapper", ["api", 1, "why"])
        self.assertEqual(p.stdout, "0\n")
        rows = self.markers(data)
        self.assertEqual([(r["name"], r["reason"], r["origin"]) for r in rows], [("weft: snapshot", "why", "api")])
        info = self.info(data)
        self.assertIn("  snapshots: 1 taken, 0 refused\n", info)
        self.assertRegex(info, r'\n    \+\d+\.\d+ s  api      taken  "why"\n')
        # the same instant in Chrome JSON
        out, _ = self.convert(data, "t.json")
        doc = self.load_json(out)
        ev = [e for e in doc["traceEvents"] if e["name"].startswith("weft: snapshot")]
        self.assertEqual([(e["ph"], e["s"], e["args"]) for e in ev], [("i", "p", {"reason": "why", "origin": "api"})])

    def test_max_snapshots_refuses_the_rest(self):
        data, p = self.record("snapper", ["api", 5, "again"], options="max_snapshots=2")
        self.assertEqual(p.stdout.split(), ["0", "0", str(-EBUSY), str(-EBUSY), str(-EBUSY)])
        rows = self.markers(data)
        self.assertEqual([r["name"] for r in rows], ["weft: snapshot"] * 2 + ["weft: snapshot refused"] * 3)
        self.assertEqual({r["why"] for r in rows[2:]}, {"max-snapshots"})
        self.assertIn("  snapshots: 2 taken, 3 refused (3 max-snapshots)\n", self.info(data))
        # the snapshots table of weft export
        db = os.path.join(self.tmp, "t.db")
        run([WEFT, "export", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        got = con.execute("select upid, origin, reason, snapshot, refused from snapshots order by id").fetchall()
        self.assertEqual(got, [(1, "api", "again", None, None)] * 2 + [(1, "api", "again", None, "max-snapshots")] * 3)
        ts = [r[0] for r in con.execute("select ts from snapshots order by id")]
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(ts, [r["ts"] for r in rows])

    def test_min_interval_refuses_what_comes_too_soon(self):
        data, p = self.record("snapper", ["api", 3, "soon"], options="min_interval=3600s")
        self.assertEqual(p.stdout.split(), ["0", str(-EBUSY), str(-EBUSY)])
        rows = self.markers(data)
        self.assertEqual([(r["name"], r["why"]) for r in rows],
                         [("weft: snapshot", None)] + [("weft: snapshot refused", "min-interval")] * 2)
        self.assertIn("  snapshots: 1 taken, 2 refused (2 min-interval)\n", self.info(data))
        # max-snapshots=0: every request refused
        data, p = self.record("snapper", ["api", 2, "none"], options="max_snapshots=0")
        self.assertEqual(p.stdout.split(), [str(-EBUSY)] * 2)

    def check_trigger(self, data):
        pf = self.pftrace(data)
        marks, ends = self.tp(pf, MARKERS, "select name, ts + dur as end_ts from slice where name in "
                                           "('slow_a', 'slow_c', 'slowish', 'slow_b', 'other', 'run')")
        ends = {r["name"]: r["end_ts"] for r in ends}
        self.assertEqual(set(ends), {"slow_a", "slow_c", "slowish", "slow_b", "other", "run"})
        # one marker per slow slice (slow_c on another thread, WEFT_BEGIN/WEFT_END), none for the
        # quick ones that match (slowish, slow_b) nor for the long one that does not (other)
        self.assertEqual(len(marks), 2, marks)
        for m, name in zip(marks, ("slow_a", "slow_c")):
            self.assertEqual((m["name"], m["origin"]), ("weft: snapshot", "trigger"))
            self.assertTrue(m["reason"].startswith(name + " took "), m)
            self.assertTrue(m["reason"].endswith(" ms (> 20.000 ms)"), m)
            self.assertGreaterEqual(m["ts"], ends[name], f"the marker comes before {name}'s end")
        self.assertIn("  snapshots: 2 taken, 0 refused\n", self.info(data))

    def test_trigger_marks_the_end_of_a_slow_slice(self):
        data, p = self.record("snapper", ["slices"], options="trigger=slow*>20ms")
        self.assertEqual(p.stdout, "slices done\n")
        self.check_trigger(data)
        # several triggers: the shortest threshold of those that match counts
        data, p = self.record("snapper", ["slices"], options="trigger=nothing*>1ms,slow_?>1s,/^slow_.$/>20ms")
        self.check_trigger(data)
        # without the option: no marker
        data, p = self.record("snapper", ["slices"])
        self.assertEqual(self.markers(data), [])

    def test_no_marker_at_exit_without_flight_recorder(self):
        data, p = self.record("snapper", ["nothing"])
        self.assertEqual(snapshot_records(data), [])
        self.assertEqual(self.markers(data), [])
        self.assertNotIn("snapshots:", self.info(data))


@unittest.skipIf(NO_PRELOAD, "preloading is not testable in this build (TSan)")
class RecordTriggers(TraceTest):
    def rec(self, *args, opts=(), name="r.data", check=False):
        data = os.path.join(self.tmp, name)
        p = run([WEFT, "record", "-q", "-o", data, *opts, "--", SNAPPER, *map(str, args)], check=check, cwd=self.tmp)
        return data, p

    def info(self, data):
        return run([WEFT, "info", data]).stdout

    def test_record_options(self):
        data, p = self.rec("api", 4, "cli", opts=("--max-snapshots=3", "--no-convert"))
        self.assertEqual((p.returncode, p.stdout.split()), (0, ["0", "0", "0", str(-EBUSY)]), p.stderr)
        self.assertEqual([r[2] for r in snapshot_records(data)], [0, 0, 0, 1])
        data, p = self.rec("slices", opts=("--trigger", "nomatch>1ms", "--trigger", "slow*>20ms", "--after=0"),
                           name="t.data")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([(r[0], r[3].split()[0]) for r in snapshot_records(data)], [(3, "slow_a"), (3, "slow_c")])
        # bad values: usage errors before anything runs
        for bad in (("--trigger", "slow*"), ("--trigger", "slow*>soon"), ("--trigger", "a,b>1ms"),
                    ("--snapshot-signal=SEGV",), ("--snapshot-signal=NOPE",), ("--max-snapshots=-1",),
                    ("--min-interval=x",), ("--after=2h",)):
            with self.subTest(bad=bad):
                data, p = self.rec("nothing", opts=bad, name="bad.data")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertTrue(p.stderr.startswith("weft: record: "), p.stderr)
                self.assertFalse(os.path.exists(data))

    def start(self, *cmd):
        """Popen(cmd), killed after 60 s whatever happens (a readline that never returns)."""
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        timer = threading.Timer(60, proc.kill)
        timer.start()
        self.addCleanup(timer.cancel)
        return proc

    def program_pid(self, recorder):
        """The pid of the program weft record (pid recorder) runs."""
        with open(f"/proc/{recorder}/task/{recorder}/children") as f:
            return int(f.read().split()[0])

    def test_snapshot_signal(self):
        data = os.path.join(self.tmp, "s.data")
        go = os.path.join(self.tmp, "go")
        proc = self.start(WEFT, "record", "-q", "--no-convert", "-o", data, "--snapshot-signal=USR2", "--",
                          SNAPPER, "wait", go)
        try:
            self.assertEqual(proc.stdout.readline(), "ready\n")
            pid = self.program_pid(proc.pid)
            os.kill(pid, signal.SIGUSR2)
            os.kill(pid, signal.SIGUSR1)  # the program's own handler: still its own
            deadline = time.monotonic() + 30
            while not snapshot_records(data) and time.monotonic() < deadline:
                time.sleep(0.01)
            open(go, "w").close()
            out, _ = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.stdout.close()
        self.assertEqual((proc.returncode, "ready\n" + out), (3, "ready\ndone usr1=1 usr2=0\n"))
        self.assertEqual(snapshot_records(data), [(2, 0, 0, "SIGUSR2")])
        self.assertIn('signal   taken  "SIGUSR2"', self.info(data))

    def test_snapshot_signal_the_program_handles_is_the_programs(self):
        data = os.path.join(self.tmp, "o.data")
        go = os.path.join(self.tmp, "go")
        proc = self.start(WEFT, "record", "-q", "--no-convert", "-o", data, "--snapshot-signal=USR2", "--",
                          SNAPPER, "wait", go, "own")
        try:
            self.assertEqual(proc.stdout.readline(), "ready\n")
            os.kill(self.program_pid(proc.pid), signal.SIGUSR2)
            self.assertEqual(proc.stdout.readline(), "got usr2\n")
            open(go, "w").close()
            out, _ = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.stdout.close()
        self.assertEqual((proc.returncode, out), (3, "done usr1=0 usr2=1\n"))
        self.assertEqual(snapshot_records(data), [])

    def test_crash_keeps_its_status_and_leaves_a_fatal_marker(self):
        for mode, sig in (("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)):
            with self.subTest(mode=mode):
                untraced = run([SNAPPER, mode], check=False)
                self.assertEqual(untraced.returncode, -sig)
                data, p = self.rec(mode, name=f"{mode}.data")
                self.assertEqual(p.returncode, untraced.returncode, p.stderr)
                self.assertEqual(snapshot_records(data), [(4, 0, 0, f"killed by {sig.name}")])
                info = self.info(data)
                self.assertIn(f'fatal    taken  "killed by {sig.name}"', info)
                self.assertNotIn("not finished", info)
                rows, = self.tp(os.path.join(data, "trace.pftrace"), MARKERS)
                self.assertEqual([(r["name"], r["origin"], r["reason"]) for r in rows],
                                 [("weft: snapshot", "fatal", f"killed by {sig.name}")])

    def test_record_converts_snapshot_directories(self):
        src, _ = self.record("snapper", ["nothing"])
        names = ("snapshot-1", "snapshot-12", "snapshot-x", ".snapshot-2.tmp", "snapshot-03")
        for convert in (True, False):
            with self.subTest(convert=convert):
                name = f"c{int(convert)}.data"
                dest = os.path.join(self.tmp, name)
                # the program leaves copies of a trace in DIR: as finished snapshots would be
                # (snapshot-N), and under names that are not a finished snapshot's
                data, p = self.rec("mksnap", src, *(os.path.join(dest, n) for n in names),
                                   opts=() if convert else ("--no-convert",), name=name)
                self.assertEqual(p.returncode, 0, p.stderr)
                for n in names:
                    pf = os.path.join(dest, n, "trace.pftrace")
                    self.assertEqual(os.path.exists(pf), convert and n in ("snapshot-1", "snapshot-12"), n)
                if convert:
                    rows, = self.tp(os.path.join(dest, "snapshot-12", "trace.pftrace"),
                                    "select count(*) as n from slice where name = 'main'")
                    self.assertEqual(rows, [{"n": 1}])


if __name__ == "__main__":
    main()
