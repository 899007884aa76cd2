"""Damaged traces: cut short like after SIGKILL or a full disk, bytes flipped, files missing.
The tools warn in one line each, keep everything readable and still produce valid output."""
import glob
import os
import shutil
import signal
import subprocess
import struct
import time
from weftlib import TraceTest, main, run, WEFT, BUILD


class Damage(TraceTest):
    def setUp(self):
        super().setUp()
        self.data, _ = self.record("pipeline", [3, 200, 2], options="chunk_size=8K")
        self.events = glob.glob(self.data + "/*.wevents")[0]
        self.full = int(run([WEFT, "info", self.data]).stdout.split("events:")[1].split()[0])

    def count(self, data):
        return int(run([WEFT, "info", data]).stdout.split("events:")[1].split()[0])

    def test_truncated(self):
        size = os.path.getsize(self.events)
        with open(self.events, "r+b") as f:
            f.truncate(size * 2 // 3)
        pf, c = self.convert(self.data, "t.pftrace")
        self.assertIn("warning:", c.stderr)
        self.assertIn("truncated or damaged", c.stderr)
        kept = self.count(self.data)
        self.assertGreater(kept, self.full // 3)
        self.assertLess(kept, self.full)
        self.protoc_decode(pf)
        self.tp_no_errors(pf)
        js, _ = self.convert(self.data, "t.json")
        self.load_json(js)

    def test_corrupt_middle(self):
        size = os.path.getsize(self.events)
        with open(self.events, "r+b") as f:
            f.seek(size // 2)
            f.write(b"\xff" * 64)
        pf, c = self.convert(self.data, "c.pftrace")
        self.assertIn("damaged bytes", c.stderr)
        kept = self.count(self.data)
        self.assertGreater(kept, self.full // 2)
        self.assertLess(kept, self.full)
        self.tp_no_errors(pf)

    def test_missing_metadata(self):
        for m in glob.glob(self.data + "/*.wmeta"):
            os.unlink(m)
        pf, c = self.convert(self.data, "m.pftrace")
        self.assertIn("no metadata file; names are unknown", c.stderr)
        self.protoc_decode(pf)
        self.tp_no_errors(pf)  # (the counters, which only the metadata described, too)

    def test_metadata_cut_to_its_header(self):
        """A .wmeta cut after its file header (a full disk at the start): the events are kept, and
        the reader says that it does not know what their times count."""
        for m in glob.glob(self.data + "/*.wmeta"):
            with open(m, "r+b") as f:
                f.truncate(32)
        pf, c = self.convert(self.data, "h.pftrace")
        self.assertRegex(c.stderr, r"warning: process \d+: its metadata has no clock record \(cut short\?\); "
                                   r"timestamps are read as nanoseconds, which they may not be\n")
        self.assertEqual(self.count(self.data), self.full)
        self.tp_no_errors(pf)

    def test_not_a_trace(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        p = run([WEFT, "convert", empty, "-o", os.path.join(self.tmp, "x.pftrace")], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"weft: convert: {empty}: no weft trace files (*.wmeta, *.wevents) found\n")
        with open(glob.glob(self.data + "/*.wmeta")[0], "r+b") as f:
            f.seek(8)
            f.write(b"\x09\x00\x00\x00")  # version 9.0
        p = run([WEFT, "info", self.data], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("trace format 9.0 is newer than this weft reads (1.x); use a newer weft", p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1)

    def test_sigkill_keeps_handed_off_chunks(self):
        out = os.path.join(self.tmp, "killed.data")
        env = dict(os.environ, WEFT_OPTIONS=f"output={out}:chunk_size=8K")
        proc = subprocess.Popen([os.path.join(BUILD, "stress"), "1", "2000000000", "500"], env=env)
        # kill it once its writer has handed chunks to disk (not after a fixed time: a loaded
        # machine may not have started it yet)
        deadline = time.time() + 120
        while time.time() < deadline and sum(os.path.getsize(f) for f in glob.glob(out + "/*.wevents")) < 64 << 10:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        info = run([WEFT, "info", out]).stdout
        self.assertIn("[not finished: killed or still running]", info)
        self.assertGreater(self.count(out), 8000)  # at least one 8K chunk's worth
        pf, _ = self.convert(out, "k.pftrace")
        self.protoc_decode(pf)
        self.tp_no_errors(pf)
        # killed while one writer still wrote a chunk that came before another's (one frame
        # cut out here): missing, and said to be the kill's doing, not a cut or deleted file
        ev = max(glob.glob(out + "/*.wevents"), key=os.path.getsize)
        with open(ev, "rb") as f:
            d = f.read()
        off, frames = 32, []
        while off + 40 <= len(d):
            stored = struct.unpack_from("<IIIII", d, off)[4]
            frames.append((off, 40 + stored))
            off += 40 + stored
        cut = frames[len(frames) // 2]
        with open(ev, "wb") as f:
            f.write(d[:cut[0]] + d[cut[0] + cut[1]:])
        _, p = self.convert(out, "k2.pftrace")
        self.assertRegex(p.stderr, r"warning: process \d+: \d+ chunks missing \(first in thread \d+\): the process "
                                   r"ended while writing them, without finishing its trace \(killed\?\); their events "
                                   r"are not in the trace")


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def sum32(data):
    """weft_sum32 (docs/format.md, chunk flag 0x8: format 1.9)."""
    m = (1 << 64) - 1

    def mix(x, w):
        x = ((x ^ w) * 0x9E3779B97F4A7C15) & m
        return x ^ (x >> 32)

    lanes = [0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89]
    n = len(data)
    whole = n - n % 32
    for i in range(0, whole, 32):
        for k in range(4):
            lanes[k] = mix(lanes[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], "little"))
    tail = bytes(data[whole:])
    for k in range(3):
        if len(tail) > 8 * k:
            lanes[k] = mix(lanes[k], int.from_bytes(tail[8 * k:8 * k + 8].ljust(8, b"\0"), "little"))
    x = n
    for k in range(4):
        x = mix(x, lanes[k])
    return x >> 32


def chunk_sum(flags, data):
    return sum32(data) if flags & 0x8 else fnv1a(data)


def sanitized():
    """True for an ASan/TSan build (a malloc shim cannot be preloaded into those)."""
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("WEFT_SANITIZE:"):
                return line.strip().split("=", 1)[1] != ""
    return False


class Undecodable(TraceTest):
    """Chunks that pass their checksum but do not decode, and running out of memory while
    decoding: never a silently shorter result."""

    def setUp(self):
        super().setUp()
        # 200000 instants in 1 MiB chunks: 3 full chunks and a short one; packed, not zstd,
        # so a test can edit the packed bytes
        self.data, _ = self.record("stress", [1, 200000], options="compression=0")
        self.events = glob.glob(self.data + "/*.wevents")[0]

    def break_chunk(self, seq):
        """Puts a byte that is no tag of packing version 2 to 5 into chunk `seq`, with a matching
        checksum (a writer bug, not damage on disk). Returns the chunk's event count."""
        with open(self.events, "r+b") as f:
            d = bytearray(f.read())
            off = 32
            while off + 40 <= len(d):
                magic, flags, tid, raw, stored, ck, cseq, events = struct.unpack_from("<IIIIIIQI", d, off)
                body = off + 40
                if cseq == seq:
                    # packing version 2, 3, 4 or 5, not compressed
                    self.assertIn(flags & 0xb7, (0x4, 0x10, 0x20, 0x80))
                    d[body] = 250  # the first record's tag byte (a byte further in may be
                    # part of a timestamp varint, where 194 is valid: that depended on timing)
                    struct.pack_into("<I", d, off + 20, chunk_sum(flags, d[body:body + stored]))
                    f.seek(0)
                    f.write(d)
                    return events
                off = body + stored
        self.fail(f"no chunk {seq}")

    def test_undecodable_chunk_is_reported(self):
        lost = self.break_chunk(1)  # a middle chunk: the reader's span check does not see it
        self.assertEqual(lost, 65536)
        warn = "warning: 1 chunks could not be decoded (bad packed records); their events are left out\n"
        pf, c = self.convert(self.data, "u.pftrace", "-q")
        self.assertEqual(c.stderr, "weft: convert: " + warn)
        self.protoc_decode(pf)
        rows, = self.tp(pf, "select count(*) n from slice where name = 'tick'")
        self.assertEqual(rows, [{"n": 200000 - lost}])
        js, c = self.convert(self.data, "u.json")
        self.assertEqual(c.stderr.splitlines()[0], "weft: convert: " + warn.strip())
        self.assertIn(f"wrote {js}: {200000 - lost} events", c.stderr)
        doc = self.load_json(js)
        self.assertEqual(sum(1 for e in doc["traceEvents"] if e.get("name") == "tick"), 200000 - lost)
        p = run([WEFT, "report", self.data])
        self.assertEqual(p.stderr, "weft: report: " + warn)

    def test_chunk_of_a_later_format_says_so(self):
        # a flag bit this weft does not know (a packing of a later format): the chunk is left
        # out with that reason, not misread as damage
        with open(self.events, "r+b") as f:
            d = bytearray(f.read())
            flags, = struct.unpack_from("<I", d, 32 + 4)
            struct.pack_into("<I", d, 32 + 4, flags | 0x100)  # the checksum does not cover the header
            f.seek(0)
            f.write(d)
        pf, c = self.convert(self.data, "n.pftrace", "-q")
        self.assertEqual(c.stderr.splitlines()[-1], "weft: convert: warning: 1 chunks could not be decoded (written "
                         "by a newer weft (chunk flags it does not know): use a newer weft); their events are left out")
        rows, = self.tp(pf, "select count(*) n from slice where name = 'tick'")
        self.assertEqual(rows, [{"n": 200000 - 65536}])

    def test_out_of_memory_is_an_error(self):
        if sanitized():
            self.skipTest("a malloc shim cannot be preloaded into a sanitizer build")
        shim = {"LD_PRELOAD": os.path.join(BUILD, "failbig.so"), "WEFT_TEST_FAIL_ABOVE": "600000"}
        p = run([WEFT, "report", self.data], env=shim, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr.splitlines()[-1],
                         f"weft: report: out of memory reading {self.data}: no report (it would be incomplete)")
        for name in ("o.pftrace", "o.json"):
            p = run([WEFT, "convert", self.data, "-o", os.path.join(self.tmp, name)], env=shim, check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr.splitlines()[-1], "weft: convert: out of memory: some chunks or "
                             "events could not be read; the output is incomplete")
        # the same commands without the shim: the trace itself is fine
        p = run([WEFT, "convert", "-q", self.data, "-o", os.path.join(self.tmp, "ok.pftrace")])
        self.assertEqual(p.stderr, "")


if __name__ == "__main__":
    main()
