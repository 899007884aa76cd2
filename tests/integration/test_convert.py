"""weft convert as a user runs it: the same trace directory always gives the same bytes (threads
encoded and batches deflated in parallel, whatever their timing, and `weft record`'s own
trace.pftrace the same as converting its directory afterwards), a progress line on a terminal
and nothing new on a pipe, and a recording cut short converting what it holds."""
import glob
import hashlib
import os
import re
import shutil
import struct
import subprocess
import unittest
import weftlib
from weftlib import TraceTest, main, run, WEFT, BUILD


def chunk_frames(path):
    """(offset, size, events) of each chunk frame of an events file (docs/format.md: a 32-byte
    file header, then frames of a 40-byte header and stored_size bytes)"""
    with open(path, "rb") as f:
        b = f.read()
    frames, off = [], 32
    while off + 40 <= len(b):
        magic, stored = struct.unpack_from("<I12xI", b, off)
        if magic != 0x4B4E4843:
            raise ValueError(f"{path}: no chunk frame at offset {off}")
        events, = struct.unpack_from("<I", b, off + 32)
        frames.append((off, 40 + stored, events))
        off += 40 + stored
    return frames


CHUNK_INDEX, IX_FUNCS = 40, 0x10


def listing(tail):
    """The addresses of a CHUNK_INDEX record's tail (sorted, varint differences), or None where
    it is cut inside a number."""
    addrs, prev, v, shift = [], 0, 0, 0
    for b in tail:
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            prev += v
            addrs.append(prev)
            v = shift = 0
    return None if shift else addrs


def index_listings(trace, edit=None):
    """The function address listings of the CHUNK_INDEX records of every .wmeta (format 1.13,
    src/format/funcset.h): one (flags, [addresses] or None) per record. edit(flags, tail) ->
    (flags, tail), where given, rewrites each record in place."""
    out = []
    for name in sorted(os.listdir(trace)):
        if not name.endswith(".wmeta"):
            continue
        path = os.path.join(trace, name)
        with open(path, "rb") as f:
            d = f.read()
        new, off = bytearray(d[:32]), 32
        while off + 8 <= len(d):
            typ, z, ln = struct.unpack_from("<HHI", d, off)
            rec = d[off + 8:off + 8 + ln]
            off += 8 + ln
            if typ == CHUNK_INDEX and ln >= 72:
                flags, = struct.unpack_from("<I", rec, 64)
                out.append((flags, listing(rec[72:])))
                if edit:
                    flags, tail = edit(flags, rec[72:])
                    rec = rec[:64] + struct.pack("<I", flags) + rec[68:72] + tail
            new += struct.pack("<HHI", typ, z, len(rec)) + rec
        if edit:
            with open(path, "wb") as f:
                f.write(new)
    return out

