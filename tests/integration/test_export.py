"""weft export: the SQLite file of docs/sqlite.md, read back with Python's sqlite3 module. A
program with known allocations (tests/memory/memtest.c, recorded with --memory) and a
weft.h program (tests/programs/features.c) give exact rows: every table and view queried."""
import json
import os
import re
import sqlite3
import struct
import unittest
import zlib
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

PLUGIN = os.path.join(BUILD, "libmemplugin.so")


def read_png(path):
    """(width, height, px) of an 8-bit RGB or RGBA PNG (what cairo writes), px(x, y) -> (r, g, b)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])


class Export(TraceTest):
    def export(self, data, name="t.db"):
        db = os.path.join(self.tmp, name)
        p = run([WEFT, "export", data, "-o", db])
        self.assertRegex(p.stderr, r"^weft: export: wrote .*: \d+ rows from \d+ events, 0 dropped\n$")
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        return con

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs the allocation interposer")
    def test_allocations_joined_to_slices(self):
        data = os.path.join(self.tmp, "m.data")
        run([WEFT, "record", "-q", "-o", data, "--memory", "--", os.path.join(BUILD, "memtest"), PLUGIN], cwd=self.tmp)
        con = self.export(data)
        q = lambda sql, *a: con.execute(sql, a).fetchall()
        (nproc,), = q("select count(*) from processes")
        self.assertEqual(nproc, 2)  # and the fork child
        # per slice name: blocks, bytes, never freed
        rows = {r[0]: r[1:] for r in q(
            "select s.name, count(*), sum(a.size), sum(a.free_ts is null) from allocations a "
            "join slices s on s.id = a.slice_id group by s.name")}
        page = os.sysconf("SC_PAGE_SIZE")
        self.assertEqual(rows["temp_allocs"], (10, 640, 0))
        self.assertEqual(rows["leak_known"], (1, 4096, 1))
        self.assertEqual(rows["every_function"], (7, 100 + 128 + 256 + 512 + 100 + page + 100, 0))
        self.assertEqual(rows["worker"], (100, 3200, 0))
        self.assertEqual(rows["produce"], (5, 1000, 0))
        self.assertEqual(rows["child_work"], (3, 150, 0))
        self.assertEqual(rows["map_anon"], (1, 1 << 20, 0))
        # frees on another thread, in another slice
        cross = q("select count(*), sum(a.utid != a.free_utid), min(f.name), max(f.name) from allocations a "
                  "join slices s on s.id = a.slice_id join slices f on f.id = a.free_slice_id "
                  "where s.name = 'produce'")
        self.assertEqual(cross, [(5, 5, "consume", "consume")])
        # a realloc chain: three block lives, the first two ended by realloc in the same slice
        chain = q("select a.size, a.kind, f.name from allocations a join slices s on s.id = a.slice_id "
                  "join slices f on f.id = a.free_slice_id where s.name = 'realloc_chain' order by a.alloc_ts")
        self.assertEqual(chain, [(10, "malloc", "realloc_chain"), (100, "realloc", "realloc_chain"),
                                 (1000, "realloc", "realloc_chain")])
        kinds = {r[0] for r in q("select a.kind from allocations a join slices s on s.id = a.slice_id "
                                 "where s.name = 'every_function'")}
        self.assertEqual(kinds, {"calloc", "memalign", "posix_memalign", "aligned_alloc", "valloc", "pvalloc",
                                 "reallocarray"})
        self.assertEqual(q("select heap from allocations a join slices s on s.id = a.slice_id "
                           "where s.name = 'map_anon'"), [("mmap",)])
        # slices: nesting and threads
        self.assertEqual(q("select p.name, s.depth from slices s join slices p on p.id = s.parent_id "
                           "where s.name = 'leak_known'"), [("main", 1)])
        self.assertEqual(q("select count(distinct utid), min(depth), max(depth) from slices where name = 'worker'"),
                         [(4, 0, 0)])
        # Heimdallr's views
        (n_alloc,), = q("select count(*) from allocations")
        self.assertEqual(q("select count(*), sum(run_id) from allocs"), [(n_alloc, n_alloc)])
        self.assertEqual(q("select count(*) from allocs a join allocations b on a.id = b.id and a.base = b.addr "
                           "and a.from_ns = b.alloc_ts and a.size = b.size"), [(n_alloc,)])
        self.assertEqual(q("select count(*) from access"), [(0,)])
        self.assertEqual(q("select count(*) from accesses"), [(0,)])
        run_row = q("select id, prog, mode, run, utime_ns >= 0, wtime_ns > 0, max_rss > 0 from runs")
        self.assertEqual(run_row, [(1, "memtest", "traced", 0, 1, 1, 1)])
        self.assertEqual(q("select value from meta where key = 'format'"), [("weft sqlite 1",)])
        # the indexes exist
        idx = {r[0] for r in q("select name from sqlite_master where type = 'index'")}
        self.assertTrue({"slices_by_thread", "allocations_by_slice", "accesses_by_allocation"} <= idx, idx)

    def test_slices_and_counters_of_a_weft_h_program(self):
        data, _ = self.record("features")
        con = self.export(data)
        q = lambda sql, *a: con.execute(sql, a).fetchall()
        # every slice of the trace, as trace_processor sees it
        pf, _ = self.convert(data, "f.pftrace")
        tp_slices, tp_counters = self.tp(pf, "select count(*) n from slice where dur >= 0",
                                         "select count(*) n from counter")
        (n,), = q("select count(*) from slices")
        self.assertEqual(n, tp_slices[0]["n"])
        (c,), = q("select count(*) from counters")
        self.assertEqual(c, tp_counters[0]["n"])
        self.assertEqual(q("select count(*) from slices s left join slices p on p.id = s.parent_id "
                           "where s.parent_id is not null and (p.id is null or p.depth != s.depth - 1)"), [(0,)])
        self.assertEqual(q("select count(*) from allocations"), [(0,)])
        # the async slice, on its own track, and a named track's lanes
        self.assertEqual(q("select count(*) from slices where name = 'job' and track like 'async 0x%'"), [(1,)])
        self.assertEqual(q("select count(*), count(distinct utid) from slices where track = 'lane'"), [(2, 2)])
        self.assertEqual(q("select unterminated from slices where name = 'left open'"), [(1,)])

    def test_big_trace_in_bounded_memory(self):
        """4 M heap events (2 M blocks, each freed by its own thread): every block one row, and
        the export's peak memory far below the ~450 MB an in-memory join of the records took."""
        if sanitizer():
            self.skipTest("the memory bound is measured without a sanitizer's shadow memory")
        data = os.path.join(self.tmp, "big.data")
        p = run([os.path.join(BUILD, "stress"), "2", "2000000", "0", "heap"],
                env={"WEFT_OPTIONS": f"output={data}:overflow=block"})
        self.assertEqual(p.stdout, "emitted 4000000 written 4000000 dropped 0\n")
        db = os.path.join(self.tmp, "big.db")
        pid = os.fork()
        if pid == 0:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execv(WEFT, [WEFT, "export", data, "-o", db])
        _, status, ru = os.wait4(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertLess(ru.ru_maxrss, 200 * 1024, "peak RSS %d KiB" % ru.ru_maxrss)
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        self.assertEqual(con.execute("select count(*), count(free_ts), count(distinct addr), min(heap), max(heap), "
                                     "sum(utid = free_utid) from allocations").fetchall(),
                         [(2000000, 2000000, 2000000, "stress", "stress", 2000000)])

    def test_errors(self):
        p = run([WEFT, "export", self.tmp], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing -o FILE.db", p.stderr)
        p = run([WEFT, "export", os.path.join(self.tmp, "none"), "-o", os.path.join(self.tmp, "x.db")], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.db")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.db.tmp")))
        # an existing file is replaced only by a complete database
        data, _ = self.record("features")
        db = os.path.join(self.tmp, "old.db")
        with open(db, "w") as f:
            f.write("not a database")
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.assertGreater(con.execute("select count(*) from slices").fetchone()[0], 0)
        con.close()


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs the allocation interposer")
class HeapPlot(TraceTest):
    """`weft plot heap`: tests/memory/phases.c goes through known phases of live C-heap bytes, each
    held 40 ms: alloc_a 6 MiB; + alloc_b 3 MiB (the peak, with the constructor's 512 KiB outside
    any slice: 9.5 MiB); alloc_b alone; alloc_b + inner_c 2 MiB + outer_c 1 MiB; nothing. The
    picture's bands are read back from the PNG, column by column, by their exact colours."""
    MIB = 1 << 20

    def setUp(self):
        super().setUp()
        self.data = os.path.join(self.tmp, "h.data")
        run([WEFT, "record", "-q", "-o", self.data, "--memory", "--", os.path.join(BUILD, "memphases")],
            cwd=self.tmp)

    def plot(self, *args, name="heap.png"):
        png = os.path.join(self.tmp, name)
        out = run([WEFT, "plot", "heap", self.data, "-o", png, "--describe", *args]).stdout
        lines = [json.loads(line) for line in out.splitlines()]
        frame = lines[0]["frame"]
        bands = {b["name"]: b for b in lines[1:]}
        w, h, px = read_png(png)
        colour = {tuple(b["rgb"]): name for name, b in bands.items()}
        self.assertEqual(len(colour), len(bands))  # every band its own colour
        # per pixel column of the plot: the bands' heights from the bottom up, in stack order
        cols = []
        for x in range(frame["left"], frame["right"]):
            runs, y = [], frame["bottom"] - 1
            while y >= frame["top"] and px(x, y) in colour:
                name = colour[px(x, y)]
                if runs and runs[-1][0] == name:
                    runs[-1][1] += 1
                else:
                    runs.append([name, 1])
                y -= 1
            cols.append([(n, k) for n, k in runs])
        return (w, h, px), frame, bands, cols

    def test_stacked_by_allocating_slice(self):
        (w, h, px), frame, bands, cols = self.plot()
        self.assertEqual((w, h), (1600, 900))
        self.assertEqual(frame["heap"], "malloc")
        self.assertEqual({n: b["peak"] for n, b in bands.items()},
                         {"alloc_a": 6 * self.MIB, "alloc_b": 3 * self.MIB, "inner_c": 2 * self.MIB,
                          "outer_c": self.MIB, "[outside any slice]": self.MIB // 2})
        # the highest peak at the bottom
        self.assertEqual(sorted(bands, key=lambda n: bands[n]["band"]),
                         ["alloc_a", "alloc_b", "inner_c", "outer_c", "[outside any slice]"])
        self.assertEqual(frame["peak"], 9 * self.MIB + self.MIB // 2)
        bpp = frame["bytes_per_px"]
        px_of = lambda nbytes: nbytes / bpp
        # the stack's highest top edge is the heap's peak, 9.5 MiB, in pixels
        tallest = max(sum(k for _, k in c) for c in cols)
        self.assertAlmostEqual(tallest, px_of(frame["peak"]), delta=1.5)
        # the columns of each phase (wide: 40 ms of ~160 ms each; a column in the middle of a
        # burst of frees may show part of it, so a phase is looked up, not its every column)
        phases = [tuple(n for n, _ in c) for c in cols]
        a_only = [c for c, ph in zip(cols, phases) if ph == ("alloc_a", "[outside any slice]")]
        a_b = [c for c, ph in zip(cols, phases) if ph == ("alloc_a", "alloc_b", "[outside any slice]")]
        b_only = [c for c, ph in zip(cols, phases) if ph == ("alloc_b", "[outside any slice]")]
        b_c = [c for c, ph in zip(cols, phases) if ph == ("alloc_b", "inner_c", "outer_c", "[outside any slice]")]
        for phase in (a_only, a_b, b_only, b_c):
            self.assertGreater(len(phase), 10, phases)
        # in order of time
        first = lambda ph: phases.index(tuple(n for n, _ in ph[0]))
        self.assertLess(first(a_only), first(a_b))
        self.assertLess(first(a_b), first(b_only))
        self.assertLess(first(b_only), first(b_c))
        # where only alloc_a's blocks (and the constructor's) are live, its band is 6 of 6.5 MiB:
        # in the phase's middle column (its first and last may fall in a burst of allocations
        # or frees slowed down by a busy machine: 80 and 318 px of 477.6 were seen)
        for c in (a_only[len(a_only) // 2],):
            heights = dict(c)
            self.assertAlmostEqual(heights["alloc_a"], px_of(6 * self.MIB), delta=1)
            self.assertAlmostEqual(heights["[outside any slice]"], px_of(self.MIB // 2), delta=1.5)
        for c in (a_b[len(a_b) // 2], b_c[len(b_c) // 2]):
            heights = dict(c)
            for name, size in (("alloc_a", 6), ("alloc_b", 3), ("inner_c", 2), ("outer_c", 1)):
                if name in heights:
                    self.assertAlmostEqual(heights[name], px_of(size * self.MIB), delta=1.5, msg=name)
        # the trace ends at the last free: the final columns are those of the last phase or lower
        self.assertLessEqual(sum(k for _, k in cols[-1]), px_of(6.5 * self.MIB) + 1.5)
        # the legend: a swatch of every band's colour, beside the plot
        for name, b in bands.items():
            x, y, sw, sh = b["swatch"]
            self.assertGreaterEqual(x, frame["right"])
            self.assertEqual(px(x + sw // 2, y + sh // 2), tuple(b["rgb"]), name)
        self.assertEqual(px(5, h - 5), (255, 255, 255))  # the margin is background

    def test_top_folds_the_rest_into_other(self):
        (_, _, px), frame, bands, cols = self.plot("--top", "1", name="top1.png")
        self.assertEqual(set(bands), {"alloc_a", "other"})
        self.assertEqual(bands["other"]["folded"], 4)
        self.assertEqual(bands["other"]["rgb"], [150, 150, 150])
        # other's peak: alloc_b + inner_c + outer_c + [outside any slice], at once
        self.assertEqual(bands["other"]["peak"], 6 * self.MIB + self.MIB // 2)
        tallest = max(sum(k for _, k in c) for c in cols)
        self.assertAlmostEqual(tallest, frame["peak"] / frame["bytes_per_px"], delta=1.5)
        others = [dict(c)["other"] for c in cols if [n for n, _ in c] == ["other"]]
        self.assertAlmostEqual(max(others), (6 * self.MIB + self.MIB // 2) / frame["bytes_per_px"], delta=1)

    def test_sampled_as_the_heap_figures(self):
        """A sampled trace: the bands hold the analysis's scaled-up bytes, so the top edge's peak
        is the heap's peak that `weft report --memory` shows (the sum of the stacks' shares)."""
        data = os.path.join(self.tmp, "s.data")
        run([WEFT, "record", "-q", "-o", data, "--memory=sample:64K", "--", os.path.join(BUILD, "memphases")],
            cwd=self.tmp)
        png = os.path.join(self.tmp, "s.png")
        out = run([WEFT, "plot", "heap", data, "-o", png, "--describe"]).stdout.splitlines()
        frame, bands = json.loads(out[0])["frame"], {b["name"]: b for b in map(json.loads, out[1:])}
        report = run([WEFT, "report", "--memory", data]).stdout
        self.assertIn("sampled: one sample per 65536 bytes", report)
        rows = {}
        for line in report.splitlines():
            f = line.split(None, 8)
            if len(f) == 9 and all(x.isdigit() for x in f[:8]):
                rows[f[8]] = [int(x) for x in f[:8]]
        self.assertEqual(frame["peak"], sum(r[3] for r in rows.values()))  # the Peak column
        for name, r in rows.items():
            band = bands[name]  # one name for the slice-less band everywhere
            self.assertGreaterEqual(band["peak"], r[3], name)

    def test_window_lines_and_errors(self):
        # a window from the first memory record: 1 ms to 2 ms lies in the first phase
        _, frame, bands, cols = self.plot("--time", "1ms:2ms", name="win.png")
        self.assertEqual(frame["t1"] - frame["t0"], 1000000)
        self.assertEqual(set(bands), {"alloc_a", "[outside any slice]"})
        self.assertEqual(frame["peak"], 6 * self.MIB + self.MIB // 2)
        # the old picture, a line per heap
        lp = os.path.join(self.tmp, "lines.png")
        run([WEFT, "plot", "heap", "--lines", self.data, "-o", lp])
        self.assertEqual(read_png(lp)[:2], (1600, 900))
        png = os.path.join(self.tmp, "x.png")
        for args, rc, msg in ((["--heap", "bogus"], 1, "process \\d+ has no heap 'bogus' \\(its heaps: malloc\\)"),
                              (["--top", "0"], 2, "--top takes a number from 1 to 20"),
                              (["--lines", "--top", "2"], 2, "no --heap or --top with it"),
                              (["--time", "100s:"], 1, "nothing to draw")):
            with self.subTest(args=args):
                p = run([WEFT, "plot", "heap", self.data, "-o", png, *args], check=False)
                self.assertEqual(p.returncode, rc, p.stderr)
                self.assertRegex(p.stderr, "^weft: plot: .*" + msg)
        p = run([WEFT, "plot", "memory", self.data, "-o", png, "--top", "2"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("are for 'weft plot heap'", p.stderr)


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs weft record's runtime")
class Accesses(TraceTest):
    """--mem-access (page faults): tests/memory/touch.c writes every page of a 64 MiB block in
    writer_pass and reads every 4th page of a 16 MiB block in reader_pass, on two threads."""

    def setUp(self):
        super().setUp()
        # page-fault sampling needs perf_event_open (root, or kernel.perf_event_paranoid <= 2)
        p = run([WEFT, "record", "-q", "--no-convert", "-o", os.path.join(self.tmp, "probe.data"),
                 "--mem-access=pagefault", "--", "true"], cwd=self.tmp)
        if "unavailable" in p.stderr and self._testMethodName != "test_unavailable_sources_are_said":
            self.skipTest("page-fault sampling is not permitted here: " + p.stderr.strip())

    def test_first_touches_joined_to_allocations_and_slices(self):
        data = os.path.join(self.tmp, "a.data")
        p = run([WEFT, "record", "-o", data, "--memory", "--mem-access", "--", os.path.join(BUILD, "memtouch")],
                cwd=self.tmp)
        self.assertEqual(p.stdout, "touched\n")
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"accesses: page faults sampled: \d+ samples, 0 lost")
        # the span is the program's (access records carry ns, not ticks): a fraction of a second
        self.assertLess(float(re.search(r"span: +([0-9.]+) s", info).group(1)), 30)
        db = os.path.join(self.tmp, "a.db")
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        q = lambda sql: con.execute(sql).fetchall()
        page = os.sysconf("SC_PAGE_SIZE")
        for slice_name, size, pages in (("writer_pass", 64 << 20, (64 << 20) // page),
                                        ("reader_pass", 16 << 20, (16 << 20) // page // 4)):
            with self.subTest(slice=slice_name):
                # samples on the block, by its own thread, in its own slice: >= 99% of the pages
                (joined, in_slice, same_thread, distinct), = q(
                    "select count(*), sum(s.name = '%s'), sum(x.utid = a.utid), count(distinct x.addr / %d) "
                    "from accesses x join allocations a on a.id = x.allocation_id "
                    "join slices b on b.id = a.slice_id left join slices s on s.id = x.slice_id "
                    "where b.name = '%s' and a.size = %d" % (slice_name, page, slice_name, size))
                self.assertGreaterEqual(distinct, pages * 99 // 100)
                self.assertLessEqual(distinct, pages)
                self.assertEqual(in_slice, joined)
                self.assertEqual(same_thread, joined)
                self.assertEqual(q("select count(distinct region) from accesses x join allocations a "
                                   "on a.id = x.allocation_id join slices b on b.id = a.slice_id "
                                   "where b.name = '%s'" % slice_name), [(1,)])
        # the views carry them too
        (n,), = q("select count(*) from accesses")
        self.assertEqual(q("select count(*) from access"), [(n,)])
        # and the .pftrace a cumulative count of them beside the slices
        samples = int(re.search(r"page faults sampled: (\d+) samples", info).group(1))
        self.assertEqual(n, samples)
        counter, = self.tp(os.path.join(data, "trace.pftrace"),
                           "select max(c.value) mx from counter c join counter_track t on c.track_id = t.id "
                           "where t.name = 'memory accesses sampled (page faults)'")
        self.assertEqual(counter[0]["mx"], samples)

    def test_sampling_period(self):
        """--mem-access-period N: one sample per N page faults."""
        counts = {}
        for period in (1, 16):
            data = os.path.join(self.tmp, "p%d.data" % period)
            run([WEFT, "record", "-q", "--no-convert", "-o", data, "--mem-access", "--mem-access-period",
                 str(period), "--", os.path.join(BUILD, "memtouch")], cwd=self.tmp)
            info = run([WEFT, "info", data]).stdout
            self.assertIn("mem_access_period=%d" % period, info)
            counts[period] = int(re.search(r"page faults sampled: (\d+) samples, 0 lost", info).group(1))
        self.assertGreater(counts[1], 16384 + 1024)
        self.assertAlmostEqual(counts[16], counts[1] / 16, delta=counts[1] / 16 * 0.1 + 2)
        p = run([WEFT, "record", "-q", "--mem-access-period", "x", "--", "true"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--mem-access-period", p.stderr)

    def test_plots(self):
        data = os.path.join(self.tmp, "p.data")
        run([WEFT, "record", "-q", "-o", data, "--memory", "--mem-access", "--", os.path.join(BUILD, "memtouch")],
            cwd=self.tmp)
        png = os.path.join(self.tmp, "mem.png")
        out = run([WEFT, "plot", "memory", data, "-o", png, "--describe"]).stdout
        rects = {r["slice"]: r for r in map(json.loads, out.splitlines()) if "addr" in r and r["size"] >= 16 << 20}
        w, h, px = read_png(png)
        self.assertEqual((w, h), (1600, 900))
        big = rects["writer_pass"]
        self.assertEqual(big["size"], 64 << 20)
        # the 64 MiB block fills most of the height; its inside is its fill colour, not the
        # background, and the page faults of writer_pass run through it as red dots
        self.assertGreater(big["y1"] - big["y0"], 400)
        cx, cy = (big["x0"] + big["x1"]) // 2, (big["y0"] + big["y1"]) // 2
        # (a colour of its slice's: saturated, unlike the white and grey background)
        r, g, b = px(int(cx), int(big["y0"]) + 30)
        self.assertGreater(max(r, g, b) - min(r, g, b), 30, (r, g, b))
        red = sum(1 for x in range(int(big["x0"]), int(big["x1"]), 2) for y in range(int(big["y0"]), int(big["y1"]), 2)
                  if (lambda c: c[0] > 150 and c[1] < 90 and c[2] < 90)(px(x, y)))
        self.assertGreater(red, 200)
        # the reader's block, later and smaller, elsewhere on both axes
        small = rects["reader_pass"]
        self.assertGreater(small["x0"], big["x0"])
        # (above or below it: where mmap puts the second block is the kernel's choice)
        self.assertTrue(small["y1"] <= big["y0"] + 1 or small["y0"] >= big["y1"] - 1, (small, big))
        self.assertEqual(px(5, h - 5), (255, 255, 255))  # the margin is background
        hp = os.path.join(self.tmp, "heap.png")
        run([WEFT, "plot", "heap", data, "-o", hp])
        self.assertEqual(read_png(hp)[:2], (1600, 900))
        p = run([WEFT, "plot", "memory", data, "-o", png, "--addr", "10:20"], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("nothing to draw", p.stderr)
        p = run([WEFT, "plot", "bogus", data], check=False)
        self.assertEqual(p.returncode, 2)

    def test_unavailable_sources_are_said(self):
        data = os.path.join(self.tmp, "u.data")
        p = run([WEFT, "record", "-q", "-o", data, "--mem-access=ibs", "--", os.path.join(BUILD, "memtouch")],
                cwd=self.tmp)
        self.assertEqual(p.stdout, "touched\n")  # the program runs on
        self.assertRegex(p.stderr, r"weft: mem-access=ibs: unavailable: .+")
        p = run([WEFT, "record", "-q", "-o", data, "--mem-access=bogus", "--", "true"], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad value 'bogus' for --mem-access", p.stderr)


if __name__ == "__main__":
    main()
