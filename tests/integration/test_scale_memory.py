"""Issue 29 item 3: a reader's memory follows a window of the trace, not the number of ranks.

A 4-rank MPICH job of tests/mpi/mpi_app.c is recorded once and cloned into 64 and 512 ranks
(bench/mpi/gen_ranks.py: each rank a byte-for-byte copy of a recorded one, its metadata a real
rank's: about 30 KB of memory map, ~60 KB of events). Each reading command runs on both, and the
peak RSS it adds per extra rank (the kernel's ru_maxrss of that child, os.wait4) must stay
under 48 KiB, about half of what a rank's files hold (what is left: the process's tables, its
map compressed, its decoding buffers). Before: every metadata file was held
whole while all were read (~32 KB a rank), each map as text (~29 KB), the small events files in
the heap (~22 KB), `weft info`'s message check kept every slice of the trace (about 1 MB a rank
here). Also checked: the outputs do not change with the reading (the 320-rank .pftrace is read
by trace_processor with 320 processes), and `weft plot mpi` draws a job of over 80 ranks (its
rank labels' step once never ended). Chrome JSON, merged by time, held every thread's current
chunk formatted (2 MB and more a rank); it merges 16 threads at a time through a spill file
since, with the same bytes, and says so in one line when that file cannot be written."""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import SRC, WEFT, TraceTest, main, mpich_app_job, run  # noqa: E402

GEN = os.path.join(SRC, "bench", "mpi", "gen_ranks.py")
SMALL, LARGE = 64, 512  # powers of two: the tables that double are full at both
JSON_PER_RANK_KB = 128  # Chrome JSON's merge (test_json_per_rank says why apart)
PER_RANK_KB = 48  # measured 21-28 KiB a rank since (64 to 1,024 ranks), 85-103 before (info: 995)


