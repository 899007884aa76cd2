"""4 threads x 1M events through a deliberately small buffer: every event is either written
or counted as dropped, exactly; with overflow=block none is dropped."""
import os
import re
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

THREADS, EVENTS = 4, 1_000_000


def info_numbers(text):
    events = int(re.search(r"^events:\s+(\d+)", text, re.M).group(1))
    dropped = int(re.search(r"^dropped:\s+(\d+)", text, re.M).group(1))
    return events, dropped


class Stress(TraceTest):
    def check(self, options, expect_drops, mode=None):
        data, p = self.record("stress", [THREADS, EVENTS] + ([0, mode] if mode else []), options=options)
        emitted, written, dropped = map(int, re.match(r"emitted (\d+) written (\d+) dropped (\d+)",
                                                      p.stdout).groups())
        self.assertEqual(emitted, THREADS * EVENTS)
        self.assertEqual(written + dropped, emitted)   # the runtime's own count
        info = run([WEFT, "info", data]).stdout
        events, drops = info_numbers(info)             # what the trace holds
        self.assertEqual(events, written)
        self.assertEqual(drops, dropped)
        self.assertEqual(events + drops, emitted)
        if expect_drops:
            self.assertGreater(drops, 0, "the small buffer was expected to overflow")
            # drops are visible in the converted trace too
            pf, c = self.convert(data, "s.pftrace")
            self.assertIn(f"{drops} dropped", c.stderr)
            rows, = self.tp(pf, "select sum(a.int_value) n from slice s join args a using(arg_set_id) "
                                "where s.name = 'weft: events dropped' and a.key = 'debug.dropped_events'")
            markers = rows[0]["n"] or 0
            # a thread's drops after its last chunk are only in THREAD_END (not as a marker)
            self.assertLessEqual(markers, drops)
        else:
            self.assertEqual(drops, 0)

    def test_drop_and_count(self):
        self.check("buffer_size=64K:chunk_size=16K", expect_drops=True)

    def test_memory_records_drop_and_count(self):
        # allocation records (weft_heap_alloc/free) through the same small buffer
        self.check("buffer_size=64K:chunk_size=16K", expect_drops=True, mode="heap")

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    @unittest.skipIf(sanitizer(), "sanitizer builds have no allocation interposer")
    def test_interposed_mallocs_drop_and_count(self):
        data = os.path.join(self.tmp, "m.data")
        p = run([WEFT, "record", "-q", "-o", data, "--memory", "-b", "64K", "--options", "chunk_size=16K", "--",
                 os.path.join(BUILD, "stress"), str(THREADS), str(EVENTS // 4), "0", "malloc"], cwd=self.tmp)
        emitted, written, dropped = map(int, re.match(r"emitted (\d+) written (\d+) dropped (\d+)",
                                                      p.stdout).groups())
        # the runtime also saw libc's own allocations (thread creation): a few more
        self.assertGreaterEqual(written + dropped, emitted)
        self.assertLess(written + dropped, emitted + 100)
        self.assertGreater(dropped, 0, "the small buffer was expected to overflow")
        events, drops = info_numbers(run([WEFT, "info", data]).stdout)
        self.assertEqual((events, drops), (written, dropped))
        report = run([WEFT, "report", "--memory", data]).stdout
        self.assertIn(f"{dropped} events were dropped", report)

    def test_block_loses_nothing(self):
        self.check("buffer_size=64K:chunk_size=16K:overflow=block", expect_drops=False)


if __name__ == "__main__":
    main()
