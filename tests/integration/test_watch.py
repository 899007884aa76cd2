"""Hardware watchpoints (`weft record --watch`) on tests/memory/watched.c, whose writes and reads
of two globals are known exactly. Watchpoints are trusted only after the runtime's self-test at
start; which branch a machine takes is decided here independently too (a breakpoint event
opened from Python on a variable of its own, written four times) and must agree with it: where
watchpoints fire, every hit is asserted (count, address, thread, slice); where they open but do
not fire (some virtual machines), the exact one-line "unavailable" and no watch records."""
import ctypes
import glob
import os
import platform
import re
import sqlite3
import struct
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
UNAVAILABLE = "weft: watch: unavailable: hardware watchpoints open but do not fire here (virtual machine?)"
MAIN_WRITES, THREAD_WRITES, FLAG_READS, FLAG_WRITES = 10, 7, 5, 3


def probe_watchpoints():
    """('fires', n), ('silent', 0) or ('refused', errno): a write watchpoint (PERF_TYPE_BREAKPOINT,
    8 bytes, user space only, counting) on a c_long of this process, written four times."""
    libc = ctypes.CDLL(None, use_errno=True)
    v = ctypes.c_long(0)
    attr = bytearray(72)  # PERF_ATTR_SIZE_VER1
    struct.pack_into("<IIQQQQQIIQQ", attr, 0, 5, 72, 0, 0, 0, 0, (1 << 5) | (1 << 6), 0, 2,
                     ctypes.addressof(v), 8)
    buf = (ctypes.c_char * 72).from_buffer(attr)
    fd = libc.syscall(NR_PERF_EVENT_OPEN, buf, 0, -1, -1, 0)
    if fd < 0:
        return "refused", ctypes.get_errno()
    try:
        for i in range(4):
            v.value = i + 1
        n = int.from_bytes(os.read(fd, 8), "little")
    finally:
        os.close(fd)
    return ("fires", n) if n else ("silent", 0)


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs weft record's runtime")
@unittest.skipIf(NR_PERF_EVENT_OPEN is None, "no perf_event_open number for this architecture here")
class Watch(TraceTest):
    def setUp(self):
        super().setUp()
        # perf_event_open at all (root, or kernel.perf_event_paranoid <= 2), as the access tests
        p = run([WEFT, "record", "-q", "--no-convert", "-o", os.path.join(self.tmp, "probe.data"),
                 "--mem-access=pagefault", "--", "true"], cwd=self.tmp)
        if "unavailable" in p.stderr:
            self.skipTest("perf_event_open is not permitted here: " + p.stderr.strip())
        self.probe = probe_watchpoints()

    def record(self, prog, *watch, check_line=True):
        data = os.path.join(self.tmp, "w.data")
        p = run([WEFT, "record", "-q", "-o", data, *("--watch=" + w for w in watch), "--",
                 os.path.join(BUILD, prog)], cwd=self.tmp)
        m = re.fullmatch(r"main (\d+) (0x[0-9a-f]+) (0x[0-9a-f]+)\nthread (\d+)\n", p.stdout)
        self.assertIsNotNone(m, p.stdout)  # the program runs on, whatever the branch
        main_tid, counter, flag, thread_tid = int(m[1]), int(m[2], 16), int(m[3], 16), int(m[4])
        fires = not p.stderr.startswith("weft: watch: unavailable: hardware watchpoints")
        # the runtime's self-test and this test's own probe agree on the branch
        self.assertEqual(fires, self.probe[0] == "fires", (self.probe, p.stderr))
        if self.probe[0] == "refused":
            self.assertEqual(p.stderr, "weft: watch: unavailable: perf_event_open of a hardware watchpoint "
                                       f"failed: {os.strerror(self.probe[1])}\n")
        elif not fires:
            self.assertEqual(p.stderr, UNAVAILABLE + "\n")
        elif check_line:
            self.assertEqual(p.stderr, "")
        return data, p, fires, main_tid, thread_tid, counter, flag

    def hits(self, data):
        """{(source, tid, addr): count} of the watch records, and the same with each hit's slice."""
        db = os.path.join(self.tmp, "w.db")
        if os.path.exists(db):
            os.unlink(db)
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        rows = con.execute("select x.source, t.tid, x.addr, s.name, count(*), min(x.ts), max(x.ts) from accesses x "
                           "left join threads t on t.utid = x.utid left join slices s on s.id = x.slice_id "
                           "where x.source like 'watch%' group by 1, 2, 3, 4").fetchall()
        return rows

    def assert_unavailable(self, data):
        self.assertEqual(self.hits(data), [])
        self.assertNotIn("hardware watchpoint", run([WEFT, "info", data]).stdout)

    def test_hits_of_every_thread(self):
        data, p, fires, mt, tt, counter, flag = self.record("watched", "watched_counter", "watched_flag:rw")
        if not fires:
            return self.assert_unavailable(data)
        rows = self.hits(data)
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in rows}
        self.assertEqual(got, {("watch-write", mt, counter, "main"): MAIN_WRITES,
                               ("watch-write", tt, counter, "second"): THREAD_WRITES,
                               ("watch-rw", mt, flag, "main"): FLAG_READS + FLAG_WRITES})
        # on weft's timeline: main's writes, then the thread's, then main's flag accesses
        t = {(r[0], r[1]): (r[5], r[6]) for r in rows}
        self.assertLess(t[("watch-write", mt)][1], t[("watch-write", tt)][0])
        self.assertLess(t[("watch-write", tt)][1], t[("watch-rw", mt)][0])
        info = run([WEFT, "info", data]).stdout
        self.assertIn("  watched:  2 hardware watchpoints, 0 lost\n"
                      f"            watched_counter at {counter:#x}, 8 bytes, writes: {MAIN_WRITES + THREAD_WRITES} hits\n"
                      f"            watched_flag at {flag:#x}, 4 bytes, reads and writes: "
                      f"{FLAG_READS + FLAG_WRITES} hits\n", info)
        self.assertNotIn("accesses:", info)  # no sampling source ran

    def test_hits_join_their_slices_without_the_sampler_stream(self):
        # A short program's sampler may first run after the run stopped: its stream, named
        # "weft-access" by its first record, is then not in the trace at all (the last drain put
        # every hit in the program's threads' streams). The hits join their slices all the same:
        # here that stream's name is taken away (the THREAD record in the .wmeta, same length).
        data, p, fires, mt, tt, counter, flag = self.record("watched", "watched_counter", "watched_flag:rw")
        if not fires:
            return self.assert_unavailable(data)
        for m in glob.glob(os.path.join(data, "*.wmeta")):
            with open(m, "rb") as f:
                b = f.read()
            with open(m, "wb") as f:
                f.write(b.replace(b"weft-access\0", b"weft-accesz\0"))
        self.assertNotIn('"weft-access"', run([WEFT, "info", data]).stdout)
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in self.hits(data)}
        self.assertEqual(got, {("watch-write", mt, counter, "main"): MAIN_WRITES,
                               ("watch-write", tt, counter, "second"): THREAD_WRITES,
                               ("watch-rw", mt, flag, "main"): FLAG_READS + FLAG_WRITES})

    def test_fixed_address_program_by_address(self):
        # a non-PIE program: its globals are where the first run says; watch one by address
        first = run([os.path.join(BUILD, "watched_nopie")]).stdout
        counter = re.match(r"main \d+ (0x[0-9a-f]+)", first)[1]
        data, p, fires, mt, tt, c2, flag = self.record("watched_nopie", counter + ":8:w", "watched_flag:w")
        self.assertEqual(c2, int(counter, 16))
        if not fires:
            return self.assert_unavailable(data)
        got = {(r[0], r[1], r[2]): r[4] for r in self.hits(data)}
        self.assertEqual(got, {("watch-write", mt, c2): MAIN_WRITES, ("watch-write", tt, c2): THREAD_WRITES,
                               ("watch-write", mt, flag): FLAG_WRITES})  # writes only: no reads
        info = run([WEFT, "info", data]).stdout
        self.assertIn(f"            {c2:#x}, 8 bytes, writes: {MAIN_WRITES + THREAD_WRITES} hits\n", info)
        self.assertIn(f"            watched_flag at {flag:#x}, 4 bytes, writes: {FLAG_WRITES} hits\n", info)

    def test_unknown_symbol_and_bad_specs(self):
        data, p, fires, *_ = self.record("watched", "no_such_variable", check_line=False)
        if fires:
            self.assertEqual(p.stderr, "weft: watch: unavailable: no variable 'no_such_variable' in the "
                                       "program's symbol table\n")
        self.assert_unavailable(data)
        for spec, why in (("x:3", "bad watch field '3': expected a length (1, 2, 4, 8) or w or rw, once each"),
                          ("a,b,c,d,e", "at most 4 watchpoints (the debug registers of x86)"),
                          ("0x1004", "0x1004 is not a multiple of the watched length 8"),
                          ("9lives", "'9lives' is neither a symbol nor a 0x address")):
            with self.subTest(spec=spec):
                p = run([WEFT, "record", "-q", "-o", data, "--watch=" + spec, "--", "true"], check=False)
                self.assertEqual((p.returncode, p.stderr), (2, f"weft: record: bad --watch '{spec}': {why}\n"))
        # five over two options
        p = run([WEFT, "record", "-q", "-o", data, "--watch=a,b,c", "--watch=d:4,e", "--", "true"], check=False)
        self.assertEqual((p.returncode, p.stderr), (2, "weft: record: bad --watch 'd:4,e': at most 4 watchpoints "
                                                       "(the debug registers of x86)\n"))


if __name__ == "__main__":
    main()
