"""The default output of weft record: trace.pftrace written as zlib-compressed packet batches
(TracePacket.compressed_packets), which Perfetto's trace_processor reads to exactly the same
slices as plain packets; small (bytes per event bounded); and a summary line that counts every
file in the directory."""
import glob
import os
import re
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Output(TraceTest):
    def test_compressed_default(self):
        data = os.path.join(self.tmp, "o.data")
        p = run([WEFT, "record", "-o", data, "--", os.path.join(BUILD, "ft_exits_O2"), "closefds",
                 os.path.join(self.tmp, "log")], cwd=self.tmp)
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


if __name__ == "__main__":
    main()
