"""weft estimate: a program of known call counts (tiny 1000 calls of nanoseconds, slow 10 of 2 ms,
once 1 of 20 ms, a slice `phase` with an argument 3 times, 5 instants, 4 counter values) is
recorded; the estimate's events per name are exact, its bytes per name sum exactly to the chunk
frames of the directory (read here from the files themselves) and with the metadata and headers to
the directory's size; rows come by bytes; the projection is the arithmetic docs/estimate.md gives
with the trace's own span (main's duration in trace_processor); the suggested filter names the
hot short function and not the long ones, and weft record takes it as printed: recorded again, the
function is gone and the others are all there. A trace cut in its last chunk is estimated from what
is left. Bad input: one line and the exit status of every command."""
import atexit
import json
import math
import os
import shlex
import shutil
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import BUILD, SRC, WEFT, main, run, sanitizer, tp_query  # noqa: E402

TMP = tempfile.mkdtemp(prefix="weft-estimate-")
atexit.register(shutil.rmtree, TMP, True)  # also where another test file imports this one

PROG = r"""
#include <weft.h>
#include <time.h>
static volatile long sink;
__attribute__((no_instrument_function)) static void nap(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}
__attribute__((noinline)) void tiny(int i) { sink += i; }
__attribute__((noinline)) void slow(int i) { nap(2000000); sink += i; }
__attribute__((noinline)) void once(void) { nap(20000000); }
int main(void)
{
	for (int i = 0; i < 1000; i++)
		tiny(i);
	for (int i = 0; i < 10; i++)
		slow(i);
	once();
	for (int i = 0; i < 3; i++) {
		WEFT_SCOPE("phase", WEFT_I("i", i));
		nap(1000000);
	}
	for (int i = 0; i < 5; i++)
		WEFT_INSTANT("tick");
	for (int i = 0; i < 4; i++)
		WEFT_COUNTER("depth", i);
	return 0;
}
"""

CXX_PROG = r"""
#include <ctime>
namespace ns {
static volatile long sink;
__attribute__((noinline)) void tiny(int i) { sink += i; }
template <class T> __attribute__((noinline)) T add(T a, T b) { return a + b; }
__attribute__((noinline)) void slow() { timespec ts = {0, 2000000}; nanosleep(&ts, nullptr); }
}
int main()
{
	for (int i = 0; i < 2000; i++) { ns::tiny(i); ns::add<long>(i, 1); }
	for (int i = 0; i < 5; i++) ns::slow();
	return 0;
}
"""

MEM_PROG = r"""
#include <stdlib.h>
int main(void)
{
	for (int i = 0; i < 300; i++)
		free(malloc(100 + i));
	return 0;
}
"""

ODD_PROG = r"""
#include <weft.h>
#include <time.h>
int main(void)
{
	for (int i = 0; i < 1000; i++) {
		{ WEFT_SCOPE("hot*[1]"); }
		{ WEFT_SCOPE("x,y:z"); }
		{ WEFT_SCOPE("it's"); }
	}
	for (int i = 0; i < 3; i++) {
		WEFT_SCOPE("hot*[2]");
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return 0;
}
"""

# name -> (kind, events, records, calls)
EXPECTED = {
    "tiny": ("function", 2000, 2000, 1000),
    "slow": ("function", 20, 20, 10),
    "once": ("function", 2, 2, 1),
    "main": ("function", 2, 2, 1),
    "phase": ("slice", 6, 9, 3),  # BEGIN, its argument, END
    "tick": ("instant", 5, 5, 0),
    "depth": ("counter", 4, 4, 0),
}


def san_flags():
    s = sanitizer()
    return [f"-fsanitize={s}"] if s else []


def build():
    src = os.path.join(TMP, "calls.c")
    exe = os.path.join(TMP, "calls")
    with open(src, "w") as f:
        f.write(PROG)
    run(["gcc", "-O0", "-g", "-finstrument-functions", "-I", os.path.join(SRC, "include"), src, "-o", exe,
         "-L", BUILD, "-lweft", "-Wl,-rpath," + BUILD] + san_flags())
    return exe


