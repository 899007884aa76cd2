#!/usr/bin/env python3
"""`weft convert|report|export --time FROM:TO` (docs/time-window.md): the window read through the
chunks' time index equals the same window cut from a full convert (trace_processor SQL): every
slice that overlaps it, with its real begin (the slices open at FROM, like the outermost `run`),
its parent and depth, ends clipped at TO; counters' last value before FROM; the same answer from
a trace without the index (older traces, or one cut short); bad windows are one-line errors."""
import os
import sqlite3
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import TraceTest, run, WEFT, main  # noqa: E402

CHUNK_INDEX = 40

SLICES = ("select s.name as n, s.ts as ts, s.ts + s.dur as e, s.depth as d, ifnull(p.name, '') as p, "
          "t.name as th "
          "from slice s left join slice p on s.parent_id = p.id "
          "join thread_track tt on s.track_id = tt.id join thread t using(utid) "
          "where s.name != 'weft: dropped'")
FIRST = "select min(ts) as ts from slice"
COUNTER = ("select c.ts as ts, c.value as v from counter c join counter_track ct on c.track_id = ct.id "
           "where ct.name = 'progress' order by c.ts")


def strip_index(trace, keep_every=0):
    """Removes the CHUNK_INDEX records from the trace's metadata (a trace from before format 1.8),
    or all but every keep_every-th (an index cut short)."""
    for name in os.listdir(trace):
        if not name.endswith(".wmeta"):
            continue
        path = os.path.join(trace, name)
        with open(path, "rb") as f:
            d = f.read()
        out, off, seen = bytearray(d[:32]), 32, 0
        while off + 8 <= len(d):
            typ, _, ln = struct.unpack_from("<HHI", d, off)
            rec = d[off:off + 8 + ln]
            off += 8 + ln
            if typ == CHUNK_INDEX:
                seen += 1
                if not keep_every or seen % keep_every:
                    continue
            out += rec
        with open(path, "wb") as f:
            f.write(out)


def norm(rows):
    """trace_processor's rows with its numbers (some given as strings) as ints."""
    return [(r["n"], int(r["ts"]), int(r["e"]), int(r["d"]), r["p"], r["th"]) for r in rows]