def peak_kib(cmd, cwd):
    """Runs cmd; returns (exit status, its peak RSS in KiB, stderr)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss, err


@unittest.skipUnless(shutil.which("mpicc.mpich") and shutil.which("mpirun.mpich"),
                     "MPICH not installed (mpich, libmpich-dev)")
class ScaleMemory(TraceTest):
    @classmethod
    def setUpClass(cls):
        g4 = mpich_app_job(cls, "weft-scale-", "G4")  # (skips under a sanitizer)
        for n in (SMALL, LARGE):
            run(["/usr/bin/python3", GEN, g4, str(n), os.path.join(cls.dir, f"G{n}"), "--per-host", "4"])

    def per_rank(self, *args, out=None, tries=1):
        """KiB of peak RSS each rank past SMALL adds to `weft ARGS G{n}` (-o out.N when out); with
        tries, the smallest peak of that many runs of each."""
        peaks = {}
        for n in (SMALL, LARGE):
            dest = out if out and out.startswith("/dev/") else f"{out}.{n}"  # (a device: written through)
            cmd = [WEFT, *args, f"G{n}"] + (["-o", dest] if out else [])
            for _ in range(tries):
                rc, kib, err = peak_kib(cmd, self.dir)
                self.assertEqual(rc, 0, (cmd, err))
                peaks[n] = min(kib, peaks.get(n, kib))
        return (peaks[LARGE] - peaks[SMALL]) / (LARGE - SMALL), peaks

    # conversions with one encoding thread: with more, how many encoded threads wait for their
    # turn in the output depends on the scheduling (up to 48 KiB a rank measured under ctest -j3
    # against 25-30 on a quiet machine); the reader's share does not. (Two methods: the shards
    # of this test take every other method, and these are its longest.)
    def readers(self, *commands):
        for args, out in commands:
            with self.subTest(args=args):
                kb, peaks = self.per_rank(*args, out=out)
                self.assertLess(kb, PER_RANK_KB, f"weft {' '.join(args)}: {kb:.1f} KiB a rank ({peaks})")

    def test_readers_per_rank(self):
        self.readers((["convert", "-j1"], "c.pftrace"), (["info"], None), (["report"], None),
                     (["convert", "-j1", "--ranks", "0-15"], "r.pftrace"))

    def test_readers_per_rank_more(self):
        self.readers((["report", "--mpi"], None), (["estimate"], None), (["export", "--otf2"], "o.otf2"))

    def test_time_window_per_rank(self):
        # `convert --time`: every thread's head chunk (the slices open at FROM, then its chunk's
        # records from FROM on) is held for the conversion; stored packed and compressed as a
        # writer's chunk since 2026-12-07, 49 KiB a rank here, against 518 when it was held as
        # plain records (16 bytes each)
        info = run([WEFT, "info", os.path.join(self.dir, f"G{SMALL}")]).stdout
        half = float(re.search(r"^span:\s+([\d.]+) s", info, re.M).group(1)) / 2  # FROM mid-run
        kb, peaks = self.per_rank("convert", "-j1", "--time", f"{half:.6f}:", out="t.pftrace")
        self.assertLess(kb, 2 * PER_RANK_KB, f"weft convert --time: {kb:.1f} KiB a rank ({peaks})")

    def test_output_whole(self):
        # the files read one at a time, the maps kept compressed: nothing of the job is lost
        out = os.path.join(self.tmp, "all.pftrace")
        run([WEFT, "convert", "-q", os.path.join(self.dir, f"G{LARGE}"), "-o", out])
        info = run([WEFT, "info", os.path.join(self.dir, f"G{LARGE}")]).stdout
        self.assertIn(f"processes:  {LARGE}\n", info)
        self.assertEqual(len(re.findall(r"^  \d+ mpi_app rank \d+ ", info, re.M)), LARGE)  # the tree
        self.assertEqual(len(re.findall(r'^process \d+ "mpi_app rank \d+ ', info, re.M)), LARGE)  # the details
        try:
            procs, with_slices = self.tp(out, "select count(*) as n from process where pid >= 100000",
                                         "select count(distinct upid) as n from thread_track t join slice s "
                                         "on s.track_id = t.id join thread using(utid)")
        except AssertionError as e:
            # Debian 12's node 18 (the pristine-root stage): its trace_processor's wasm heap
            # could not hold this trace, twice, where node 20 reads it (weftlib retries once)
            if "Out of memory" not in str(e):
                raise
            node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
            self.skipTest(f"trace_processor (wasm, node {node}) ran out of memory reading the {LARGE}-rank trace")
        self.assertEqual(procs[0]["n"], LARGE)
        self.assertEqual(with_slices[0]["n"], LARGE)

    def test_json_per_rank(self):
        # Chrome JSON merges every thread by time: it held each thread's current chunk formatted
        # twice over, about 2 MB a rank here (2.2 GiB at 1,024 ranks); since 2026-12-07 it merges
        # 16 threads at a time into sorted runs of a spill file, then the runs
        # (the X style, whose durations are learnt a group at a time too, is the B/E style's
        # merge: test_json_stages_same_bytes compares its stages; to /dev/null: the 512 ranks'
        # JSON is 650 MB, which only the disk would feel)
        # (twice each, the smaller peak; and a bound of its own: quiet runs measure 30 KiB a
        # rank (48 and 62 MiB), but loaded CI runs measured 60 and 78 KiB a rank, their peaks
        # up to twice the quiet ones at both sizes, for a cause not found yet. The merge held
        # 3,618 KiB a rank before it was bounded: 128 still tells the two apart.)
        kb, peaks = self.per_rank("convert", "-j1", "-f", "json", out="/dev/null", tries=2)
        self.assertLess(kb, JSON_PER_RANK_KB, f"weft convert -f json: {kb:.1f} KiB a rank ({peaks})")

    def test_json_stages_same_bytes(self):
        # the merge in stages writes what the one-stage merge writes, byte for byte: equal
        # timestamps go out in thread order either way; without a spill file (TMPDIR not
        # writable) the one-stage merge is what runs
        src = os.path.join(self.dir, f"G{SMALL}")
        for style in ("x", "be"):
            outs = {}
            variants = (("one", {"WEFT_JSON_GROUP": "100000"}), ("stages", {}), ("by3", {"WEFT_JSON_GROUP": "3"}),
                        ("nospill", {"TMPDIR": os.path.join(self.tmp, "absent")}))
            for name, env in variants if style == "be" else variants[:2]:
                out = os.path.join(self.tmp, f"{name}.json")
                run([WEFT, "convert", "-q", "-j2", "--json-style", style, src, "-o", out], env=env)
                with open(out, "rb") as f:
                    outs[name] = f.read()
            for name in outs:
                self.assertTrue(outs[name] == outs["one"], f"--json-style {style}: {name} wrote other bytes")
        doc = json.loads(outs["stages"])
        ev = doc["traceEvents"]
        ts = [e["ts"] for e in ev if e["ph"] != "M"]
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(len({e["pid"] for e in ev if e["ph"] == "B"}), SMALL)
        self.assertEqual(sum(e["ph"] == "B" for e in ev), sum(e["ph"] == "E" for e in ev))
        info = run([WEFT, "info", src]).stdout
        events = int(re.search(r"^events:\s+(\d+)", info, re.M).group(1))
        self.assertEqual(sum(e["ph"] in "BEiIXC" for e in ev), events)  # every event, once

    def test_json_spill_fails(self):
        # the spill file cannot grow (a 1 KiB file size limit; it takes some KB at least): one
        # line that says why and a failing status. (The output goes to /dev/null, which the
        # limit does not apply to: a JSON of many ranks can compress 100 times, and a regular
        # output file would meet the limit first, once the runs are merged.)
        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 10, 1 << 10))
        p = subprocess.run([WEFT, "convert", "-q", "-f", "json", os.path.join(self.dir, f"G{SMALL}"), "-o", "/dev/null"],
                           preexec_fn=limited, capture_output=True, text=True, timeout=240)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, "weft: convert: merging the threads through a spill file in "
                         f"{os.environ.get('TMPDIR') or '/tmp'} failed: File too large\n")

    def test_plot_many_ranks(self):
        png = os.path.join(self.tmp, "mpi.png")
        p = run([WEFT, "plot", "mpi", os.path.join(self.dir, f"G{SMALL}"), "-o", png], timeout=120)
        self.assertEqual(p.returncode, 0)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    main()
