"""Damaged traces: cut short like after SIGKILL or a full disk, bytes flipped, files missing.
The tools warn in one line each, keep everything readable and still produce valid output."""
import glob
import os
import shutil
import signal
import subprocess
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
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        info = run([WEFT, "info", out]).stdout
        self.assertIn("[not finished: killed or still running]", info)
        self.assertGreater(self.count(out), 8000)  # at least one 8K chunk's worth
        pf, _ = self.convert(out, "k.pftrace")
        self.protoc_decode(pf)
        self.tp_no_errors(pf)


if __name__ == "__main__":
    main()