class TimeWindow(TraceTest):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.dir = tempfile.mkdtemp(prefix="weft-timewin-")
        cls.trace = os.path.join(cls.dir, "trace.data")
        # 300 steps of ~1 ms, 40 instants each, in 4K chunks: ~100 chunks, each a few steps
        run([os.path.join(os.path.dirname(WEFT), "timephases"), "300", "40", "1000"],
            env={"WEFT_OPTIONS": f"output={cls.trace}:chunk_size=4K"})
        cls.full = os.path.join(cls.dir, "full.pftrace")
        run([WEFT, "convert", cls.trace, "-o", cls.full, "-q"])
        t = TraceTest("run")
        first = t.tp(cls.full, FIRST)[0][0]["ts"]
        rows, counter = t.tp(cls.full, SLICES, COUNTER)
        cls.first, cls.rows, cls.counter = int(first), norm(rows), [[int(r["ts"]), r["v"]] for r in counter]

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.dir, ignore_errors=True)

    def expected(self, a_ns, b_ns):
        """The window [first + a, first + b] cut from the full convert: the slices that overlap
        it, ends after it clipped there."""
        lo, hi = self.first + a_ns, self.first + b_ns
        return sorted((n, ts, min(end, hi), depth, parent, th) for n, ts, end, depth, parent, th in self.rows
                      if ts <= hi and end >= lo)

    def same(self, got, want, msg=None):
        """got == want (lists of slices), saying what differs without diffing thousands of rows."""
        g, w = set(got), set(want)
        self.assertEqual((sorted(w - g)[:10], sorted(g - w)[:10]), ([], []), f"(missing, extra) {msg or ''}")
        self.assertEqual(len(got), len(want), msg)

    def window_rows(self, out, hi_abs):
        rows = norm(self.tp(out, SLICES)[0])
        # a slice still open at TO ends there (strictly after the thread's last event: +1 ns at most)
        return sorted((n, ts, min(end, hi_abs), depth, parent, th) for n, ts, end, depth, parent, th in rows)

    def convert_window(self, spec, trace=None, name="win.pftrace"):
        out = os.path.join(self.tmp, name)
        p = run([WEFT, "convert", trace or self.trace, "--time", spec, "-o", out])
        return out, p

    def test_window_equals_cut_of_full_convert(self):
        out, p = self.convert_window("0.1:0.2")
        self.assertIn("window 0.1 s to 0.2 s", p.stderr)
        got = self.window_rows(out, self.first + 200_000_000)
        want = self.expected(100_000_000, 200_000_000)
        self.assertGreater(len(want), 1000)
        self.same(got, want)
        # the outermost slice is there with its real begin, every step under it
        run_full = [r for r in self.rows if r[0] == "run"]
        self.assertEqual(len(run_full), 1)
        self.assertIn(run_full[0][1], [r[1] for r in got if r[0] == "run"])
        self.assertTrue(all(r[4] == "run" for r in got if r[0] == "step"))
        # the worker's `wait` ended before the window: not there; `job`s in it are
        self.assertNotIn("wait", [r[0] for r in got])
        self.tp_no_errors(out)

    def test_slice_open_across_window_without_events_in_it(self):
        # a window inside one step's sleep on the main thread, before the first step on the
        # worker: `run` and `step` open across it with nothing inside
        steps = sorted(r for r in self.rows if r[0] == "step")
        s = steps[150]
        mid = (s[1] + s[2]) // 2 - self.first
        a, b = mid - 100_000, mid + 100_000  # 0.2 ms inside the step's ~1 ms sleep
        out, _ = self.convert_window(f"{a}ns:{b}ns")
        got = self.window_rows(out, self.first + b)
        want = self.expected(a, b)
        self.same(got, want)
        self.assertIn("run", [r[0] for r in got])
        self.assertIn(("step", s[1]), [(r[0], r[1]) for r in got])

    def test_units_and_open_ends(self):
        out1, _ = self.convert_window("100ms:200ms", name="a.pftrace")
        out2, _ = self.convert_window("0.1:0.2", name="b.pftrace")
        self.same(self.window_rows(out1, self.first + 200_000_000),
                  self.window_rows(out2, self.first + 200_000_000))
        out, _ = self.convert_window(":50ms", name="c.pftrace")
        self.same(self.window_rows(out, self.first + 50_000_000), self.expected(0, 50_000_000))
        out, _ = self.convert_window("200ms:", name="d.pftrace")
        last = max(r[2] for r in self.rows)
        got = self.window_rows(out, last)
        want = self.expected(200_000_000, last - self.first)
        self.same(got, want)
        self.assertIn("linger", [r[0] for r in got])
        # the whole trace as a window is the full convert, byte for byte
        out, _ = self.convert_window("0:", name="e.pftrace")
        with open(out, "rb") as a, open(self.full, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_counter_last_value_before_window(self):
        out, _ = self.convert_window("0.1:0.2")
        rows, = self.tp(out, COUNTER)
        lo = self.first + 100_000_000
        before = [v for ts, v in self.counter if ts < lo]
        self.assertTrue(before)
        rows = [[int(r["ts"]), r["v"]] for r in rows]
        self.assertEqual(rows[0][1], before[-1], "the window starts with the counter's last value")
        inside = [[ts, v] for ts, v in self.counter if lo <= ts <= self.first + 200_000_000]
        self.assertEqual(rows[1:], inside)

    def test_trace_without_index_gives_the_same_window(self):
        import shutil
        out, _ = self.convert_window("0.1:0.2", name="indexed.pftrace")
        want = self.window_rows(out, self.first + 200_000_000)
        for keep, label in ((0, "none"), (3, "partial")):
            old = os.path.join(self.tmp, "old-" + label)
            shutil.copytree(self.trace, old)
            strip_index(old, keep)
            got_out, p = self.convert_window("0.1:0.2", trace=old, name=f"old-{label}.pftrace")
            self.same(self.window_rows(got_out, self.first + 200_000_000), want, label)
            lines = [ln for ln in p.stderr.splitlines() if "no time index" in ln]
            self.assertEqual(len(lines), 1, p.stderr)
        # cut short: the events file loses its last third, the index its records at random
        cut = os.path.join(self.tmp, "cut")
        shutil.copytree(self.trace, cut)
        for name in os.listdir(cut):
            if name.endswith(".wevents"):
                path = os.path.join(cut, name)
                os.truncate(path, os.path.getsize(path) * 2 // 3)
        strip_index(cut, 2)
        out, p = self.convert_window("0.05:0.1", trace=cut, name="cut.pftrace")
        self.assertIn("no time index", p.stderr)
        self.tp_no_errors(out)
        # the indexed trace says nothing of the kind
        _, p = self.convert_window("0.1:0.2", name="again.pftrace")
        self.assertNotIn("no time index", p.stderr)

    def test_snapshot_is_read_whole_and_said_so(self):
        # a flight recorder snapshot has no CHUNK_INDEX records (its chunks are the ring's): it is
        # read whole, and the one line says that, not that the trace is old or cut short
        data = os.path.join(self.tmp, "f.data")
        run([os.path.join(os.path.dirname(WEFT), "flightsteps"), "steps", "3000", "10", "1000", "1"],
            env={"WEFT_OPTIONS": f"output={data}:overflow=block:flight=1M,noexit"})
        snap = os.path.join(data, "snapshot-1")
        for cmd in (["convert", snap, "-o", os.path.join(self.tmp, "s.pftrace")], ["report", snap]):
            p = run([WEFT, *cmd, "--time", "0:"])
            lines = [ln for ln in p.stderr.splitlines() if "time index" in ln]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertRegex(lines[0], rf"^weft: {cmd[0]}: warning: (\d+) of \1 chunks are a flight recorder "
                                       r"snapshot's, which has no time index: all of them were read to find "
                                       r"the window$")

    def test_origin_is_the_traces_start_as_in_perfetto(self):
        # --time counts from the trace's earliest event: in a snapshot the re-emitted begin of
        # `run` (the program's start), not the snapshot's own window, and the same 0 as the
        # Perfetto UI's timeline (trace_bounds); weft info gives the window in those terms
        data = os.path.join(self.tmp, "o.data")
        run([os.path.join(os.path.dirname(WEFT), "flightsteps"), "steps", "40000", "20", "1000", "2"],
            env={"WEFT_OPTIONS": f"output={data}:overflow=block:flight=1M,noexit"})
        snap = os.path.join(data, "snapshot-2")
        info = run([WEFT, "info", snap]).stdout
        # (snapshot 2 holds what came after snapshot 1: `run` is re-emitted, its begin earlier)
        self.assertIn("1 open slices re-emitted", info)
        import re
        start = int(re.search(r"window:\s+from (\d+)", info).group(1))
        a, b = re.search(r"--time ([0-9.]+):([0-9.]+) \(seconds from the trace's start", info).groups()
        full = os.path.join(self.tmp, "o.pftrace")
        run([WEFT, "convert", snap, "-q", "-o", full])
        bounds, run_ts, steps = self.tp(full, "select start_ts from trace_bounds",
                                        "select ts from slice where name = 'run'",
                                        "select count(*) as n from slice where name = 'step'")
        origin = int(bounds[0]["start_ts"])
        self.assertEqual(origin, int(run_ts[0]["ts"]))
        self.assertLess(origin, start)
        self.assertAlmostEqual(origin + float(a) * 1e9, start, delta=1000)  # %.6f s: 1 us
        out, p = self.convert_window(f"{a}:{b}", trace=snap, name="o-win.pftrace")
        self.assertIn(f"window {float(a):.6g} s to ", p.stderr)
        n, = self.tp(out, "select count(*) as n from slice where name = 'step'")
        self.assertEqual(int(n[0]["n"]), int(steps[0]["n"]))  # the whole snapshot's steps

    def test_report_totals_are_the_windows(self):
        p = run([WEFT, "report", self.trace, "--time", "0.1:0.2", "-f", "csv"])
        self.assertIn("totals for the window 0.1 s to 0.2 s", p.stderr)
        calls = {ln.split(",")[0].strip('"'): ln.split(",") for ln in p.stdout.splitlines()[1:]}
        want = self.expected(100_000_000, 200_000_000)
        nsteps = len([r for r in want if r[0] == "step"])
        header = p.stdout.splitlines()[0].split(",")
        self.assertEqual(int(calls["step"][header.index("calls")]), nsteps)
        self.assertLess(nsteps, 150)
        p = run([WEFT, "report", self.trace, "--time", "0.1:0.2"])
        self.assertTrue(p.stdout.startswith("Window: 0.1 s to 0.2 s of "), p.stdout[:200])

    def test_export_window(self):
        db = os.path.join(self.tmp, "w.db")
        run([WEFT, "export", self.trace, "--time", "0.1:0.2", "-o", db, "-q"])
        con = sqlite3.connect(db)
        meta = dict(con.execute("select key, value from meta"))
        self.assertEqual(int(meta["window_from_ns"]), self.first + 100_000_000)
        n, = con.execute("select count(*) from slices where name = 'step'").fetchone()
        want = self.expected(100_000_000, 200_000_000)
        self.assertEqual(n, len([r for r in want if r[0] == "step"]))
        run_ts, = con.execute("select ts from slices where name = 'run'").fetchone()
        self.assertEqual(run_ts, [r for r in self.rows if r[0] == "run"][0][1])

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_functions_of_weft_record(self):
        # -finstrument-functions under `weft record`: nested function slices on four threads,
        # symbolized; the window is the middle third of the slices' times
        trace = os.path.join(self.tmp, "ft.data")
        run([WEFT, "record", "-o", trace, "--no-convert", "--",
             os.path.join(os.path.dirname(WEFT), "ft_threads_O0")], env={"WEFT_OPTIONS": "chunk_size=4K"})
        full = os.path.join(self.tmp, "ft.pftrace")
        run([WEFT, "convert", trace, "-q", "-o", full])
        first = int(self.tp(full, FIRST)[0][0]["ts"])
        rows = norm(self.tp(full, SLICES)[0])
        # the window from the middle of a work() (depth 1) a third of the way through them to
        # the middle of one two thirds through: a nested slice is open at FROM however the
        # threads were scheduled (a window from a slice's start had none where it fell between
        # two work()s of a thread and no other thread ran then: a loaded CI run)
        work = sorted((r for r in rows if r[3] == 1), key=lambda r: r[1])
        a = (work[len(work) // 3][1] + work[len(work) // 3][2]) // 2 - first
        b = (work[2 * len(work) // 3][1] + work[2 * len(work) // 3][2]) // 2 - first
        out, _ = self.convert_window(f"{a}ns:{b}ns", trace=trace, name="ftw.pftrace")
        got = self.window_rows(out, first + b)
        want = sorted((n, t, min(e, first + b), d, p, th) for n, t, e, d, p, th in rows
                      if t <= first + b and e >= first + a)
        self.assertGreater(len(want), 100)
        self.assertTrue(any(r[3] > 0 and r[1] < first + a for r in want), "nested slices open at FROM")
        self.same(got, want)

    def open_at(self, trace, picks, name):
        """For each absolute time X in picks(full rows): the slices open at X in a window from X
        on (those that began before X) equal the full convert's stack at X, name, begin, depth
        and parent, level by level. Returns how many levels were compared."""
        full = os.path.join(self.tmp, name + ".pftrace")
        run([WEFT, "convert", trace, "-q", "-o", full])
        first = int(self.tp(full, FIRST)[0][0]["ts"])
        rows = norm(self.tp(full, SLICES)[0])
        levels = 0
        for x in picks(rows):
            want = sorted((r[0], r[1], r[3], r[4]) for r in rows if r[1] < x < r[2])
            out, p = self.convert_window(f"{x - first}ns:{x - first + 200_000}ns", trace=trace,
                                         name=f"{name}-{x}.pftrace")
            got = sorted((r[0], r[1], r[3], r[4]) for r in norm(self.tp(out, SLICES)[0]) if r[1] < x)
            self.assertEqual(got, want, f"the stack at {x - first} ns")
            self.assertNotIn("without a begin", p.stderr)
            levels += len(want)
        return levels

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_reentered_function_open_at_from(self):
        # `execute` open at depth 1 for the whole run and again at depth 8 inside each callback,
        # opened and closed thousands of times (Lua's luaV_execute): the chunk where the current
        # round began also holds the ends of the previous round's deeper levels, which the
        # chunks skipped before it opened. Each must close its own level, not the outer
        # `execute` of the same name (which lost every level above it: 13 in Lua)
        trace = os.path.join(self.tmp, "re.data")
        run([WEFT, "record", "-o", trace, "--no-convert", "--", os.path.join(os.path.dirname(WEFT), "reenter"),
             "100", "200"], env={"WEFT_OPTIONS": "chunk_size=4K:overflow=block"})

        def picks(rows):
            leaves = sorted(r[1] for r in rows if r[0] == "leaf")
            self.assertEqual(len(leaves), 100 * 200)
            return [leaves[r * 200 + 150] + 1 for r in (30, 61, 95)]  # late in a round
        self.assertEqual(self.open_at(trace, picks, "re"), 3 * 10)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_longjmp_levels_open_at_from(self):
        # each round: outer() sets a jmp_buf, middle() and inner() are left by a longjmp (their
        # exits never come), then after(); the index's depths count the skipped exits as open
        # (2 more levels a round), so the chunks before FROM are replayed from the thread's
        # start (format 1.15 flags a chunk with a longjmp): the stack at X is the full one's,
        # with no level a longjmp closed before X still open in the window
        trace = os.path.join(self.tmp, "lj.data")
        run([WEFT, "record", "-o", trace, "--no-convert", "--", os.path.join(os.path.dirname(WEFT), "ft_longjmp_O2"),
             "20000"], env={"WEFT_OPTIONS": "chunk_size=4K:overflow=block"})

        def picks(rows):
            names = {"after": [], "inner": []}
            for r in rows:
                if r[0] in names:
                    names[r[0]].append(r[1])
            self.assertEqual([len(v) for v in names.values()], [20000, 20000])
            a, i = sorted(names["after"]), sorted(names["inner"])
            return [a[5000] + 1, i[10000] + 1, a[15000] + 1]  # in after(), in inner(), in after()
        # (main, run, outer, after / middle, inner: at least run, outer and one more at each X,
        # however the compiler laid main out)
        self.assertGreaterEqual(self.open_at(trace, picks, "lj"), 3 * 3)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_lua_levels_open_at_from(self):
        # the same in Lua 5.4 built with -finstrument-functions (bench/e2e/build.sh): table.sort
        # with a Lua comparator, string.gsub with a Lua function, recursion; no pcall or error
        # (no longjmp)
        lua = os.path.join(os.environ.get("WEFT_E2E_CACHE", "/var/cache/weft-e2e"), "bin", "lua")
        if not os.access(lua, os.X_OK):
            self.skipTest(f"no {lua}: bench/e2e/build.sh builds Lua with -finstrument-functions")
        trace = os.path.join(self.tmp, "lua.data")
        script = os.path.join(os.path.dirname(__file__), "..", "programs", "sortfib.lua")
        run([WEFT, "record", "-o", trace, "--no-convert", "--options", "overflow=block", "--", lua, script, "1"])  # (one round: 1.2 M events, the shape of six)

        def picks(rows):
            ts = sorted(r[1] for r in rows if r[3] > 6)
            self.assertGreater(len(ts), 10000, "function slices: is Lua built with -finstrument-functions?")
            return [ts[len(ts) * k // 5] + 1 for k in (1, 2, 3, 4)]
        self.assertGreater(self.open_at(trace, picks, "lua"), 4 * 15)

    def test_bad_windows(self):
        out = os.path.join(self.tmp, "x.pftrace")
        for cmd in (["convert", self.trace, "-o", out], ["report", self.trace],
                    ["export", self.trace, "-o", os.path.join(self.tmp, "x.db")]):
            for spec, status in (("5:2", 2), ("abc", 2), ("1:2:3", 2), (":", 2), ("-1:2", 2),
                                 ("2s:2s", 2), ("1x:2", 2), ("100:200", 1), ("10s:", 1)):
                p = run([WEFT, *cmd[:1], "--time", spec, *cmd[1:]], check=False)
                self.assertEqual(p.returncode, status, (cmd[0], spec, p.stderr))
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, (cmd[0], spec, p.stderr))
                self.assertTrue(p.stderr.startswith(f"weft: {cmd[0]}: "), p.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    main()