def frames(path, raw=False):
    """(events, frame bytes) of each complete chunk frame of an events file (raw: (events, raw
    bytes)), and the file's bytes after the last complete frame, read with struct from the
    format (docs/format.md)."""
    with open(path, "rb") as f:
        data = f.read()
    out, off = [], 32
    while off + 40 <= len(data):
        magic, _flags, _tid, raw_size, stored, _ck, _seq, events, _dropped = struct.unpack_from("<IIIIIIQII", data, off)
        if magic != 0x4B4E4843 or off + 40 + stored > len(data):
            break
        out.append((events, raw_size if raw else 40 + stored))
        off += 40 + stored
    return out, len(data) - off


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
class Estimate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exe = build()
        cls.dir = os.path.join(TMP, "t")
        # small chunks: several frames, so a cut one leaves others whole
        run([WEFT, "record", "-q", "-o", cls.dir, "--options", "chunk_size=4K", "--", cls.exe], cwd=TMP)
        cls.est = cls.estimate(cls.dir, "--max-ns-per-call", "50us", "--min-share", "0.5", "--for", "8h")

    @staticmethod
    def estimate(d, *args):
        p = run([WEFT, "estimate", "-f", "json", *args, d])
        return json.loads(p.stdout)

    def rows(self, est):
        return {r["name"]: r for r in est["rows"]}

    def test_exact_events_per_name(self):
        rows = self.rows(self.est)
        for name, (kind, events, records, calls) in EXPECTED.items():
            r = rows[name]
            self.assertEqual((r["kind"], r["events"], r["records"], r["calls"]), (kind, events, records, calls), r)
        self.assertEqual(set(rows), set(EXPECTED), self.est["rows"])
        # every event the chunks' headers count is in one row
        files = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.endswith(".wevents")]
        chunk_events = sum(e for f in files for e, _ in frames(f)[0])
        self.assertEqual(sum(r["events"] for r in self.est["rows"]), chunk_events)
        self.assertEqual(self.est["events"], chunk_events)

    def test_bytes_sum_to_the_directory(self):
        est = self.est
        files = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.endswith(".wevents")]
        chunk_bytes = sum(b for f in files for _, b in frames(f)[0])
        self.assertGreater(len([1 for f in files for _ in frames(f)[0]]), 2)
        self.assertEqual(sum(r["bytes"] for r in est["rows"]), chunk_bytes)
        self.assertEqual(est["chunk_bytes"], chunk_bytes)
        self.assertEqual(est["header_bytes"], 32 * len(files))
        meta = sum(os.path.getsize(os.path.join(self.dir, n)) for n in os.listdir(self.dir) if n.endswith(".wmeta"))
        self.assertEqual(est["meta_bytes"], meta)
        total = meta + sum(os.path.getsize(f) for f in files)
        self.assertEqual(est["file_bytes"], total)
        self.assertEqual((est["unread_bytes"], est["bad_chunk_bytes"]), (0, 0))
        self.assertEqual(est["file_bytes"], est["chunk_bytes"] + est["meta_bytes"] + est["header_bytes"])

    def test_ranking(self):
        b = [r["bytes"] for r in self.est["rows"]]
        self.assertEqual(b, sorted(b, reverse=True))
        self.assertEqual(self.est["rows"][0]["name"], "tiny")
        rows = self.rows(self.est)
        self.assertGreater(rows["tiny"]["bytes"], rows["slow"]["bytes"])
        # share: of the directory's bytes
        for r in self.est["rows"]:
            self.assertAlmostEqual(r["share_pct"], 100.0 * r["bytes"] / self.est["file_bytes"], places=3)

    def test_projection(self):
        est = self.est
        # the span is the trace's own: from main's entry to its exit, its first and last events
        q = tp_query(os.path.join(self.dir, "trace.pftrace"), "select dur from slice where name = 'main'")
        span = q[0]["rows"][0]["dur"]
        self.assertEqual(est["span_ns"], span)
        eight_h = 8 * 3600 * 10**9
        self.assertEqual(est["for_ns"], eight_h)
        fixed = est["meta_bytes"] + est["header_bytes"]
        self.assertEqual(est["projected_bytes"], fixed + est["chunk_bytes"] * eight_h // span)
        kept = est["chunk_bytes"] - self.rows(est)["tiny"]["bytes"]
        self.assertEqual(est["filter"]["projected_bytes"], fixed + kept * eight_h // span)
        # --for's units, and the text says the same number
        for arg, ns in (("90s", 90 * 10**9), ("30m", 1800 * 10**9), ("2d", 2 * 86400 * 10**9), ("1.5h", 5400 * 10**9)):
            e = self.estimate(self.dir, "--for", arg)
            self.assertEqual(e["projected_bytes"], fixed + est["chunk_bytes"] * ns // span, arg)
        text = run([WEFT, "estimate", "--for", "8h", self.dir]).stdout
        self.assertIn(f"Projected for 8 h: ", text)
        self.assertIn(f"({est['projected_bytes']} bytes)", text)

    def test_filter_suggested_and_accepted_by_record(self):
        f = self.est["filter"]
        self.assertEqual(f["names"], ["tiny"])
        self.assertEqual(f["args"], "-N 'tiny'")
        text = run([WEFT, "estimate", "--max-ns-per-call", "50us", "--min-share", "0.5", self.dir]).stdout
        line = [l for l in text.splitlines() if l.strip().startswith("weft record ")]
        self.assertEqual(line, ["  weft record -N 'tiny' -- PROGRAM"], text)
        # thresholds: a lower time per call or a higher share suggests nothing
        self.assertEqual(self.estimate(self.dir, "--max-ns-per-call", "0")["filter"]["names"], [])
        self.assertEqual(self.estimate(self.dir, "--min-share", "100")["filter"]["names"], [])
        # a long limit takes the long ones too, but never instants or counters
        wide = self.estimate(self.dir, "--max-ns-per-call", "1h", "--min-share", "0")["filter"]["names"]
        self.assertEqual(set(wide), {"tiny", "slow", "once", "main", "phase"})
        # recorded again with the suggestion as printed: tiny is gone, the rest is all there
        d2 = os.path.join(TMP, "filtered")
        args = shlex.split(line[0].strip())[2:-2]
        run([WEFT, "record", "-q", "-o", d2, *args, "--", self.exe], cwd=TMP)
        rows = self.rows(self.estimate(d2))
        self.assertNotIn("tiny", rows)
        for name, (kind, events, records, calls) in EXPECTED.items():
            if name != "tiny":
                self.assertEqual((rows[name]["events"], rows[name]["calls"]), (events, calls), name)
        q = tp_query(os.path.join(d2, "trace.pftrace"),
                     "select name, count(*) as n from slice where name in ('tiny','slow','once','main','phase') "
                     "group by name order by name")
        self.assertEqual([(r["name"], r["n"]) for r in q[0]["rows"]],
                         [("main", 1), ("once", 1), ("phase", 3), ("slow", 10)])

    @unittest.skipUnless(shutil.which("g++"), "g++ not installed")
    def test_cxx_filter_by_symbol(self):
        """C++ functions are named demangled; -N matches the mangled symbol: that is suggested"""
        src = os.path.join(TMP, "cx.cpp")
        exe = os.path.join(TMP, "cx")
        with open(src, "w") as f:
            f.write(CXX_PROG)
        run(["g++", "-O0", "-g", "-finstrument-functions", src, "-o", exe] + san_flags())
        d = os.path.join(TMP, "cx1")
        run([WEFT, "record", "-q", "-o", d, "--no-convert", "--", exe], cwd=TMP)
        est = self.estimate(d, "--max-ns-per-call", "50us", "--min-share", "0.5")
        rows = self.rows(est)
        self.assertEqual(rows["ns::tiny(int)"]["symbol"], "_ZN2ns4tinyEi")
        self.assertEqual(rows["long ns::add<long>(long, long)"]["events"], 4000)
        args = shlex.split(est["filter"]["args"])  # by bytes: the two are close, either may lead
        self.assertEqual(args[0::2], ["-N", "-N"])
        self.assertEqual(sorted(args[1::2]), ["_ZN2ns3addIlEET_S1_S1_", "_ZN2ns4tinyEi"])
        d2 = os.path.join(TMP, "cx2")
        run([WEFT, "record", "-q", "-o", d2, "--no-convert", *shlex.split(est["filter"]["args"]), "--", exe], cwd=TMP)
        rows2 = self.rows(self.estimate(d2))
        self.assertEqual({n: r["calls"] for n, r in rows2.items()}, {"ns::slow()": 5, "main": 1})

    def test_buffer(self):
        """docs/estimate.md's formula, from the JSON's own inputs; the raw bytes are the chunks'"""
        est = self.est
        files = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.endswith(".wevents")]
        raw = sum(b for f in files for _, b in frames(f, raw=True)[0])
        self.assertEqual(sum(r["raw_bytes"] for r in est["rows"]), raw)
        [p] = est["processes"]
        self.assertEqual(p["raw_bytes"], raw)
        self.assertEqual((p["chunk_size"], p["writers"], p["threads"]), (4096, 1, 1))
        rate = raw * 1e9 / est["span_ns"]
        self.assertAlmostEqual(p["raw_bytes_per_s"], rate, delta=rate * 1e-6)
        pace = p["writer_bytes_per_s"]
        self.assertGreater(pace, 0)  # 4K chunks: the writer handled more than 4 of them
        queue = math.ceil(rate / pace)
        need = 4096 * (1 + 1 + queue) + (max(0.0, rate - pace) * 8 * 3600 if rate > pace else 0)
        self.assertAlmostEqual(p["buffer_needed"], need, delta=need * 1e-6 + 1)
        self.assertEqual(p["writers_behind"], rate > pace)
        self.assertEqual(p["writers_needed"], max(1, queue))
        # -b of the recording: the default
        self.assertEqual(p["buffer_size"], 256 << 20)

    def test_kinds(self):
        kinds = {k["kind"]: (k["names"], k["events"]) for k in self.est["kinds"]}
        self.assertEqual(kinds, {"function": (4, 2024), "slice": (1, 6), "instant": (1, 5), "counter": (1, 4)})
        if sanitizer():
            return  # the sanitizer's allocator comes first: -m records no allocation
        # memory events by heap, counted exactly with their call stacks' records
        src = os.path.join(TMP, "mem.c")
        exe = os.path.join(TMP, "mem")
        with open(src, "w") as f:
            f.write(MEM_PROG)
        run(["gcc", "-O0", "-g", src, "-o", exe] + san_flags())
        d = os.path.join(TMP, "mem1")
        run([WEFT, "record", "-q", "-o", d, "--no-convert", "-m", "--", exe], cwd=TMP)
        est = self.estimate(d)
        rows = self.rows(est)
        self.assertEqual(rows["alloc: C heap"]["kind"], "memory")
        self.assertGreaterEqual(rows["alloc: C heap"]["events"], 300)
        self.assertGreaterEqual(rows["free: C heap"]["events"], 300)
        self.assertEqual(sum(r["bytes"] for r in est["rows"]), est["chunk_bytes"])
        files = [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".wevents")]
        self.assertEqual(est["events"], sum(e for f in files for e, _ in frames(f)[0]))
        info = run([WEFT, "info", d]).stdout
        self.assertIn(f"events:     {est['events']}\n", info)

    def test_filter_names_escaped(self):
        """slice names with glob characters, ',', ':' and a quote: the suggestion matches each
        exactly (escaped, '?' for what weft record's option string cannot hold, shell-quoted)"""
        src = os.path.join(TMP, "odd.c")
        exe = os.path.join(TMP, "odd")
        with open(src, "w") as f:
            f.write(ODD_PROG)
        run(["gcc", "-O0", "-g", "-I", os.path.join(SRC, "include"), src, "-o", exe,
             "-L", BUILD, "-lweft", "-Wl,-rpath," + BUILD] + san_flags())
        d = os.path.join(TMP, "odd1")
        run([WEFT, "record", "-q", "-o", d, "--no-convert", "--", exe], cwd=TMP)
        est = self.estimate(d, "--max-ns-per-call", "50us", "--min-share", "0.5")
        self.assertEqual(sorted(est["filter"]["names"]), sorted(["hot*[1]", "x,y:z", "it's"]))
        args = shlex.split(est["filter"]["args"])
        self.assertEqual(sorted(args[1::2]), sorted(["hot\\*\\[1]", "x?y?z", "it's"]))
        d2 = os.path.join(TMP, "odd2")
        run([WEFT, "record", "-q", "-o", d2, "--no-convert", *args, "--", exe], cwd=TMP)
        rows = self.rows(self.estimate(d2))
        self.assertEqual({n: r["calls"] for n, r in rows.items() if r["kind"] == "slice"}, {"hot*[2]": 3})

    def test_cut_trace(self):
        d = os.path.join(TMP, "cut")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(self.dir, d)
        os.unlink(os.path.join(d, "trace.pftrace"))
        ev = [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".wevents")]
        ev.sort(key=os.path.getsize)
        path = ev[-1]
        fr, _ = frames(path)
        whole = 32 + sum(b for _, b in fr[:-1])
        cut = whole + fr[-1][1] // 2  # in the middle of the last frame
        with open(path, "r+b") as f:
            f.truncate(cut)
        p = run([WEFT, "estimate", "-f", "json", d])
        est = json.loads(p.stdout)
        files = [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".wevents")]
        kept = [x for f in files for x in frames(f)[0]]
        self.assertEqual(est["chunk_bytes"], sum(b for _, b in kept))
        self.assertEqual(sum(r["bytes"] for r in est["rows"]), est["chunk_bytes"])
        self.assertEqual(est["events"], sum(e for e, _ in kept))
        self.assertEqual(sum(r["events"] for r in est["rows"]), est["events"])
        self.assertEqual(est["unread_bytes"], cut - whole)
        total = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith((".wmeta", ".wevents")))
        self.assertEqual(est["file_bytes"], total)
        self.assertLess(est["events"], self.est["events"])

    def test_damaged_chunk(self):
        """a chunk whose bytes were damaged (its checksum fails) is left out by the reader: its
        frame is counted unread, the rest exactly as before"""
        d = os.path.join(TMP, "damaged")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(self.dir, d)
        path = max((os.path.join(d, n) for n in os.listdir(d) if n.endswith(".wevents")), key=os.path.getsize)
        fr, _ = frames(path)
        at = 32 + sum(b for _, b in fr[:1])  # the second frame
        with open(path, "r+b") as f:
            f.seek(at + 40 + fr[1][1] // 2 - 20)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0xFF]))
        p = run([WEFT, "estimate", "-f", "json", d])
        self.assertIn("weft: estimate: warning:", p.stderr)
        est = json.loads(p.stdout)
        self.assertEqual(sum(r["bytes"] for r in est["rows"]), est["chunk_bytes"])
        self.assertEqual(est["chunk_bytes"] + est["unread_bytes"] + est["bad_chunk_bytes"], self.est["chunk_bytes"])
        self.assertEqual(est["unread_bytes"] + est["bad_chunk_bytes"], fr[1][1])
        self.assertEqual(est["events"], self.est["events"] - fr[1][0])
        self.assertEqual(est["file_bytes"], self.est["file_bytes"])

    def test_text_and_csv(self):
        text = run([WEFT, "estimate", self.dir]).stdout
        head = [l for l in text.splitlines() if l.lstrip().startswith("Events")]
        self.assertEqual(len(head), 1, text)
        self.assertIn("function  tiny", text)
        csv = run([WEFT, "estimate", "-f", "csv", "--max-ns-per-call", "50us", "--min-share", "0.5", self.dir]).stdout
        lines = csv.splitlines()
        self.assertEqual(lines[0], "kind,name,events,records,bytes,share_pct,raw_bytes,calls,ns_per_call,suggested")
        by = {l.split(",")[1]: l.split(",") for l in lines[1:]}
        self.assertEqual(by['"tiny"'][2], "2000")
        self.assertEqual(by['"tiny"'][-1], "1")
        self.assertEqual(by['"slow"'][-1], "0")
        self.assertEqual(sum(int(v[4]) for v in by.values()), self.est["chunk_bytes"])

    def test_bad_input(self):
        nodir = os.path.join(TMP, "no-such-dir")
        empty = os.path.join(TMP, "empty")
        os.makedirs(empty, exist_ok=True)
        for args, rc in (([nodir], 1), ([empty], 1), (["--for", "soon", self.dir], 2), (["--for", "-3h", self.dir], 2),
                         (["--for", "0", self.dir], 2), (["--max-ns-per-call", "fast", self.dir], 2),
                         (["--min-share", "200", self.dir], 2), (["-f", "xml", self.dir], 2),
                         (["--bogus", self.dir], 2), ([self.dir, self.dir], 2)):
            p = run([WEFT, "estimate", *args], check=False)
            self.assertEqual(p.returncode, rc, (args, p.stderr))
            self.assertEqual(p.stdout, "", args)
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, (args, p.stderr))
            self.assertTrue(lines[0].startswith("weft: estimate: "), lines)
        for args, err in (([nodir], f"weft: estimate: {nodir}: No such file or directory\n"),
                          (["--for", "soon", self.dir],
                           "weft: estimate: --for takes a duration such as 90s, 30m, 8h or 2d, not 'soon'\n"),
                          (["-f", "xml", self.dir], "weft: estimate: unknown format 'xml' (valid: text, csv, json)\n")):
            self.assertEqual(run([WEFT, "estimate", *args], check=False).stderr, err)
        p = run([WEFT, "estimate"], check=False, cwd=empty)  # weft.data by default, like report
        self.assertEqual((p.returncode, p.stderr), (1, "weft: estimate: weft.data: No such file or directory\n"))
        self.assertIn("usage: weft estimate", run([WEFT, "help", "estimate"]).stdout)
        self.assertIn("estimate", run([WEFT, "--help"]).stdout)


if __name__ == "__main__":
    main()
