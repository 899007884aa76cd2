"""The default output of weft record: trace.pftrace written as zlib-compressed packet batches
(TracePacket.compressed_packets), which Perfetto's trace_processor reads to exactly the same
slices as plain packets; small (bytes per event bounded); and a summary line that counts every
file in the directory."""
import glob
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import re
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Output(TraceTest):
    def test_compressed_default(self):
        data = os.path.join(self.tmp, "o.data")
        # 125,000 calls (closefds made 1.1 M: protoc's text of them was most of this file's time)
        p = run([WEFT, "record", "-o", data, "--", os.path.join(BUILD, "ft_exits_O2"), "closeloop",
                 os.path.join(self.tmp, "log"), "25"], cwd=self.tmp)
        pf = os.path.join(data, "trace.pftrace")
        m = re.search(r"weft: record: (\d+) events, 0 dropped, 1 process, ([\d.]+) MB on disk "
                      r"\(([\d.]+) MB trace.pftrace\)", p.stderr)
        self.assertTrue(m, p.stderr)
        events = int(m.group(1))
        total = sum(os.path.getsize(f) for f in glob.glob(data + "/*"))
        self.assertAlmostEqual(float(m.group(2)), total / 1e6, delta=0.051)
        self.assertAlmostEqual(float(m.group(3)), os.path.getsize(pf) / 1e6, delta=0.051)
        self.assertGreater(events, 100000)
        self.assertLess(os.path.getsize(pf) / events, 6.0)  # ~3.5 B/event; plain packets are ~18
        text = self.protoc_decode(pf, inflate=False)
        if text is not None:
            self.assertIn("compressed_packets:", text)
            self.assertNotIn("track_event {", text)  # every event is inside a compressed batch
            self.assertIn("track_event {", self.protoc_decode(pf))  # and decodes once inflated
        plain, _ = self.convert(data, "plain.pftrace", "--compress=none")
        self.assertGreater(os.path.getsize(plain), 3 * os.path.getsize(pf))
        q = ("select name, count(*) n, sum(dur) d, max(depth) md from slice group by name order by name",
             "select count(*) n from thread")
        self.assertEqual(self.tp(pf, *q), self.tp(plain, *q))
        self.tp_no_errors(pf)

    def test_convert_compress_option(self):
        data, _ = self.record("pipeline", [1, 2, 1])
        p = run([WEFT, "convert", data, "-o", os.path.join(self.tmp, "x.pftrace"), "--compress=zip"], check=False)
        self.assertEqual((p.returncode, p.stderr), (2, "weft: convert: unknown --compress 'zip' (valid: deflate, none)\n"))


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class ProcessNames(TraceTest):
    def test_cmdline_and_exec_rename(self):
        prog = os.path.join(BUILD, "ft_exits_O2")
        data = os.path.join(self.tmp, "x.data")
        run([WEFT, "record", "-q", "-o", data, "--", "sh", "-c", f"exec {prog} _exit 0"], cwd=self.tmp)
        pf = os.path.join(data, "trace.pftrace")
        procs, threads = self.tp(pf, "select pid, name from process where pid != 0",
                                 "select t.tid, t.name from thread t where t.tid != 0")
        self.assertEqual(len(procs), 1, procs)  # one process, two images: named after the last
        self.assertEqual(procs[0]["name"], "ft_exits_O2")
        self.assertEqual([t["name"] for t in threads], ["ft_exits_O2"])
        text = self.protoc_decode(pf)
        if text is not None:  # the command line is in the process descriptor
            self.assertIn(f'cmdline: "{prog}"', text)
            self.assertIn('cmdline: "_exit"', text)



