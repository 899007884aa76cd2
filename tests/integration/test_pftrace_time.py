""".pftrace timestamps: each thread's sequence runs an incremental clock (a sequence-scoped
clock, as the Perfetto SDK writes), so its events carry the delta from the previous event, not
the absolute time; a time out of order on a sequence (a complete slice's end, then events
inside it) is written whole on BOOTTIME. What trace_processor reads back must be the recorded
times exactly: compared with the Chrome JSON of the same directory (an independent writer)."""
import collections
import os
import re
from weftlib import BUILD, SRC, WEFT, TraceTest, main, run, sanitizer

# complete slices whose range began before the event written just before them and ends after
# the ones written just after them: both ends out of order on the thread's sequence
AROUND = r'''
#include <weft.h>
int main(void)
{
	for (int k = 0; k < 20; k++) {
		uint64_t t0 = weft_now_ns();
		WEFT_BEGIN("before");
		WEFT_END("before");
		uint64_t t1 = weft_now_ns();
		/* (1 us before: a start equal to before's would tie with it on the timeline, and
		 * trace_processor nests the later-written of two slices that begin together inside
		 * the other; before's time, converted from ticks, can come out 1-2 ns before t0) */
		WEFT_COMPLETE("around", t0 - 1000, t1 + 200000);
		WEFT_INSTANT("inside");
		WEFT_BEGIN("after");
		WEFT_END("after");
		while (weft_now_ns() < t1 + 300000)
			;
	}
	return 0;
}
'''


def thread_sequences(text):
    """protoc text -> {sequence id: [packet text]}, for the sequences that hold track events"""
    seqs = collections.defaultdict(list)
    for pk in text.split("\npacket {")[1:]:
        m = re.search(r"\n  trusted_packet_sequence_id: (\d+)\n", pk)
        if m:
            seqs[int(m.group(1))].append(pk)
    return {s: p for s, p in seqs.items() if any("\n  track_event {" in x for x in p)}


class PftraceTime(TraceTest):
    def slices(self, trace):
        rows, = self.tp(trace, "select ts, dur, name from slice order by ts, name, dur")
        return [(r["ts"], r["dur"], r["name"]) for r in rows]

    def same_times_as_json(self, data):
        pf, _ = self.convert(data, "t.pftrace")
        js, _ = self.convert(data, "t.json")
        self.tp_no_errors(pf)
        got, want = self.slices(pf), self.slices(js)
        both = {x[2] for x in got} & {x[2] for x in want}  # (the .pftrace has some of its own)
        self.assertGreater(len(both), 0)
        self.assertEqual([x for x in got if x[2] in both], [x for x in want if x[2] in both])
        return pf

    def test_events_carry_deltas_on_the_sequence_clock(self):
        data, _ = self.record("stress", [2, 2000])
        pf, _ = self.convert(data, "t.pftrace")
        text = self.protoc_decode(pf)
        if text is None:
            self.skipTest("Perfetto schema absent (../shared/perfetto)")
        seqs = thread_sequences(text)
        self.assertGreaterEqual(len(seqs), 2)
        for seq, packets in seqs.items():
            # the first packet clears the state and makes clock 64 the default; the second
            # starts that clock, incremental, at the trace's start on BOOTTIME
            self.assertIn("sequence_flags: 1\n", packets[0])
            self.assertRegex(packets[0], r"trace_packet_defaults \{\n(    .*\n)*    timestamp_clock_id: 64\n")
            self.assertRegex(packets[1], r"clock_snapshot \{\n    clocks \{\n      clock_id: 6\n      timestamp: (\d+)\n"
                                         r"    \}\n    clocks \{\n      clock_id: 64\n      timestamp: \1\n"
                                         r"      is_incremental: true\n")
            ts = [int(m) for pk in packets if "\n  track_event {" in pk
                  for m in re.findall(r"\n  timestamp: (\d+)\n", pk)]
            self.assertGreaterEqual(len(ts), 2000)
            # deltas: small (an event or two apart), but for the first, from the trace's start
            self.assertLess(max(ts[1:]), 10**9, seq)
        # and they add up to the times recorded
        js, _ = self.convert(data, "t.json")
        self.assertEqual(self.slices(pf), self.slices(js))

    def test_times_out_of_order(self):
        src, exe = os.path.join(self.tmp, "around.c"), os.path.join(self.tmp, "around")
        with open(src, "w") as f:
            f.write(AROUND)
        san = sanitizer()  # a sanitizer build's libweft needs its runtime in the program too
        run(["cc", "-O1", *([f"-fsanitize={san}"] if san else []), "-I", os.path.join(SRC, "include"), src,
             "-o", exe, "-L", BUILD, "-lweft",
             "-Wl,-rpath," + BUILD])
        data = os.path.join(self.tmp, "a.data")
        run([exe], env={"WEFT_OPTIONS": f"output={data}"}, cwd=self.tmp)
        pf = self.same_times_as_json(data)
        rows, = self.tp(pf, "select name, count(*) n from slice group by name order by name")
        self.assertEqual([(r["name"], r["n"]) for r in rows],
                         [("after", 20), ("around", 20), ("before", 20), ("inside", 20)])
        text = self.protoc_decode(pf)
        if text is None:
            return
        # replay each sequence's clock: an event written whole on BOOTTIME must be one earlier
        # than the clock (which it leaves alone); any other advances it by its delta. In each
        # round the complete slice's begin (before "before" ended) is always out of order; the
        # three events after its end are too unless the program was held up past it (a loaded
        # or sanitized run), so those are not counted on
        whole = 0
        for packets in thread_sequences(text).values():
            clk = int(re.search(r"clock_id: 64\n      timestamp: (\d+)\n", packets[1]).group(1))
            for pk in packets[2:]:
                if "\n  track_event {" not in pk:
                    continue
                ts = int(re.search(r"\n  timestamp: (\d+)\n", pk).group(1))
                if "\n  timestamp_clock_id: 6\n" in pk:
                    self.assertLess(ts, clk, pk)
                    whole += 1
                else:
                    clk += ts
        self.assertGreaterEqual(whole, 20)
        self.assertLessEqual(whole, 4 * 20)

    def test_features(self):
        # lanes, async slices, instants, counters, flows, args, an unwound and an unterminated
        # slice, a complete one, a forked child
        data, _ = self.record("features")
        pf = self.same_times_as_json(data)
        counters, = self.tp(pf, "select count(*) n from counter")
        self.assertGreater(counters[0]["n"], 0)

    def test_pipeline_threads(self):
        data, _ = self.record("pipeline", [3, 20, 2])
        self.same_times_as_json(data)

    def test_memory_trace(self):
        data = os.path.join(self.tmp, "m.data")
        run([WEFT, "record", "-q", "-o", data, "--memory", "--", os.path.join(BUILD, "memtest")], cwd=self.tmp)
        self.same_times_as_json(data)


if __name__ == "__main__":
    main()
