"""weft_stop() with threads still emitting, and a start that fails: every emitted event is
written, dropped or counted after_stop - exactly (tests/programs/stopper.c counts its own)."""
import os
import re
import subprocess
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD


class Stop(TraceTest):
    def parse(self, out):
        m = re.match(r"emitted (\d+) events (\d+) dropped (\d+) after_stop (\d+)$", out.strip())
        self.assertTrue(m, out)
        return tuple(map(int, m.groups()))

    def test_threads_emitting_during_stop(self):
        for i in range(3):
            data = os.path.join(self.tmp, f"s{i}.data")
            p = run([os.path.join(BUILD, "stopper"), "4"], env={"WEFT_OPTIONS": f"output={data}"})
            emitted, events, dropped, after = self.parse(p.stdout)
            self.assertEqual(events + dropped + after, emitted)
            self.assertGreaterEqual(after, 4 * 4000)  # what each thread emitted after weft_stop returned
            info = run([WEFT, "info", data]).stdout
            rec = re.search(r"recorded: (\d+) events, (\d+) dropped, (\d+) after stop", info)
            self.assertEqual((int(rec.group(1)), int(rec.group(2))), (events, dropped))
            self.assertLessEqual(int(rec.group(3)), after)  # the trace's count ends at the stop

    def test_failed_start_counts_everything(self):
        p = run([os.path.join(BUILD, "stopper"), "2"], env={"WEFT_OPTIONS": "output=/proc/no/such/dir"})
        emitted, events, dropped, after = self.parse(p.stdout)
        self.assertEqual((events, after), (0, 0))
        self.assertEqual(dropped, emitted)
        self.assertIn("cannot write the trace to '/proc/no/such/dir'", p.stderr)


class DiskFull(TraceTest):
    """A trace directory on a 256 KB tmpfs: the disk fills while the program runs."""

    def setUp(self):
        super().setUp()
        self.mnt = os.path.join(self.tmp, "small")
        os.mkdir(self.mnt)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", self.mnt], capture_output=True)
        if p.returncode:
            self.skipTest("cannot mount a small tmpfs here (needs root): " + p.stderr.decode().strip())

    def tearDown(self):
        subprocess.run(["umount", self.mnt], capture_output=True)
        super().tearDown()

    def test_totals_survive_a_full_disk(self):
        data = os.path.join(self.mnt, "d.data")
        p = run([os.path.join(BUILD, "stress"), "2", "500000"],
                env={"WEFT_OPTIONS": f"output={data}:compression=0:chunk_size=64K"})
        m = re.match(r"emitted (\d+) written (\d+) dropped (\d+)", p.stdout)
        emitted, written, dropped = map(int, m.groups())
        self.assertEqual(written + dropped, emitted)
        self.assertGreater(dropped, 0)  # the disk did fill
        # one line for the failure, not one per chunk or per metadata record
        self.assertEqual(p.stderr, "weft: writing the trace failed (No space left on device): "
                                   "later events are dropped\n")
        info = run([WEFT, "info", data]).stdout
        self.assertNotIn("not finished", info)  # room was kept for the totals
        self.assertIn(f"recorded: {written} events, {dropped} dropped", info)
        self.assertIn("write failed: No space left on device", info)
        threads = re.findall(r'thread \d+ "stress": (\d+) events, (\d+) dropped', info)
        self.assertEqual(len(threads), 2)
        self.assertEqual([int(e) + int(d) for e, d in threads], [500000, 500000])  # per thread too
        self.assertNotIn("warning", info)  # no half-written chunk left behind
        c = run([WEFT, "convert", data, "-o", os.path.join(self.tmp, "d.pftrace")])
        self.assertIn(f"{written} events, {dropped} dropped", c.stderr)


if __name__ == "__main__":
    main()