@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class ReportTable(TraceTest):
    def test_columns_and_names(self):
        data = os.path.join(self.tmp, "r.data")
        run([WEFT, "record", "-q", "-o", data, "--", os.path.join(BUILD, "ft_except_O2")], cwd=self.tmp)
        for args in ((), ("--tree",)):
            with self.subTest(args=args):
                lines = run([WEFT, "report", *args, data]).stdout.splitlines()
                head = lines[0]
                cols = [(m.group(1), m.end()) for m in re.finditer(r"(?:Total|Self|Average|Maximum) \((ns|us|ms|s)\)", head)]
                self.assertEqual(len(cols), 2 if args else 4, head)
                rows = [l for l in lines[1:] if l and not l.startswith("=")]
                self.assertTrue(rows)
                for row in rows:
                    for unit, end in cols:  # right-aligned under the header, in its unit
                        cell = row[:end].split()[-1]
                        self.assertRegex(cell, r"^\d+$" if unit == "ns" else r"^\d+\.\d{3}$", (row, unit))
                        self.assertEqual(row[end:end + 1], " ", row)
                names = {l.split()[-1] for l in rows}
                self.assertIn("thrower", names)  # no return type, no parameters
                self.assertIn("ns::twice<int>", names)
                self.assertFalse([n for n in names if "(" in n], names)
        full = run([WEFT, "report", "--full-names", data]).stdout
        self.assertIn("thrower()", full)


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class OutputFiles(TraceTest):
    """Every command that writes a file (convert, export, plot, overhead --db) writes only its
    output: a device or FIFO is written through and stays one, a symlink is followed (a
    dangling one refused), a user's FILE.tmp is not touched, and no file of the trace being
    read is ever written over (tool/outfile.c)."""

    @classmethod
    def setUpClass(cls):
        cls.dtmp = tempfile.mkdtemp(prefix="weft-out-")
        cls.data = os.path.join(cls.dtmp, "m.data")
        cls.memory = not sanitizer()  # the allocation interposer (for plot's heap) is not in ASan builds
        run([WEFT, "record", "-q", "-o", cls.data, *(["--memory"] if cls.memory else []), "--",
             os.path.join(BUILD, "memphases")], cwd=cls.dtmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dtmp, ignore_errors=True)

    # each writing command, as a function of its output path
    def cmds(self):
        cmds = {"convert": lambda o: [WEFT, "convert", "-q", self.data, "-o", o],
                "convert-json": lambda o: [WEFT, "convert", "-q", self.data, "-o", o, "--format", "json"],
                "export": lambda o: [WEFT, "export", "-q", self.data, "-o", o]}
        if self.memory:
            cmds["plot"] = lambda o: [WEFT, "plot", "heap", self.data, "-o", o]
        return cmds

    MAGIC = {"convert": b"", "convert-json": b"{", "export": b"SQLite format 3\0", "plot": b"\x89PNG"}

    def leftovers(self, d):
        return [f for f in os.listdir(d) if ".weft-" in f]

    def test_a_device_stays_a_device(self):
        null = os.path.join(self.tmp, "null")
        try:
            os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # our own /dev/null
        except PermissionError:
            self.skipTest("mknod needs root")
        for name, cmd in self.cmds().items():
            with self.subTest(cmd=name):
                p = run(cmd(null), check=False)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(stat.S_ISCHR(os.lstat(null).st_mode), "replaced by a regular file")
        self.assertEqual(self.leftovers(self.tmp), [])

    def test_a_fifo_is_written_through(self):
        fifo = os.path.join(self.tmp, "pipe")
        os.mkfifo(fifo)
        for name, cmd in self.cmds().items():
            with self.subTest(cmd=name):
                got = []
                def read():
                    with open(fifo, "rb") as f:
                        got.append(f.read())
                reader = threading.Thread(target=read)
                reader.start()
                p = run(cmd(fifo), check=False)
                reader.join(60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
                self.assertGreater(len(got[0]), 100)
                self.assertTrue(got[0].startswith(self.MAGIC[name]), got[0][:16])
        self.assertEqual(self.leftovers(self.tmp), [])

    def test_a_symlink_is_followed_and_a_dangling_one_refused(self):
        for name, cmd in self.cmds().items():
            with self.subTest(cmd=name):
                target, link = os.path.join(self.tmp, name + ".out"), os.path.join(self.tmp, name + ".link")
                with open(target, "wb") as f:
                    f.write(b"old")
                os.chmod(target, 0o640)
                os.symlink(target, link)
                p = run(cmd(link), check=False)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(os.path.islink(link))
                with open(target, "rb") as f:
                    self.assertTrue(f.read().startswith(self.MAGIC[name]))
                self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o640)  # its mode kept
                dangling = os.path.join(self.tmp, name + ".dangling")
                os.symlink(os.path.join(self.tmp, "nowhere", "x"), dangling)
                p = run(cmd(dangling), check=False)
                self.assertEqual(p.returncode, 2)
                self.assertRegex(p.stderr, r"^weft: [a-z]+: .* is a symlink to a missing file: not followed.*\n$")
        self.assertEqual(self.leftovers(self.tmp), [])

    def test_the_users_tmp_file_is_not_touched(self):
        for name, cmd in self.cmds().items():
            with self.subTest(cmd=name):
                out = os.path.join(self.tmp, name + ".out")
                for f in (out + ".tmp", out + "-journal"):
                    with open(f, "w") as fh:
                        fh.write("mine")
                p = run(cmd(out), check=False)
                self.assertEqual(p.returncode, 0, p.stderr)
                for f in (out + ".tmp", out + "-journal"):
                    with open(f) as fh:
                        self.assertEqual(fh.read(), "mine")
                with open(out, "rb") as f:
                    self.assertTrue(f.read().startswith(self.MAGIC[name]))
        # a failed run leaves the old output and no temporary behind
        out = os.path.join(self.tmp, "export.out")
        with open(out, "rb") as f:
            before = f.read()
        p = run([WEFT, "export", os.path.join(self.tmp, "no.data"), "-o", out], check=False)
        self.assertEqual(p.returncode, 1)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(self.leftovers(self.tmp), [])

    def test_files_of_the_trace_are_never_written(self):
        files = sorted(os.listdir(self.data))
        wevents = next(f for f in files if f.endswith(".wevents"))
        wmeta = next(f for f in files if f.endswith(".wmeta"))
        link = os.path.join(self.tmp, "linked.out")
        os.link(os.path.join(self.data, wevents), link)  # the same file under another name
        def digest():
            out = {}
            for f in sorted(os.listdir(self.data)):
                with open(os.path.join(self.data, f), "rb") as fh:
                    out[f] = hashlib.sha256(fh.read()).hexdigest()
            return out
        before = digest()
        targets = [os.path.join(self.data, wevents), os.path.join(self.data, wmeta), link,
                   os.path.join(self.data, "new-1.wevents")]
        cmds = dict(self.cmds())
        cmds["plot-memory"] = lambda o: [WEFT, "plot", "memory", self.data, "-o", o]
        for name, cmd in cmds.items():
            for t in targets + ([os.path.join(self.data, "trace.pftrace")] if name != "convert" else []):
                with self.subTest(cmd=name, target=os.path.basename(t)):
                    p = run(cmd(t), check=False)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertRegex(p.stderr, r"^weft: [a-z]+: refusing to write .*: it is a file of the trace"
                                               r"[^\n]*\n$")
        p = run([WEFT, "overhead", "-n", "1", "--modes", "dry", "--db", os.path.join(self.data, wmeta), "--",
                 "true"], check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(digest(), before)
        self.assertEqual(sorted(os.listdir(self.data)), files)
        # the conversion itself may be made again, and a new file of another kind beside it
        run([WEFT, "convert", "-q", self.data, "-o", os.path.join(self.data, "trace.pftrace")])
        self.assertEqual({f: h for f, h in digest().items() if f != "trace.pftrace"},
                         {f: h for f, h in before.items() if f != "trace.pftrace"})
        self.assertRegex(run([WEFT, "info", self.data]).stdout, r"recorded: [1-9]\d* events")

    def test_overhead_db_is_a_regular_file(self):
        null = os.path.join(self.tmp, "null")
        try:
            os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            self.skipTest("mknod needs root")
        p = run([WEFT, "overhead", "-n", "1", "--modes", "dry", "--db", null, "--", "true"], check=False)
        self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
        self.assertIn("not a regular file", p.stderr)
        self.assertTrue(stat.S_ISCHR(os.lstat(null).st_mode))


class Reproducible(TraceTest):
    def test_converting_twice_gives_the_same_bytes(self):
        # four threads of 300,000 events: each thread's sequence is several 1 MiB batches,
        # which the two encoding threads used to write in whatever order they finished them
        data, _ = self.record("stress", [4, 300000])
        for ext in ("pftrace", "json"):
            outs = []
            for i, jobs in enumerate(("2", "2", "2", "4", "1")):
                out, _ = self.convert(data, f"r{i}.{ext}", "-q", "-j", jobs)
                with open(out, "rb") as f:
                    outs.append(hashlib.sha256(f.read()).hexdigest())
            self.assertEqual(len(set(outs)), 1, f"{ext}: {outs}")


if __name__ == "__main__":
    main()
