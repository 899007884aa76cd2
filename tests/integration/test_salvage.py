"""Missing data the reader can detect from the metadata: a deleted events file, a chunk cut
out cleanly (frames intact, one missing). Converting keeps what is there and warns once, with
the count, instead of a clean-looking exit 0 (tests/programs/stress.c makes the trace)."""
import glob
import os
import re
import struct
from weftlib import TraceTest, main, run, WEFT, BUILD


class Salvage(TraceTest):
    def make(self):
        out = os.path.join(self.tmp, "s.data")
        p = run([os.path.join(BUILD, "stress"), "2", "100000"], env={"WEFT_OPTIONS": f"output={out}:chunk_size=8K"})
        self.assertIn("emitted 200000 written 200000 dropped 0", p.stdout)
        return out

    def test_deleted_events_file(self):
        data = self.make()
        pid = os.path.basename(glob.glob(data + "/*.wmeta")[0]).split(".")[0]
        os.unlink(glob.glob(data + "/*.wevents")[0])
        pf, p = self.convert(data, "x.pftrace")
        warn = [l for l in p.stderr.splitlines() if "warning" in l]
        self.assertEqual(len(warn), 1, p.stderr)
        self.assertRegex(warn[0], rf"^weft: convert: warning: process {pid}: \d+ chunks missing \(first in thread \d+\): "
                                  r"the events files were cut or deleted; their events are not in the trace$")

    def test_chunk_cut_out(self):
        data = self.make()
        ev = glob.glob(data + "/*.wevents")[0]
        with open(ev, "rb") as f:
            d = f.read()
        off, frames = 32, []
        while off + 40 <= len(d):
            magic, flags, tid, raw, stored, ck, seq, events = struct.unpack_from("<IIIIIIQI", d, off)
            frames.append((off, 40 + stored, tid, seq, events))
            off += 40 + stored
        cut = frames[len(frames) // 2]
        with open(ev, "wb") as f:
            f.write(d[:cut[0]] + d[cut[0] + cut[1]:])
        pf, p = self.convert(data, "x.pftrace")
        self.assertIn(f"1 chunks missing (first in thread {cut[2]})", p.stderr)
        self.assertEqual(len([l for l in p.stderr.splitlines() if "warning" in l]), 1, p.stderr)
        self.assertRegex(p.stderr, rf"wrote .*x.pftrace: {200000 - cut[4]} events")
        rows, = self.tp(pf, "select count(*) n from slice where name = 'tick'")
        self.assertEqual(rows, [{"n": 200000 - cut[4]}])

    def test_intact_trace_has_no_warning(self):
        data = self.make()
        pf, p = self.convert(data, "x.pftrace")
        self.assertNotIn("warning", p.stderr)

    def test_many_damages_one_kind_few_lines(self):
        data = self.make()
        ev = glob.glob(data + "/*.wevents")[0]
        with open(ev, "rb") as f:
            d = bytearray(f.read())
        off, frames = 32, []
        while off + 40 <= len(d):
            stored = struct.unpack_from("<I", d, off + 16)[0]
            frames.append(off)
            off += 40 + stored
        broken = frames[1::2]
        for fo in broken:  # every other chunk's magic broken: many damaged ranges
            d[fo] ^= 0xFF
        with open(ev, "wb") as f:
            f.write(d)
        pf, p = self.convert(data, "x.pftrace")
        lines = [l for l in p.stderr.splitlines() if "damaged bytes" in l]
        self.assertGreater(len(broken), 10)
        self.assertEqual(len(lines), 4, p.stderr)  # three as they are, one with the count
        m = re.match(r"^weft: convert: warning: \.\.\. and (\d+) more of this kind \(the last: .*damaged bytes", lines[3])
        self.assertTrue(m, lines[3])
        # one damaged range per broken chunk (a broken last chunk is "truncated", another kind)
        self.assertIn(int(m.group(1)) + 3, (len(broken), len(broken) - 1))


    def test_out_of_memory_anywhere_is_exit_1(self):
        from test_damage import sanitized
        if sanitized():
            self.skipTest("a malloc shim cannot be preloaded into a sanitizer build")
        data = self.make()
        cmds = (["convert", data, "-o", os.path.join(self.tmp, "o.pftrace")],
                ["convert", data, "-o", os.path.join(self.tmp, "o.json")],
                ["convert", data, "-o", os.path.join(self.tmp, "x.json"), "--json-style=x"],
                ["report", data], ["report", "--tree", data], ["info", data])
        failed = 0
        for limit in (256, 4096, 65536, 100000, 140000, 200000, 600000, 1 << 21):
            for cmd in cmds:
                with self.subTest(limit=limit, cmd=cmd[:2]):
                    p = run([WEFT, *cmd], check=False,
                            env={"LD_PRELOAD": os.path.join(BUILD, "failbig.so"), "WEFT_TEST_FAIL_ABOVE": str(limit)})
                    self.assertIn(p.returncode, (0, 1), p.stderr)  # never a signal (SIGABRT was)
                    if p.returncode:
                        failed += 1
                        self.assertRegex(p.stderr.splitlines()[-1],
                                         r"^weft: (convert|report|info): .*(out of memory|Cannot allocate memory)")
        self.assertGreater(failed, 0)


if __name__ == "__main__":
    main()
