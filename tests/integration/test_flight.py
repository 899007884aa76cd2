"""The flight recorder's ring and snapshots (flight=SIZE[,AGE][,noexit]; weft record
--flight-recorder): nothing reaches the disk until a snapshot; a snapshot DIR/snapshot-N is a
complete trace holding the ring's window with the context it needs (open slices re-emitted with
their original begin, counters' last values), one window start for every thread, no overlap
between snapshots, a fork child's own ring; memory stays bounded. Asserted with
trace_processor SQL on the converted snapshots (tests/programs/flightsteps.c)."""
import glob
import os
import signal
import subprocess
import re
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

PROG = os.path.join(BUILD, "flightsteps")


class Flight(TraceTest):
    def tp(self, out, *queries):
        """Rows as tuples, in the columns' order."""
        return [[tuple(r.values()) for r in rows] for rows in super().tp(out, *queries)]

    def fly(self, args, options, name="f.data"):
        data = os.path.join(self.tmp, name)
        # overflow=block: the writer keeps every event on a loaded machine (the window's content
        # is what is asserted)
        p = run([PROG, *map(str, args)], env={"WEFT_OPTIONS": f"output={data}:overflow=block:{options}"},
                cwd=self.tmp)
        return data, p

    def snapshot(self, data, n, pid=None):
        snap = os.path.join(data, f"snapshot-{n}")
        self.assertTrue(os.path.isdir(snap), os.listdir(data))
        out, _ = self.convert(snap, f"{os.path.basename(data)}-{n}.pftrace")
        rows, = self.tp(out, "select name, idx, severity, value from stats where value > 0 "
                             "and severity in ('error', 'data_loss')")
        self.assertEqual(rows, [], "trace_processor reported errors or data loss")
        return snap, out

    def steps(self, out):
        """(first step, last step, count) of the step slices, and the rows of run."""
        rows, run_rows, bad = self.tp(
            out,
            "select min(a.int_value), max(a.int_value), count(*) from slice s join args a using (arg_set_id) "
            "where s.name = 'step' and a.key = 'debug.i'",
            "select ts, dur, depth from slice where name = 'run'",
            # every step directly under run
            "select count(*) from slice s join slice p on s.parent_id = p.id where s.name = 'step' "
            "and p.name != 'run'")
        return rows[0], run_rows, bad[0][0]

    def test_window_holds_the_slow_step_under_run(self):
        data, p = self.fly(["steps", 30000, 100, 20000, 1], "flight=4M,noexit")
        self.assertEqual(os.listdir(data), ["snapshot-1"])  # nothing else on disk
        snap, out = self.snapshot(data, 1)
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual(last, 20000)  # the snapshot came right after the slow step
        self.assertGreater(first, 1000)  # the first steps were evicted
        self.assertEqual(n, last - first + 1)  # every step of the window, whole
        self.assertEqual(bad, 0)
        self.assertEqual(len(run_rows), 1)
        slow, = self.tp(out, "select count(*) from slice s join slice p on s.parent_id = p.id "
                             "where s.name = 'slow' and p.name = 'step'")
        self.assertEqual(slow[0][0], 1)
        run_ts, = self.tp(out, "select ts from slice where name = 'run'")
        first_step, = self.tp(out, "select min(ts) from slice where name = 'step'")
        self.assertLess(run_ts[0][0], first_step[0][0])
        # (different runs: compare each trace's run begin to its own first step, through info)
        info = run([WEFT, "info", snap]).stdout
        m = re.search(r"not in window: (\d+) events", info)
        self.assertTrue(m, info)
        self.assertGreater(int(m.group(1)), 1000 * 101)

    def test_exit_snapshot_two_compressors(self):
        """A ring of 8M or more is compressed at the snapshot by two threads (flight-zhelp.c:
        every other whole frame on a helper's), written in order: the exit's snapshot of a
        16M ring that holds the whole run has every step once, under run, in order, its
        frames compressed (before: the same bytes, from one thread)."""
        data, p = self.fly(["steps", 8000, 100, -1, 1], "flight=16M")  # ~9 MB of frames
        snaps = sorted(os.listdir(data), key=lambda x: int(x.split("-")[1]))
        snap, out = self.snapshot(data, int(snaps[-1].split("-")[1]))
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual((first, last, n, bad), (0, 7999, 8000, 0))
        self.assertEqual(len(run_rows), 1)
        order, = self.tp(out, "select count(*) from (select a.int_value i, lag(a.int_value) over (order by s.ts) p "
                              "from slice s join args a using (arg_set_id) where s.name = 'step' and a.key = 'debug.i') "
                              "where p is not null and i != p + 1")
        self.assertEqual(order[0][0], 0)  # the frames in their order
        info = run([WEFT, "info", snap]).stdout
        events = int(re.search(r"^events:\s+(\d+)", info, re.M).group(1))
        disk = int(re.search(r"^bytes disk:\s+(\d+)", info, re.M).group(1))
        self.assertGreaterEqual(events, 8000 * 102)
        self.assertLess(disk / events, 5.0, info)  # compressed: 2.6 bytes an event (packed alone: 10.9)

    def test_ring_says_what_it_holds(self):
        """weft record's summary and weft info say how many events a full ring holds, as the
        snapshots measured it, and a snapshot of a full ring holds about that many; the ring's
        totals add up: each event taken once (in the ring or in its thread's current chunk),
        written counts the windows' events only (before, it counted the re-emitted slices too and
        took no current chunk: more written than taken)."""
        data = os.path.join(self.tmp, "r.data")
        p = run([WEFT, "record", "-o", data, "--no-convert", "--flight-recorder=4M", "--options",
                 "overflow=block", "--", PROG, "steps", "200000", "20", "1000", "3"])
        m = re.search(r"flight recorder: a full 4 MiB ring holds about ([0-9.]+) M events of this program "
                      r"\(([0-9.]+) B each in the ring\)\n", p.stderr)
        self.assertTrue(m, p.stderr)
        full = float(m.group(1)) * 1e6
        self.assertAlmostEqual(full, 4 * 1048576 / float(m.group(2)), delta=0.01e6)
        snaps = sorted(os.listdir(data), key=lambda x: int(x.split("-")[1]))
        self.assertEqual(snaps, ["snapshot-1", "snapshot-2", "snapshot-3", "snapshot-4"])
        in_windows = 0
        for n, snap in enumerate(snaps, 1):
            info = run([WEFT, "info", os.path.join(data, snap)]).stdout
            t = re.search(r"flight recorder: (\d+) events taken, (\d+) evicted, (\d+) written in snapshots", info)
            w = re.search(r"not in window: \d+ events \(evicted, or before its start\); (\d+) in it, (\d+) open", info)
            r = re.search(r"\n  ring: +4 MiB, (\d+) events in [0-9.]+ MiB of it at the snapshot "
                          r"\([0-9.]+ B each\): about ([0-9.]+) M events when full\n", info)
            if n == 1:  # 1000 steps: all in the thread's current chunk
                self.assertIn("\n  ring:     4 MiB, nothing in it at the snapshot (the window is the threads' "
                              "current chunks)\n", info)
                r = True
            self.assertTrue(t and w and r, info)
            taken, evicted, written = map(int, t.groups())
            in_windows += int(w.group(1))
            self.assertEqual(written, in_windows, info)  # the windows' events, and nothing else
            self.assertLessEqual(written, taken, info)
            self.assertLessEqual(evicted, taken, info)
        # the exit snapshot: a full ring's window, about what the summary said (the ring's frames,
        # plus the current chunk and the re-emitted slices; a ring of whole frames is 75-100%
        # full, by where the last frame that did not fit fell: a frame here is some 0.4 MiB)
        events = int(re.search(r"\nevents: +(\d+)\n", info).group(1))
        self.assertGreater(events, 0.75 * full, (events, full))
        self.assertLess(events, 1.1 * full, (events, full))
        self.assertAlmostEqual(float(r.group(2)) * 1e6, full, delta=0.01e6)
        self.assertNotIn("Perfetto UI", p.stderr)
        # where a full ring is more than the UI loads (its limit lowered here: 30 M by default)
        # record says so, and so does convert of a snapshot that holds more
        ui = {"WEFT_UI_EVENTS": "200000"}
        p = run([WEFT, "record", "-o", data, "--no-convert", "--flight-recorder=4M", "--options",
                 "overflow=block", "--", PROG, "steps", "200000", "20", "1000", "1"], env=ui)
        self.assertIn("M events of this program (", p.stderr)
        self.assertIn("; more than the Perfetto UI loads: a smaller ring, or weft convert --time A:B on a snapshot\n",
                      p.stderr)
        out = os.path.join(self.tmp, "r.pftrace")
        c = run([WEFT, "convert", os.path.join(data, "snapshot-2"), "-o", out], env=ui)
        self.assertRegex(c.stderr, r"warning: \d+ events: more than the Perfetto UI in a browser loads \(about 0.2 M\); "
                                   r"convert a window of it with --time A:B")
        c = run([WEFT, "convert", os.path.join(data, "snapshot-2"), "-o", out])
        self.assertNotIn("Perfetto UI", c.stderr)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_reemitted_stacks_equal_the_full_recording(self):
        """The same deterministic program (trees of slices up to 12 deep, with setjmp/longjmp
        discarding levels) recorded whole and through a small ring: every slice of the snapshot,
        the re-emitted ones included, has the parent it has in the full recording, and the
        window's outermost slices are the full recording's outermost ones (run)."""
        ids = {}
        for name, opts in (("full", []), ("ring", ["--flight-recorder=1M"])):
            data = os.path.join(self.tmp, f"{name}.data")
            run([WEFT, "record", "-q", "-o", data, *opts, "--", PROG, "deep", "300"])
            if name == "ring":
                snap, out = self.snapshot(data, 1)
                info = run([WEFT, "info", snap]).stdout
                m = re.search(r"not in window: (\d+) events \(evicted, or before its start\); \d+ in it, "
                              r"(\d+) open slices re-emitted", info)
                self.assertTrue(m and int(m.group(1)) > 100000 and int(m.group(2)) >= 1, info)
            else:
                out = os.path.join(data, "trace.pftrace")
                self.tp_no_errors(out)
            rows, runs = self.tp(
                out,
                "select a.int_value, pa.int_value, pp.name, s.depth from slice s "
                "join args a on a.arg_set_id = s.arg_set_id and a.key = 'debug.id' "
                "join slice pp on s.parent_id = pp.id "
                "left join args pa on pa.arg_set_id = pp.arg_set_id and pa.key = 'debug.id' "
                "where s.name = 'lvl'",
                "select count(*), sum(dur >= 0) from slice where depth = 0 and name = 'run'")
            self.assertEqual(runs, [(1, 1)])
            ids[name] = {r[0]: r[1:] for r in rows}
            self.assertEqual(len(ids[name]), len(rows))  # each id once
        full, ring = ids["full"], ids["ring"]
        self.assertGreater(len(full), 50000)
        self.assertGreater(len(ring), 1000)
        wrong = [(i, ring[i], full.get(i)) for i in ring if ring[i] != full.get(i)]
        self.assertEqual(wrong[:5], [])

    def test_newest_kept_when_the_writer_falls_behind(self):
        """Without overflow=block, with two busy loops beside it: the program outruns its
        writer, and what goes is the oldest chunks (whole, their stacks kept), never the newest:
        the snapshot right after step 20,000 holds it, every step of the window whole under
        run. (Before, the program's own newest chunks were dropped: step 20,000 was missing in
        2 of 3 loaded runs.)"""
        load = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        try:
            for i in range(3):
                data = os.path.join(self.tmp, f"n{i}.data")
                p = run([PROG, "steps", "30000", "100", "20000", "1"],
                        env={"WEFT_OPTIONS": f"output={data}:flight=8M,noexit"}, cwd=self.tmp)
                snap, out = self.snapshot(data, 1)
                (first, last, n), run_rows, bad = self.steps(out)
                self.assertEqual(last, 20000, i)
                self.assertEqual(n, last - first + 1)
                self.assertEqual((len(run_rows), bad), (1, 0))
                info = run([WEFT, "info", snap]).stdout
                self.assertIn("dropped:    0", info)
        finally:
            for x in load:
                x.kill()
                x.wait()

    def test_run_begins_at_its_true_time(self):
        """run's BEGIN, evicted long ago, is re-emitted with its original time: before the
        window's first event by about the time the evicted steps took."""
        data, _ = self.fly(["steps", 20001, 100, 20000, 1], "flight=1M,noexit")
        snap, out = self.snapshot(data, 1)
        rows, = self.tp(out, "select (select min(ts) from slice where name = 'step') - "
                             "(select ts from slice where name = 'run')")
        (first, last, n), _, _ = self.steps(out)
        # at least 10 ns per evicted event of the steps before the window
        self.assertGreater(rows[0][0], first * 101 * 10)

    def test_snapshots_do_not_overlap(self):
        # 2M: the 1000 steps between two snapshots fit whatever the load does to their packing
        data, p = self.fly(["steps", 24000, 100, 20000, 3], "flight=2M,noexit")
        self.assertEqual(sorted(os.listdir(data)), ["snapshot-1", "snapshot-2", "snapshot-3"])
        spans = []
        for k in (1, 2, 3):
            _, out = self.snapshot(data, k)
            (first, last, n), run_rows, bad = self.steps(out)
            self.assertEqual(bad, 0)
            self.assertEqual(len(run_rows), 1)  # run re-emitted in each
            spans.append((first, last))
        self.assertEqual(spans[0][1], 20000)
        # the next snapshot starts where the previous ended: step 20001 on, 1000 steps each
        self.assertEqual(spans[1], (20001, 21000))
        self.assertEqual(spans[2], (21001, 22000))

    def test_exit_snapshot(self):
        # 4M: the 2000 steps after the first snapshot (~1M packed and compressed when timestamps
        # are far apart, on a loaded machine) all fit
        data, p = self.fly(["steps", 22000, 100, 20000, 1], "flight=4M")
        self.assertEqual(sorted(os.listdir(data)), ["snapshot-1", "snapshot-2"])
        _, out = self.snapshot(data, 2)
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual((first, last), (20001, 21999))
        self.assertEqual(run_rows[0][2], 0)
        self.assertEqual(bad, 0)

    def test_one_window_start_for_all_threads(self):
        # compression=0: the ring holds ~1M events at most, so every worker loses its start
        data, p = self.fly(["threads", 4, 20000], "flight=1M,noexit:compression=0")
        snap, out = self.snapshot(data, 1)
        info = run([WEFT, "info", snap]).stdout
        start = int(re.search(r"window:\s+from (\d+)", info).group(1))
        self.assertGreater(int(re.search(r"(\d+) evicted", info).group(1)), 0)
        # every worker's events from the one window start on (only the re-emitted BEGINs of
        # the slices open at the start are older: instants are never re-emitted)
        firsts, = self.tp(out, "select t.tid, min(s.ts) from slice s join thread_track tt on s.track_id = tt.id "
                               "join thread t using (utid) where s.name = 'w' group by t.tid")
        # (a worker the scheduler ran to its end early may have nothing left in the ring: how
        # many workers have events in the window depends on the machine's load, not on weft)
        self.assertGreaterEqual(len(firsts), 1)
        for tid, ts in firsts:
            self.assertGreaterEqual(ts, start)
        nested, = self.tp(out, "select count(*) from slice s left join slice p on s.parent_id = p.id "
                               "where s.name = 'work' and (p.name is null or p.name != 'worker')")
        self.assertEqual(nested[0][0], 0)
        workers, = self.tp(out, "select count(*) from slice where name = 'worker'")
        self.assertEqual(workers[0][0], 4)
        self.assertIn("not in window:", info)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_FORK"), "TSan cannot follow a fork of a threaded process")
    def test_fork_child_has_its_own_ring(self):
        data, p = self.fly(["fork", 8000], "flight=1M,noexit")
        snaps = sorted(os.listdir(data))
        self.assertEqual(len(snaps), 2, snaps)
        names = set()
        for s in snaps:
            snap, out = self.snapshot(data, int(s.split("-")[1]))
            # the number a snapshot's metadata gives is its directory's (the two processes
            # share DIR: the parent's first was numbered 1 in snapshot-2, before)
            self.assertRegex(run([WEFT, "info", snap]).stdout, rf", snapshot {s.split('-')[1]}: (child|parent)\n")
            rows, = self.tp(out, "select name from slice where depth = 0 and name not like 'weft: %'")
            names.add(tuple(sorted(set(r[0] for r in rows))))
            pids, = self.tp(out, "select count(distinct pid) from process where pid > 0 and name like '%flightsteps%'")
        # the child's snapshot has its own outer slices (run, inherited, and child), the parent's run
        self.assertIn(("run",), names)
        self.assertEqual(len(names), 2)

    def test_counter_value_before_the_window(self):
        data, p = self.fly(["counter", 30000], "flight=1M,noexit:compression=0")
        snap, out = self.snapshot(data, 1)
        self.assertGreater(int(re.search(r"(\d+) evicted", run([WEFT, "info", snap]).stdout).group(1)), 0)
        rows, = self.tp(out, "select c.value from counter c join counter_track t on c.track_id = t.id "
                             "where t.name = 'level'")
        self.assertEqual([r[0] for r in rows], [42])

    def test_age_keeps_only_the_recent_time(self):
        # a 64M ring holds every step; AGE=10ms evicts what is older: the 30 ms sleep before the
        # snapshot leaves the slow step's chunk only
        data, p = self.fly(["steps", 20001, 20, 20000, 1], "flight=64M,10ms,noexit")
        _, out = self.snapshot(data, 1)
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual(last, 20000)
        self.assertGreater(first, 10000)
        self.assertEqual((len(run_rows), bad), (1, 0))
        data, p = self.fly(["steps", 20001, 20, 20000, 1], "flight=64M,noexit", name="noage.data")
        _, out = self.snapshot(data, 1)
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual((first, last), (0, 20000))

    def test_record_option(self):
        data = os.path.join(self.tmp, "r.data")
        p = run([WEFT, "record", "-o", data, "--flight-recorder=1M", "--options", "overflow=block", "--", PROG,
                 "steps", "22000", "20", "20000", "1"])
        self.assertEqual(sorted(os.listdir(data)), ["snapshot-1", "snapshot-2"])  # the API's, the exit's
        self.assertIn("weft: record: flight recorder: 2 snapshots in", p.stderr)
        info = run([WEFT, "info", os.path.join(data, "snapshot-2")]).stdout
        self.assertIn("snapshot 2: exit", info)
        # each snapshot converted when weft record ends, and opened alone
        for n in (1, 2):
            pf = os.path.join(data, f"snapshot-{n}", "trace.pftrace")
            self.assertTrue(os.path.exists(pf), os.listdir(os.path.join(data, f"snapshot-{n}")))
            self.tp_no_errors(pf)
            runs, = self.tp(pf, "select count(*) from slice where name = 'run'")
            self.assertEqual(runs[0][0], 1)
        p = run([WEFT, "record", "-o", data, "--no-convert", "--flight-recorder=1M", "--", PROG,
                 "steps", "2000", "20", "1000", "1"])
        self.assertFalse(os.path.exists(os.path.join(data, "snapshot-1", "trace.pftrace")))
        # the earlier run's DIR (snapshots only) was a trace directory: moved aside, whole
        self.assertEqual(sorted(os.listdir(data + ".old")), ["snapshot-1", "snapshot-2"])
        self.assertIn("trace.pftrace", os.listdir(os.path.join(data + ".old", "snapshot-2")))
        p = run([WEFT, "record", "-o", data, "--flight-recorder=100K", "--", "true"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad --flight-recorder '100K'", p.stderr)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or "thread" in sanitizer(),
                     "preloading is not testable in this build (TSan)")
    def test_python_leaf_calls_in_a_snapshot(self):
        """A Python call with nothing inside is one LEAF record (format 1.12): a snapshot keeps
        it whether it comes from the ring's frames or from the records the snapshot packs itself
        (the threads' current chunks: they once lost every leaf slice, their chunks not flagged)."""
        script = os.path.join(self.tmp, "leaves.py")
        with open(script, "w") as f:
            f.write("import sys\ndef leaf(i):\n    return i\ndef mid(i):\n    return leaf(i) + leaf(i + 1)\n"
                    "s = 0\nfor i in range(int(sys.argv[1])):\n    s += mid(i)\nprint(s)\n")
        for n, name in ((3000, "small"), (150000, "large")):  # the current chunk only; ring frames too
            data = os.path.join(self.tmp, f"{name}.data")
            run([WEFT, "record", "-q", "-o", data, "--flight-recorder=4M", "--options", "overflow=block", "--python",
                 "--", "/usr/bin/python3", script, str(n)])
            pf = os.path.join(data, "snapshot-1", "trace.pftrace")
            self.tp_no_errors(pf)
            (counts,), parents = self.tp(
                pf, "select sum(name = 'mid'), sum(name = 'leaf') from slice",
                "select p.name, count(*) from slice s join slice p on s.parent_id = p.id where s.name = 'leaf' "
                "group by p.name")
            mids, leaves = counts
            if n == 3000:
                self.assertEqual((mids, leaves), (3000, 6000))
            self.assertGreater(mids, 1000)
            self.assertLessEqual(abs(leaves - 2 * mids), 2, (mids, leaves))  # (a window cut in a mid)
            self.assertEqual([r[0] for r in parents], ["mid"], parents)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_fatal_signal_writes_the_window(self):
        # weft record's fatal-signal path stops the trace from the handler (weft_g.in_signal):
        # the dump allocates nothing there; the exit status stays the signal's
        data = os.path.join(self.tmp, "c.data")
        p = run([WEFT, "record", "-o", data, "--flight-recorder=1M", "--options", "overflow=block", "--", PROG,
                 "crash", "20000"], check=False)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        self.assertEqual(os.listdir(data), ["snapshot-1"])
        snap, out = self.snapshot(data, 1)
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual(last, 19999)
        self.assertGreater(first, 0)
        self.assertEqual(n, last - first + 1)
        self.assertEqual((len(run_rows), bad), (1, 0))
        self.assertIn("snapshot 1: killed by SIGSEGV", run([WEFT, "info", snap]).stdout)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_crash_window_always_written(self):
        """A fatal signal writes the window however it comes: to the main thread or another,
        SEGV, BUS, ABRT or TERM, while the program outruns its writer (its threads are inside
        weft's drop path much of the time) and two busy loops share the two cores. Before the
        handler waited for locks other threads held (and wrote from inside the runtime), about
        half such runs wrote nothing and said nothing."""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        sigs = [signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGTERM]
        load = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        try:
            for i in range(8):
                sig, other = sigs[i % 4], i >= 4
                data = os.path.join(self.tmp, f"k{i}.data")
                p = subprocess.Popen([WEFT, "record", "-q", "--no-convert", "-o", data, "--flight-recorder=16M",
                                      "--", PROG, "spin", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
                line = p.stdout.readline().split()
                self.assertEqual(line[0], "ready", line)
                pid, worker = int(line[1]), int(line[2])
                if other:  # tgkill: to the worker thread itself
                    self.assertEqual(libc.syscall(234 if os.uname().machine == "x86_64" else 131, pid, worker,
                                                  int(sig)), 0)
                else:
                    os.kill(pid, sig)
                _, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, -sig, err)
                name = signal.Signals(sig).name
                self.assertEqual(os.listdir(data), ["snapshot-1"], (name, other, err))
                info = run([WEFT, "info", os.path.join(data, "snapshot-1")]).stdout
                self.assertIn(f"snapshot 1: killed by {name}", info)
                # both threads' events, whatever the signal interrupted (a chunk switch held the
                # pool's lock: the other thread's chunks waited for it, and the window was empty).
                # (16M: a ring well above the 4M of chunks that may wait for the writer; with 4M
                # the chunks the dump waits for could turn the whole ring over, and the window,
                # starting at the other thread's first kept event, held 2 of this one's events)
                per = dict(re.findall(r'thread (\d+) "[^"]*": (\d+) events', info))
                self.assertEqual(sorted(per), sorted([str(pid), str(worker)]), (name, other, info))
                self.assertTrue(all(int(n) > 1000 for n in per.values()), (name, other, info))
        finally:
            for x in load:
                x.kill()
                x.wait()
        # the last window (TERM to the worker): both threads' steps, each under its run
        _, out = self.snapshot(data, 1)
        runs, steps = self.tp(out, "select count(*) from slice where name = 'run' and depth = 0",
                              "select count(*), sum(p.name = 'run') from slice s join slice p on s.parent_id = p.id "
                              "where s.name = 'step'")
        self.assertEqual(runs[0][0], 2)
        self.assertGreater(steps[0][0], 100)
        self.assertEqual(steps[0][0], steps[0][1])

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_signal_during_a_snapshot_still_writes_the_window(self):
        """A SIGTERM sent while the program is inside weft_snapshot() (a program snapshotting in
        a loop is, nearly all the time): that thread holds the snapshot's locks, so the signal
        waits until the snapshot is written, then the crash window follows it. Before, the
        handler found the locks taken and the window was lost, silently."""
        for i in range(3):
            data = os.path.join(self.tmp, f"w{i}.data")
            p = subprocess.Popen([WEFT, "record", "-q", "--no-convert", "-o", data, "--flight-recorder=1M",
                                  "--max-snapshots=1000000", "--", PROG, "snaploop", "20"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.stdout.readline(), "ready\n")
            kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
            os.kill(int(kids[0]), signal.SIGTERM)
            _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, -signal.SIGTERM, err)
            self.assertEqual(glob.glob(os.path.join(data, "window-not-written-*")), [])
            snaps = sorted(os.listdir(data), key=lambda x: int(x.split("-")[1]))
            info = run([WEFT, "info", os.path.join(data, snaps[-1])]).stdout
            self.assertIn(f"snapshot {len(snaps)}: killed by SIGTERM", info)

    def test_info_lists_a_window_not_written(self):
        """The runtime's one line on a crash window it could not write (lib/fatal.c) is what
        weft info shows of a directory that holds it, beside the snapshots."""
        data = os.path.join(self.tmp, "nw.data")
        os.makedirs(data)
        line = "pid 7, killed by SIGSEGV: the window was not written: the snapshot lock is held by the thread"
        with open(os.path.join(data, "window-not-written-7.txt"), "w") as f:
            f.write(line + "\n")
        info = run([WEFT, "info", data]).stdout
        self.assertIn("a flight recorder directory", info)
        self.assertIn(f"not written: {line} (window-not-written-7.txt)", info)

    def test_switch_output_parts_make_the_whole(self):
        data = os.path.join(self.tmp, "s.data")
        p = run([WEFT, "record", "-o", data, "--switch-output=1M", "--options", "overflow=block", "--", PROG,
                 "steps", "30000", "100", "-1", "1"])
        parts = sorted(os.listdir(data), key=lambda x: int(x.split("-")[1]))
        # (how many: the trace's packed size over 1M, which depends on the timestamps' spacing)
        self.assertGreaterEqual(len(parts), 2, parts)
        self.assertTrue(all(x.startswith("part-") for x in parts), parts)
        self.assertIn(f"weft: record: {len(parts)} parts in", p.stderr)
        total, steps, ticks = 0, set(), 0
        for x in parts:
            d = os.path.join(data, x)
            info = run([WEFT, "info", d]).stdout
            total += int(re.search(r"; (\d+) in it,", info).group(1))
            self.assertIn("not in window: 0 events", info)
            out, _ = self.convert(d, x + ".pftrace")  # each readable alone
            errors, ids, n, runs, bad = self.tp(
                out, "select name, value from stats where value > 0 and severity in ('error', 'data_loss')",
                "select distinct a.int_value from slice s join args a using (arg_set_id) "
                "where s.name = 'step' and a.key = 'debug.i'",
                "select count(*) from slice where name = 'tick'",
                "select count(*) from slice where name = 'run' and depth = 0",
                "select count(*) from slice s join slice p on s.parent_id = p.id where s.name = 'step' "
                "and p.name != 'run'")
            self.assertEqual(errors, [])
            steps |= {r[0] for r in ids}
            ticks += n[0][0]
            self.assertEqual((runs[0][0], bad[0][0]), (1, 0))  # run in every part, steps under it
        # together the whole: every event once (2 per step, 100 ticks, run's begin and end)
        self.assertEqual(total, 30000 * 102 + 2)
        self.assertEqual(ticks, 30000 * 100)
        self.assertEqual(steps, set(range(30000)))

    def test_switch_max_files(self):
        # three weft_snapshot() calls (at steps 0, 1000 and 2000) make a part each, whatever
        # the machine's speed: with only size switches, a run that ends before its writers put
        # 256K into the ring made two parts (the rest drains into the last), 4 runs in 10
        data, p = self.fly(["steps", "30000", "20", "-1", "3"], "switch_output=256K:switch_max_files=2")
        parts = sorted(os.listdir(data), key=lambda x: int(x.split("-")[1]))
        self.assertEqual(len(parts), 2, parts)
        n = int(parts[-1].split("-")[1])
        self.assertGreater(n, 2)
        self.assertEqual(parts, [f"part-{n - 1}", f"part-{n}"])
        last = []  # the exit's snapshot and the last part (after the writers drained) end the run
        for x in parts:
            steps, = self.tp(self.snapshot_of(os.path.join(data, x)),
                             "select max(a.int_value) from slice s join args a using (arg_set_id) "
                             "where s.name = 'step' and a.key = 'debug.i'")
            last.append(steps[0][0] or 0)
        self.assertEqual(max(last), 29999)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_FORK"), "TSan cannot follow a fork of a threaded process")
    def test_switch_max_files_keeps_each_process_parts(self):
        # a fork child's part (its weft_snapshot()), then the parent's two (its weft_snapshot()
        # and its exit): with switch_max_files=1 each process keeps its own last one; before,
        # the parent's second part removed part-1, the child's
        data, p = self.fly(["fork", 3000], "switch_output=64M:switch_max_files=1")
        parts = sorted(os.listdir(data), key=lambda x: int(x.split("-")[1]))
        self.assertEqual(parts, ["part-1", "part-3"])
        children, = self.tp(self.snapshot_of(os.path.join(data, "part-1")), "select count(*) from slice where name = 'child'")
        self.assertEqual(children, [(1,)])
        runs, = self.tp(self.snapshot_of(os.path.join(data, "part-3")), "select count(*) from slice where name = 'child'")
        self.assertEqual(runs, [(0,)])

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_exit_underscore_writes_the_exit_snapshot(self):
        # _exit skips exit's handlers: the stop comes from weft's _exit, which wrote no window
        # (every multiprocessing child ends in os._exit)
        data = os.path.join(self.tmp, "q.data")
        p = run([WEFT, "record", "-q", "--no-convert", "--flight-recorder=4M", "-o", data, "--", PROG, "quickexit",
                 "2000"], check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(os.listdir(data), ["snapshot-1"])
        snap, out = self.snapshot(data, 1)
        self.assertRegex(run([WEFT, "info", snap]).stdout, r", snapshot 1: exit\n")
        (first, last, n), run_rows, bad = self.steps(out)
        self.assertEqual((first, last, n), (0, 1999, 2000))
        self.assertEqual(bad, 0)

    def snapshot_of(self, d):
        out, _ = self.convert(d, os.path.basename(d) + ".pftrace")
        return out

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "TSan's shadow memory is several times what the program touches")
    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_longjmp_loop_stays_bounded_and_nested(self):
        """A setjmp/longjmp loop (what Lua does on every error and coroutine switch) under a
        1M ring: the longjmps close the skipped levels in the ring's thread state too, so
        memory stays within 1M x 1.1 + 8 MiB (it grew by the skipped levels of every round
        before: 503 MB in 18 s), and the snapshot at exit has main and run re-emitted, every
        outer under run, after under outer, nothing else at depth 0 (before: no main, every
        slice at depth 0)."""
        prog = os.path.join(BUILD, "ft_longjmp_O2")
        data = os.path.join(self.tmp, "j.data")
        p = run([WEFT, "record", "-q", "--no-convert", "-o", data, "--flight-recorder=1M", "--options",
                 "overflow=block", "--", prog, "3000000"])
        hwm = int(re.search(r"hwm (\d+)", p.stdout).group(1))
        if sanitizer():
            p0 = run([WEFT, "record", "-q", "--no-convert", "-o", data + "0", "--flight-recorder=1M", "--", prog, "10"])
            hwm -= int(re.search(r"hwm (\d+)", p0.stdout).group(1))
        self.assertLessEqual(hwm, int(1024 * 1.1) + 8 * 1024 + 4096)  # + the program, libc and the preload's own
        snap, out = self.snapshot(data, 1)
        top, outer, after, orphans = self.tp(
            out, "select name from slice where depth = 0 and name not like 'weft:%'",
            "select count(*), sum(p.name = 'run') from slice s join slice p on s.parent_id = p.id where s.name = 'outer'",
            "select count(*), sum(p.name = 'outer') from slice s join slice p on s.parent_id = p.id where s.name = 'after'",
            "select count(*) from slice where name in ('middle', 'inner') and parent_id is null")
        self.assertEqual(top, [("main",)])
        self.assertGreater(outer[0][0], 1000)
        self.assertEqual(outer[0][0], outer[0][1])
        self.assertEqual(after[0][0], after[0][1])
        self.assertEqual(orphans[0][0], 0)

    def test_memory_stays_bounded(self):
        # 100 M events through a 4M ring: peak RSS within 4M x 1.1 + 8 MiB
        data, p = self.fly(["memory", 100_000_000], "flight=4M,noexit")
        hwm = int(re.search(r"hwm (\d+)", p.stdout).group(1))
        bound = int(4 * 1024 * 1.1) + 8 * 1024
        if sanitizer():  # ASan's shadow and quarantine: the growth over a short run instead
            _, p0 = self.fly(["memory", 1000], "flight=4M,noexit", name="m0.data")
            hwm -= int(re.search(r"hwm (\d+)", p0.stdout).group(1))
        if "thread" in sanitizer():
            # TSan shadows every byte the program touches several times over (how much of it is
            # resident depends on the kernel: 44 MB of growth here for the 10.6 MB a plain build
            # peaks at, at be307f5 as now): a leak still shows, the bound itself cannot
            bound *= 5
        self.assertLessEqual(hwm, bound)
        self.assertEqual(os.listdir(data), [])


if __name__ == "__main__":
    main()
