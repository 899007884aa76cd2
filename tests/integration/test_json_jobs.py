"""The Chrome JSON writer in parallel (src/export/json.c, json-events.c): the same trace gives
the same bytes whatever --jobs, in both styles; and the B/E style, whose first pass decodes only
the chunks that hold complete or async slices, arrows or named tracks (tests/programs/jsonmix.c
puts them between long runs of plain slices, in 8 KiB chunks), has every event the X style,
whose first pass reads every chunk, has. Merged in stages (WEFT_JSON_GROUP=1: a thread at a
time into runs of a spill file, as a job of more than 16 threads is), the bytes are the same."""
import json
import os
from weftlib import WEFT, TraceTest, main, run

ROUNDS, PLAIN = 12, 3000


def key(e):
    return json.dumps(e, sort_keys=True)


class JsonJobs(TraceTest):
    def setUp(self):
        super().setUp()
        self.data, _ = self.record("jsonmix", [ROUNDS, PLAIN], options="buffer_size=8K:overflow=block")

    def test_same_bytes_whatever_jobs(self):
        for style in ("be", "x"):
            outs = {}
            for jobs in (1, 2, 3, 8):
                path, _ = self.convert(self.data, f"t-{style}-{jobs}.json", f"--json-style={style}", "-j", str(jobs))
                with open(path, "rb") as f:
                    outs[jobs] = f.read()
            for jobs in (2, 3, 8):
                with self.subTest(style=style, jobs=jobs):
                    self.assertTrue(outs[jobs] == outs[1], f"--jobs {jobs} wrote other bytes than --jobs 1")
            # merged a thread at a time through the spill file (what a job of more than 16
            # threads gets), the X style's durations learnt a thread at a time: the same bytes
            for jobs in (1, 2):
                with self.subTest(style=style, stages=jobs):
                    path = os.path.join(self.tmp, f"s-{style}-{jobs}.json")
                    run([WEFT, "convert", self.data, "-o", path, f"--json-style={style}", "-j", str(jobs)],
                        env={"WEFT_JSON_GROUP": "1"})
                    with open(path, "rb") as f:
                        self.assertTrue(f.read() == outs[1], "the merge in stages wrote other bytes")

    def test_be_has_what_x_has(self):
        be = self.load_json(self.convert(self.data, "t-be.json", "--json-style=be")[0])
        x = self.load_json(self.convert(self.data, "t-x.json", "--json-style=x")[0])
        self.assertEqual(be["metadata"]["weft-dropped-events"], 0)
        bev, xev = be["traceEvents"], x["traceEvents"]
        # the same rows (lanes included: one per track and thread) and the same events that are
        # not slices (async slices, instants, flow events)
        self.assertEqual(sorted(key(e) for e in bev if e["ph"] == "M"), sorted(key(e) for e in xev if e["ph"] == "M"))
        lanes = [e["args"]["name"] for e in bev if e["ph"] == "M" and e.get("tid", 0) >= 0x40000000]
        self.assertEqual(sorted(n.split(" / ")[0] for n in lanes), ["lane", "lane", "marks", "marks"])
        other = lambda ev: sorted(key(e) for e in ev if e["ph"] not in ("B", "E", "X", "M"))
        self.assertTrue(other(bev) == other(xev), "the events that are not slices differ")
        # every slice's begin, with its arrows and arguments, in both
        strip = lambda e: {k: v for k, v in e.items() if k not in ("ph", "dur") and (k != "args" or v)}
        begins = sorted(key(strip(e)) for e in bev if e["ph"] == "B")
        xs = sorted(key(strip(e)) for e in xev if e["ph"] == "X")
        self.assertTrue(begins == xs, f"{len(set(begins) - set(xs))} slices only in B/E, e.g. "
                        f"{sorted(set(begins) - set(xs))[:3]}; {len(set(xs) - set(begins))} only in X")
        names = [e["name"] for e in bev if e["ph"] == "B"]
        self.assertEqual(names.count("given"), 2 * ROUNDS)
        self.assertEqual(names.count("on lane"), 2 * ROUNDS)
        self.assertEqual(names.count("plain"), 2 * ROUNDS * PLAIN)
        self.assertEqual(len([e for e in bev if e["ph"] == "b"]), 2 * ROUNDS)
        self.assertEqual(len([e for e in bev if e["ph"] == "B" and e["name"] == "handle" and "bind_id" in e]),
                         2 * ROUNDS)


if __name__ == "__main__":
    main()
