"""weft_stop() with threads still emitting, and a start that fails: every emitted event is
written, dropped or counted after_stop - exactly (tests/programs/stopper.c counts its own)."""
import os
import re
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


if __name__ == "__main__":
    main()