def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Convert(TraceTest):
    def stress_trace(self, threads=4, events=100000):
        data = os.path.join(self.tmp, "s.data")
        run([WEFT, "record", "-q", "-o", data, "--", os.path.join(BUILD, "stress"), str(threads), str(events)],
            cwd=self.tmp)
        return data

    def test_same_bytes_whatever_the_threads(self):
        # 4 threads of 100,000 events: several ~1 MiB batches per sequence, encoded by 1, 2 or 16
        # threads and deflated by as many workers, under two busy loops that shuffle the timing
        data = self.stress_trace()
        recorded = digest(os.path.join(data, "trace.pftrace"))
        load = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        try:
            seen = set()
            for i, jobs in enumerate(("1", "16", "2", "16")):
                out, _ = self.convert(data, f"c{i}.pftrace", "-q", "-j", jobs)
                seen.add(digest(out))
        finally:
            for p in load:
                p.kill()
                p.wait()
        self.assertEqual(seen, {recorded}, "the same directory gave different bytes")
        with open(out, "rb") as f:
            self.assertGreater(f.read().count(b"\x92\x03"), 8)  # compressed_packets fields: many batches
        n, = self.tp(out, "select count(*) n from slice")
        self.assertEqual(n[0]["n"], 4 * 100000)
        self.tp_no_errors(out)

    def many_functions(self, rounds, n=2000):
        src = os.path.join(self.tmp, "many.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\nvolatile long s;\n")
            f.write("".join(f"__attribute__((noinline)) void f{i}(void) {{ s += {i}; }}\n" for i in range(n)))
            f.write("typedef void (*fn)(void);\nstatic fn t[] = {" + ",".join(f"f{i}" for i in range(n)) + "};\n")
            f.write("int main(void) { for (int r = 0; r < %d; r++) for (int i = 0; i < %d; i++) "
                    "t[(i * 7919 + r) %% %d](); printf(\"%%ld\\n\", s); return 0; }\n" % (rounds, n, n))
        exe = os.path.join(self.tmp, "many")
        run(["cc", "-O1", "-finstrument-functions", src, "-o", exe])
        data = os.path.join(self.tmp, "m.data")
        shutil.rmtree(data, ignore_errors=True)
        run([WEFT, "record", "-q", "--no-convert", "-o", data, "--", exe], cwd=self.tmp)
        return exe, data

    def test_same_function_ids_whatever_the_threads(self):
        # 2,000 functions over several chunks: the collectors that find the addresses race, and
        # the ids (the interned names' iids) must not depend on which found what first (before
        # the fix: 2 outputs in 6 conversions in about a third of the runs; the next test always fails)
        n = 2000
        _, data = self.many_functions(100, n)
        seen = set()
        for i in range(6):
            out, _ = self.convert(data, f"m{i}.pftrace", "-q")
            seen.add(digest(out))
        self.assertEqual(len(seen), 1, "function ids differ between conversions")
        rows, = self.tp(out, "select count(distinct name) n from slice")
        self.assertEqual(rows[0]["n"], n + 1)  # and main

    def test_function_ids_in_address_order(self):
        # what makes them independent of the threads: iids follow the addresses (nm's)
        exe, data = self.many_functions(1, 300)
        out, _ = self.convert(data, "a.pftrace", "-q")
        text = self.protoc_decode(out)
        if text is None:
            return
        iid = {m.group(2): int(m.group(1)) for m in
               re.finditer(r'event_names \{\s*iid: (\d+)\s*name: "(f\d+|main)"', text)}
        addr = {}
        for line in run(["nm", exe]).stdout.splitlines():
            a, _, name = line.split() if len(line.split()) == 3 else (None, None, None)
            if name in iid:
                addr[name] = int(a, 16)
        self.assertEqual(len(iid), 301, sorted(iid)[:5])
        by_addr = sorted(iid, key=lambda k: addr[k])
        self.assertEqual(by_addr, sorted(iid, key=lambda k: iid[k]))

    def test_function_listings(self):
        # Format 1.13: each chunk's index record lists the chunk's function addresses, made
        # while the writer packs it, so that the reader names functions without scanning the
        # chunks first. 2,000 functions over several chunks: every chunk listed, the union is
        # every function called, and a trace without listings (before 1.13, or a record lost)
        # converts to the same bytes
        n = 2000
        _, data = self.many_functions(40, n)
        listings = index_listings(data)
        self.assertGreater(len(listings), 2)
        self.assertTrue(all(flags & IX_FUNCS for flags, _ in listings), listings[:3])
        for _, addrs in listings:
            self.assertEqual(addrs, sorted(set(addrs)))
        self.assertEqual(len({a for _, addrs in listings for a in addrs}), n + 1)  # and main
        listed, _ = self.convert(data, "listed.pftrace", "-q")
        rows, = self.tp(listed, "select count(distinct name) n from slice where name glob 'f*' or name = 'main'")
        self.assertEqual(rows[0]["n"], n + 1)
        index_listings(data, lambda flags, tail: (flags & ~IX_FUNCS, b""))
        self.assertFalse(any(flags & IX_FUNCS for flags, _ in index_listings(data)))
        scanned, c = self.convert(data, "scanned.pftrace", "-q")
        if digest(listed) != digest(scanned):  # (seen once, in a loaded ASan run: say what differs)
            q = "select name, count(*) n from slice group by name"
            a, = self.tp(listed, q)
            b, = self.tp(scanned, q)
            a, b = {r["name"]: r["n"] for r in a}, {r["name"]: r["n"] for r in b}
            diff = sorted(set(a.items()) ^ set(b.items()))[:20]
            self.fail(f"listed and scanned conversions differ: {os.path.getsize(listed)} and "
                      f"{os.path.getsize(scanned)} bytes; slices by name that differ: {diff}; stderr: {c.stderr!r}")
        # a malformed listing (cut inside a number) is refused: that chunk is scanned instead
        index_listings(data, lambda flags, tail: (flags | IX_FUNCS, b"\x10\x80"))
        bad, _ = self.convert(data, "bad.pftrace", "-q")
        self.assertEqual(digest(listed), digest(bad))
        # and the listings are what the reader uses: emptied, no function is named
        index_listings(data, lambda flags, tail: (flags | IX_FUNCS, b""))
        empty, _ = self.convert(data, "empty.pftrace", "-q")
        rows, = self.tp(empty, "select count(distinct name) n from slice where name glob 'f*'")
        self.assertEqual(rows[0]["n"], 0)

    def test_progress_line_on_a_terminal_only(self):
        data = self.stress_trace(2, 50000)
        out = os.path.join(self.tmp, "p.pftrace")
        cmd = ["/usr/bin/env", "WEFT_PROGRESS_DELAY_MS=0", WEFT, "convert", data, "-o", out]
        _, code, text = weftlib.on_tty(cmd, self.tmp, b"\x00never", lambda pid, fd: None)
        self.assertEqual(code, 0, text)
        self.assertRegex(text, r"\rweft: convert: (reading the trace|converting, \d+% \([\d.]+ of 0\.1 M events\))\x1b\[K")
        self.assertRegex(text, r"\r\x1b\[Kweft: convert: wrote .*p.pftrace: 100000 events, 0 dropped\n$")
        # on a pipe: the summary line alone, delay or not
        p = run(cmd[:1] + cmd[1:], check=True)
        self.assertEqual(p.stderr, f"weft: convert: wrote {out}: 100000 events, 0 dropped\n")
        # -q on a terminal: nothing at all
        _, code, text = weftlib.on_tty(cmd + ["-q"], self.tmp, b"\x00never", lambda pid, fd: None)
        self.assertEqual((code, text), (0, ""))

    def test_cut_short_converts_what_it_holds(self):
        # a recording killed mid-way: its events files end inside their last frame (cut in its
        # middle, found from the frame headers: a cut at a fixed fraction of the file could fall
        # inside the first of the two threads' frames, whose compressed sizes vary with timing)
        data = self.stress_trace(2, 50000)
        full, = self.tp(os.path.join(data, "trace.pftrace"), "select count(*) n from slice")
        lost = 0
        for f in glob.glob(os.path.join(data, "*.wevents")):
            frames = chunk_frames(f)
            self.assertGreater(len(frames), 1, f)  # one chunk per thread at least
            offset, size, events = frames[-1]
            os.truncate(f, offset + size // 2)
            lost += events
        os.unlink(os.path.join(data, "trace.pftrace"))
        out, p = self.convert(data, "cut.pftrace")
        self.assertIn("truncated or damaged after offset", p.stderr)
        m = re.search(r"wrote .*: (\d+) events", p.stderr)
        part, = self.tp(out, "select count(*) n from slice")
        self.assertEqual(part[0]["n"], int(m.group(1)))
        self.assertGreater(lost, 0)
        self.assertEqual(part[0]["n"], full[0]["n"] - lost)  # every frame but the cut one
        again, _ = self.convert(data, "cut2.pftrace", "-q")
        self.assertEqual(digest(out), digest(again))


if __name__ == "__main__":
    main()
