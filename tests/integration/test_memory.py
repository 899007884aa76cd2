"""Memory: `weft record --memory` on programs whose allocations are known exactly
(tests/memory/memtest.c, memtest_cpp.cpp). Every figure is asserted three ways: weft report
--memory (csv and json), the .pftrace read back by trace_processor (slice args, counters, the
heap profile, the large-allocation instant) and protoc against Perfetto's schema. Sampled
accesses (tests/memory/touch.c) as counters per allocation site, against the SQLite export's join."""
import glob
import json
import os
import signal
import re
import sqlite3
import subprocess
import unittest
import weftlib
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

PAGE = os.sysconf("SC_PAGE_SIZE")
PLUGIN = os.path.join(BUILD, "libmemplugin.so")

# slice -> (allocations, bytes, frees of its blocks, freed bytes, leaked bytes, temporary)
C_EXPECT = {
    "temp_allocs": (10, 640, 10, 640, 0, 10),
    "leak_known": (1, 4096, 0, 0, 4096, 0),
    "realloc_chain": (3, 1110, 3, 1110, 0, 3),
    "every_function": (7, 100 + 128 + 256 + 512 + 100 + PAGE + 100, 7, 100 + 128 + 256 + 512 + 100 + PAGE + 100, 0, 1),
    "worker": (100, 3200, 100, 3200, 0, 4),
    "produce": (5, 1000, 5, 1000, 0, 1),
    "big_block": (1, 2 << 20, 1, 2 << 20, 0, 1),
    "plugin_alloc": (1, 333, 1, 333, 0, 1),
}


class PoolCounters:
    def counter_max(self, pf):
        """The pool's counters (memtest_cpp) checked in the .pftrace; every counter's maximum."""
        self.tp_no_errors(pf)
        counters, = self.tp(pf, "select t.name, max(c.value) mx from counter_track t join counter c "
                                "on c.track_id = t.id group by t.name")
        c = {r["name"]: r["mx"] for r in counters}
        self.assertEqual(c["heap live bytes: pool"], 768)
        self.assertEqual(c["pool reported requested bytes"], 4096)
        return c


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
@unittest.skipIf(sanitizer(), "sanitizer builds have no allocation interposer (they intercept malloc)")
class Memory(TraceTest, PoolCounters):
    def record_mem(self, prog, *args, memory="--memory"):
        data = os.path.join(self.tmp, "m.data")
        run([WEFT, "record", "-q", "-o", data, memory, "--", os.path.join(BUILD, prog), *args], cwd=self.tmp)
        return data

    def report_rows(self, data):
        out = run([WEFT, "report", "--memory", "--format=csv", data]).stdout.splitlines()
        self.assertEqual(out[0], "pid,heap,slice,allocs,bytes,frees,freed_bytes,peak_bytes,leaked_bytes,"
                                 "leaked_blocks,temporary,avg_bytes")
        rows = {}
        for line in out[1:]:
            m = re.match(r'(\d+),"([^"]*)","(.*)",(\d+),(\d+),(\d+),(\d+),(\d+),(\d+),(\d+),(\d+),(\d+)$', line)
            self.assertIsNotNone(m, line)
            pid, heap, name = int(m.group(1)), m.group(2), m.group(3)
            rows[(pid, heap, name)] = tuple(int(x) for x in m.groups()[3:])
        return rows

    def report_json(self, data, *extra):
        return json.loads(run([WEFT, "report", "--memory", "--format=json", *extra, data]).stdout)

    def test_c_program_exact_per_function(self):
        data = self.record_mem("memtest", PLUGIN)
        rows = self.report_rows(data)
        procs = sorted({pid for pid, _, _ in rows})
        self.assertEqual(len(procs), 2, rows)  # the program and its fork child
        parent, child = procs
        for name, (allocs, nbytes, frees, freed, leaked, temp) in C_EXPECT.items():
            with self.subTest(slice=name):
                r = rows[(parent, "malloc", name)]
                self.assertEqual((r[0], r[1], r[2], r[3], r[5], r[7]), (allocs, nbytes, frees, freed, leaked, temp))
                self.assertEqual(r[8], nbytes // allocs)  # average
        # frees happen where the block is freed, charged to where it was allocated
        self.assertNotIn((parent, "malloc", "consume"), rows)
        # the fork child traces into its own stream
        self.assertEqual(rows[(child, "malloc", "child_work")][:4], (3, 150, 3, 150))
        # anonymous mmap on its own heap
        self.assertEqual(rows[(parent, "mmap", "map_anon")][:4], (1, 1 << 20, 1, 1 << 20))
        doc = self.report_json(data, "--leaks")
        p = next(d for d in doc if d["pid"] == parent)
        heap = next(h for h in p["heaps"] if h["heap"] == "malloc")
        self.assertEqual(heap["unknown_frees"], 0)
        self.assertEqual(heap["missed_frees"], 0)
        # the peak is the 2 MiB block plus what was live then (the 4 KiB leak among it)
        self.assertGreaterEqual(heap["peak_bytes"], (2 << 20) + 4096)
        leak = [l for l in heap["leaks"] if l["stack"].endswith("leak_known")]
        self.assertEqual([(l["size"], l["stack"]) for l in leak], [(4096, "main > leak_known")])
        # every leaked byte is in the leak list
        self.assertEqual(sum(l["size"] for l in heap["leaks"]), heap["leaked_bytes"])
        hist = {h["min"]: h["count"] for h in p["histogram"]}
        self.assertGreaterEqual(hist[32], 100)
        self.assertEqual(hist[1 << 21], 1)  # the 2 MiB block

        # the same figures in the .pftrace, read by trace_processor
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        self.protoc_decode(pf)
        args, counters, big, prof = self.tp(
            pf,
            "select s.name, a.key, a.int_value v from slice s join args a using(arg_set_id) "
            "where a.key like 'debug.mem%' and s.name in ('temp_allocs', 'consume', 'produce', 'leak_known')",
            "select t.name, max(c.value) mx, (select c2.value from counter c2 where c2.track_id = t.id "
            "order by c2.ts desc limit 1) last from counter_track t join counter c on c.track_id = t.id "
            "join process_counter_track pct on pct.id = t.id join process p using(upid) "
            f"where p.pid = {parent} group by t.id",
            "select s.name, a.key, a.int_value v, p.name parent from slice s join args a using(arg_set_id) "
            "join slice p on s.parent_id = p.id where s.name = 'large allocation' and a.key = 'debug.size'",
            "select heap_name, sum(case when size > 0 then size else 0 end) alloc, "
            "sum(case when count > 0 then count else 0 end) n, sum(size) net from heap_profile_allocation "
            f"join process using(upid) where pid = {parent} group by heap_name")
        a = {(r["name"], r["key"]): r["v"] for r in args}
        self.assertEqual(a[("temp_allocs", "debug.mem_alloc_count")], 10)
        self.assertEqual(a[("temp_allocs", "debug.mem_alloc_bytes")], 640)
        self.assertEqual(a[("temp_allocs", "debug.mem_free_count")], 10)
        self.assertEqual(a[("temp_allocs", "debug.mem_freed_bytes")], 640)
        self.assertEqual(a[("produce", "debug.mem_alloc_bytes")], 1000)
        self.assertNotIn(("produce", "debug.mem_free_count"), a)  # freed elsewhere
        self.assertEqual(a[("consume", "debug.mem_freed_bytes")], 1000)
        self.assertEqual(a[("consume", "debug.mem_free_count")], 5)
        self.assertNotIn(("consume", "debug.mem_alloc_count"), a)
        self.assertEqual(a[("leak_known", "debug.mem_alloc_bytes")], 4096)
        c = {r["name"]: (r["mx"], r["last"]) for r in counters}
        self.assertEqual(c["heap peak bytes"][0], heap["peak_bytes"])
        self.assertEqual(c["heap live bytes"][1], heap["leaked_bytes"])  # what is left at the end
        self.assertEqual(c["heap live bytes: mmap"], (1 << 20, 0))
        # allocations of 1 MiB or more are instants too (the mapping of map_anon as well)
        self.assertEqual(sorted((r["parent"], r["v"]) for r in big), [("big_block", 2 << 20), ("map_anon", 1 << 20)])
        prof = {r["heap_name"]: r for r in prof}
        self.assertEqual(prof["libc.malloc"]["alloc"], heap["alloc_bytes"])
        self.assertEqual(prof["libc.malloc"]["n"], heap["allocs"])
        self.assertEqual(prof["libc.malloc"]["net"], heap["leaked_bytes"])
        # a lower threshold for the instants: the 4 KiB leak and the pvalloc'd page too
        pf4, _ = self.convert(data, "4k.pftrace", "--large-alloc", "4K")
        big4, = self.tp(pf4, "select p.name parent, a.int_value v from slice s join args a using(arg_set_id) "
                             "join slice p on s.parent_id = p.id where s.name = 'large allocation' "
                             "and a.key = 'debug.size'")
        got = sorted((r["parent"], r["v"]) for r in big4)
        self.assertIn(("leak_known", 4096), got)
        self.assertIn(("every_function", PAGE), got)
        self.assertIn(("big_block", 2 << 20), got)
        p = run([WEFT, "convert", data, "-o", os.path.join(self.tmp, "x.pftrace"), "--large-alloc", "0"], check=False)
        self.assertEqual(p.returncode, 2)
        # the flame graph's frames are the slice stacks: leak_known under main
        frames, = self.tp(pf, "select f.name from stack_profile_frame f join stack_profile_callsite c "
                              "on c.frame_id = f.id where c.depth = 1 and f.name = 'leak_known'")
        self.assertEqual(len(frames), 1)

    def test_cxx_new_delete_and_named_heap(self):
        data = self.record_mem("memtest_cpp")
        rows = self.report_rows(data)
        (pid,) = {p for p, _, _ in rows}
        self.assertEqual(rows[(pid, "malloc", "new_one()")][:4], (1, 4, 1, 4))
        self.assertEqual(rows[(pid, "malloc", "new_array()")][:4], (1, 1000, 1, 1000))
        self.assertEqual(rows[(pid, "malloc", "new_aligned()")][:4], (1, 128, 1, 128))  # aligned new
        pool = rows[(pid, "pool", "Pool::get()")]
        self.assertEqual((pool[0], pool[1], pool[2], pool[3], pool[5], pool[6]), (3, 768, 2, 512, 256, 1))
        doc = self.report_json(data)
        for h in doc[0]["heaps"]:
            self.assertEqual(h["unknown_frees"], 0, h["heap"])
        c = self.counter_max(os.path.join(data, "trace.pftrace"))
        self.assertEqual(c["pool reported cached bytes"], 4096 - 256)

    def test_fork_child_charges_its_inherited_slices(self):
        # the child allocates in spawn (open in the parent at the fork), returns to main (open
        # too) and allocates there, then in own_work: each charged to its slice, none outside
        data = self.record_mem("forkslice")
        rows = self.report_rows(data)
        (child,) = {p for p, _, _ in rows}  # the parent allocates nothing itself
        got = {n: r[:2] for (p, h, n), r in rows.items() if h == "malloc"}
        self.assertEqual(got.get("spawn"), (5, 320), got)
        self.assertEqual(got.get("main"), (3, 96), got)
        self.assertEqual(got.get("own_work"), (2, 32), got)
        doc = self.report_json(data, "--leaks")
        leaks = [l["stack"] for l in doc[0]["heaps"][0]["leaks"] if l["size"] == 64]
        self.assertEqual(leaks, ["main > spawn"] * 5)
        # the child's own slices keep their figures in the .pftrace (its walk is unchanged)
        pf = os.path.join(data, "trace.pftrace")
        args, = self.tp(pf, "select s.name, a.key, a.int_value v from slice s join args a using(arg_set_id) "
                            "where a.key = 'debug.mem_alloc_bytes' and s.name = 'own_work'")
        self.assertEqual([r["v"] for r in args], [32])

    def test_threshold_records_only_big_blocks(self):
        data = self.record_mem("memtest", PLUGIN, memory="--memory=threshold:4K")
        rows = self.report_rows(data)
        parent = min(p for p, _, _ in rows)
        names = {n for p, h, n in rows if p == parent and h == "malloc"}
        self.assertIn("leak_known", names)
        self.assertIn("big_block", names)
        self.assertNotIn("temp_allocs", names)
        self.assertEqual(rows[(parent, "malloc", "leak_known")][:2], (1, 4096))
        heap = next(h for h in self.report_json(data)[0]["heaps"] if h["heap"] == "malloc")
        self.assertEqual(heap["unknown_frees"], 0)  # frees of small blocks are expected, not unknown
        info = run([WEFT, "info", data]).stdout
        self.assertIn("only blocks of at least 4096 bytes", info)

    def test_sampling_scales_back(self):
        # with one sample per 64 bytes on average, blocks of 4 KiB and more are always sampled and
        # their scaled size is their size (the chance of no sample is e^-64)
        data = self.record_mem("memtest", PLUGIN, memory="--memory=sample:64")
        rows = self.report_rows(data)
        parent = min(p for p, _, _ in rows)
        self.assertEqual(rows[(parent, "malloc", "leak_known")][:2], (1, 4096))
        self.assertEqual(rows[(parent, "malloc", "big_block")][:4], (1, 2 << 20, 1, 2 << 20))
        heap = next(h for h in self.report_json(data)[0]["heaps"] if h["heap"] == "malloc")
        self.assertEqual(heap["unknown_frees"], 0)
        self.assertIn("sampled: one sample per 64 bytes", run([WEFT, "report", "--memory", data]).stdout)

    def test_empty_sampled_trace_says_why(self):
        # one sample per 1 GiB on average: memcalls's 100 bytes are (all but surely) not sampled;
        # the report and the plots say so, not "record with --memory"; its one anonymous mapping
        # is recorded whole (mappings are not sampled: not scaled back)
        data = self.record_mem("memcalls", memory="--memory=sample:1G")
        doc = self.report_json(data)
        mm = next(h for h in doc[0]["heaps"] if h["heap"] == "mmap")
        self.assertEqual((mm["allocs"], mm["alloc_bytes"]), (1, 4096))
        self.assertNotIn("malloc", [h["heap"] for h in doc[0]["heaps"]])
        p = run([WEFT, "plot", "heap", data, "-o", os.path.join(self.tmp, "h.png")], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no allocation was sampled (memory_sample=1073741824", p.stderr)
        data = os.path.join(self.tmp, "t.data")
        run([WEFT, "record", "-q", "-o", data, "--memory=sample:1G", "--", "true"], cwd=self.tmp)
        for cmd in (["report", "--memory", data], ["plot", "heap", data, "-o", os.path.join(self.tmp, "h.png")],
                    ["plot", "memory", data, "-o", os.path.join(self.tmp, "m.png")]):
            with self.subTest(cmd=cmd[:2]):
                p = run([WEFT, *cmd], check=False)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("no allocation was sampled (memory_sample=1073741824", p.stderr)
                self.assertNotIn("record with", p.stderr)

    def test_damaged_trace_says_so_not_that_nothing_was_allocated(self):
        # the events files gone (a directory in their place): plot said the program allocated
        # nothing, and not the reader's warnings
        data = self.record_mem("memcalls")
        for f in glob.glob(os.path.join(data, "*.wevents")):
            os.unlink(f)
            os.mkdir(f)
        for cmd in (["report", "--memory", data], ["plot", "heap", data, "-o", os.path.join(self.tmp, "h.png")],
                    ["plot", "memory", data, "-o", os.path.join(self.tmp, "m.png")]):
            with self.subTest(cmd=cmd[:2]):
                p = run([WEFT, *cmd], check=False)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertRegex(p.stderr, rf"weft: {cmd[0]}: warning: \S+\.wevents: not a regular file; skipped\n")
                self.assertRegex(p.stderr, rf"weft: {cmd[0]}: no allocation could be read: memory was recorded, "
                                           r"but the trace was read with \d+ warnings? \(files damaged or missing\)\n$")

    def test_off_without_memory_option(self):
        data = os.path.join(self.tmp, "off.data")
        run([WEFT, "record", "-q", "-o", data, "--", os.path.join(BUILD, "memtest")], cwd=self.tmp)
        p = run([WEFT, "report", "--memory", data], check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no memory records", p.stderr)
        self.assertNotIn("heap live bytes", run([WEFT, "info", data]).stdout)

    def test_memory_option_errors(self):
        for bad, why in (("--memory=bogus", "bad --memory option 'bogus'"),
                         ("--memory=sample:abc", "bad value 'abc' for --memory")):
            p = run([WEFT, "record", "-o", os.path.join(self.tmp, "x"), bad, "--", "true"], check=False)
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(why, p.stderr)
        p = run([WEFT, "report", "--leaks", self.tmp], check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--leaks goes with --memory", p.stderr)

    def test_stacks_give_call_paths(self):
        # built with frame pointers and no -finstrument-functions: the frame walk alone names
        # the allocating functions and their callers
        data = self.record_mem("memstacks", memory="--memory=stacks")
        doc = self.report_json(data, "--leaks")
        heap = next(h for h in doc[0]["heaps"] if h["heap"] == "malloc")
        rows = {r["slice"]: r for r in heap["rows"]}
        self.assertEqual((rows["inner"]["allocs"], rows["inner"]["bytes"], rows["inner"]["leaked_bytes"]), (1, 777, 777))
        self.assertEqual((rows["other"]["allocs"], rows["other"]["bytes"], rows["other"]["frees"]), (3, 165, 3))
        leak = [l for l in heap["leaks"] if l["size"] == 777]
        self.assertEqual(len(leak), 1)
        self.assertTrue(leak[0]["stack"].endswith("main > outer > inner"), leak[0]["stack"])
        self.assertIn("stacks", run([WEFT, "info", data]).stdout)
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        # the heap profile's frames are the functions: inner under outer under main
        rows, = self.tp(pf, "with recursive up(id, depth, name, parent_id) as ("
                            " select c.id, c.depth, f.name, c.parent_id from stack_profile_callsite c"
                            " join stack_profile_frame f on c.frame_id = f.id where f.name = 'inner'"
                            " union all select c.id, c.depth, f.name, c.parent_id from stack_profile_callsite c"
                            " join stack_profile_frame f on c.frame_id = f.id join up on c.id = up.parent_id)"
                            " select name from up order by depth")
        names = [r["name"] for r in rows]
        self.assertEqual(names[-3:], ["main", "outer", "inner"])
        alloc, = self.tp(pf, "select sum(size) s from heap_profile_allocation where size > 0")
        self.assertEqual(alloc[0]["s"], heap["alloc_bytes"])

    def test_stacks_stop_at_a_frame_pointer_holding_data(self):
        # malloc called with the frame-pointer register holding -16 (a caller built without
        # frame pointers; sigalloc's handler crashed the walk so, 1 run in 30 under load): the
        # program runs as untraced, the block is charged to its caller
        p = run([WEFT, "record", "-q", "-o", os.path.join(self.tmp, "bf.data"), "--memory=stacks", "--",
                 os.path.join(BUILD, "memstacks"), "badframe"], cwd=self.tmp, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = self.report_json(os.path.join(self.tmp, "bf.data"), "--leaks")
        heap = next(h for h in doc[0]["heaps"] if h["heap"] == "malloc")
        leak, = [l for l in heap["leaks"] if l["size"] == 99]
        self.assertTrue(leak["stack"].endswith("bad_fp_malloc"), leak["stack"])

    def test_stacks_name_the_caller_not_the_allocator(self):
        # operator new, std::vector's growth and std::string's blocks (libstdc++ keeps no frame
        # pointers): each row names the function that allocated, never operator new or the
        # library's templates; in the report and in the .pftrace's heap profile
        data = self.record_mem("memsites", memory="--memory=stacks")
        doc = self.report_json(data)
        heap = next(h for h in doc[0]["heaps"] if h["heap"] == "malloc")
        rows = {r["slice"]: r["allocs"] for r in heap["rows"]}
        # 20 nodes and 6 growths of their vector; a vector, 10 strings and 5 growths
        self.assertEqual((rows.get("make_nodes()"), rows.get("make_names()")), (26, 16), rows)
        self.assertFalse([n for n in rows if n.startswith(("operator", "std::", "__gnu_cxx"))], rows)
        pf = os.path.join(data, "trace.pftrace")  # (stats checked by test_stacks_give_call_paths)
        leaves, = self.tp(pf, "select f.name, sum(a.count) n from heap_profile_allocation a "
                              "join stack_profile_callsite c on a.callsite_id = c.id "
                              "join stack_profile_frame f on c.frame_id = f.id where a.count > 0 group by f.name")
        leaves = {r["name"]: r["n"] for r in leaves}
        self.assertEqual((leaves.get("make_nodes()"), leaves.get("make_names()")), (26, 16), leaves)

    def test_calls_line_counts_only_its_heaps_frees(self):
        # one malloc, one free; an anonymous mapping made and unmapped; a file mapping unmapped
        # (not a free: weft never saw it allocated)
        data = self.record_mem("memcalls")
        out = run([WEFT, "report", "--memory", data]).stdout
        heaps = dict(re.findall(r"heap (\S+)\ncalls to allocation functions: \d+ \((.*?)\)", out))
        self.assertEqual(heaps["malloc"], "1 allocations, 0 reallocs, 1 frees")
        self.assertEqual(heaps["mmap"], "1 allocations, 0 reallocs, 1 frees")
        self.assertIn("1 munmaps of mappings the program's mmap did not make", out)
        doc = self.report_json(data)
        self.assertEqual((doc[0]["alloc_calls"], doc[0]["free_calls"]), (1, 1))
        mm = next(h for h in doc[0]["heaps"] if h["heap"] == "mmap")
        self.assertEqual((mm["alloc_calls"], mm["free_calls"], mm["foreign_frees"]), (1, 1, 1))

    def exits(self, mode, status):
        data = os.path.join(self.tmp, mode + ".data")
        p = run([WEFT, "record", "-q", "-o", data, "--memory", "--", os.path.join(BUILD, "memexits"), mode],
                cwd=self.tmp, check=False)
        self.assertEqual(p.returncode, status, p.stderr)
        return data, p

    def test_exit_paths_keep_the_records(self):
        # _exit, abort (SIGABRT) and a thread's pthread_exit: what was allocated before is in
        # the trace, the exit status is the program's
        for mode, status in (("_exit", 3), ("abort", -signal.SIGABRT), ("thread", 0)):
            with self.subTest(mode=mode):
                data, _ = self.exits(mode, status)
                rows = self.report_rows(data)
                (pid,) = {p for p, _, _ in rows}
                self.assertEqual(rows[(pid, "malloc", "before_end")][:2], (5, 5000))
                if mode == "thread":
                    doc = self.report_json(data, "--leaks")
                    leaks = [l for l in doc[0]["heaps"][0]["leaks"] if l["stack"].endswith("thread_work")]
                    self.assertEqual(sorted(l["size"] for l in leaks if l["size"] == 100), [100] * 7)

    def test_signal_handlers_allocating(self):
        # malloc in a handler (the main thread waiting in sigsuspend): recorded, charged to the
        # handler's own slice; no deadlock, nothing unknown
        data, _ = self.exits("sigwait", 0)
        rows = self.report_rows(data)
        pid = min(p for p, _, _ in rows)
        self.assertEqual(rows[(pid, "malloc", "on_usr1")][:4], (20, 1280, 20, 1280))
        # weft_heap_* from a timer's handler interrupting the main thread's own heap events:
        # the main thread's are all there; a handler's event inside another is counted as
        # dropped, never written over it, and its pairs stay whole
        data, p = self.exits("sigheap", 0)
        rows = self.report_rows(data)
        (pid,) = {p for p, _, _ in rows}
        self.assertEqual(rows[(pid, "main", "main_heap_loop")][:4], (20000, 320000, 20000, 320000))
        for h in self.report_json(data)[0]["heaps"]:
            self.assertEqual((h["heap"], h["unknown_frees"]), (h["heap"], 0))
            if h["heap"] == "signal":
                self.assertEqual(h["leaked_bytes"], 0)
        self.tp_no_errors(os.path.join(data, "trace.pftrace"))

    def test_program_with_its_own_allocator_library(self):
        # libmyalloc.so replaces malloc (as jemalloc does): calls must reach it, not glibc (its
        # free aborts on a foreign block), and they are recorded
        exe = os.path.join(BUILD, "allocuser")
        plain = run([exe], cwd=self.tmp).stdout
        data = self.record_mem("allocuser")
        traced = run([WEFT, "record", "-q", "-o", os.path.join(self.tmp, "b.data"), "--memory", "--", exe],
                     cwd=self.tmp).stdout
        self.assertEqual(plain, "myalloc: 50 mallocs, 50 frees in user_work\n")
        self.assertEqual(traced, plain)
        rows = self.report_rows(data)
        (pid,) = {p for p, _, _ in rows}
        self.assertEqual(rows[(pid, "malloc", "user_work")][:4], (50, 3200, 50, 3200))
        self.assertIn("allocator: " + os.path.join(BUILD, "libmyalloc.so"), run([WEFT, "info", data]).stdout)

    def test_program_defining_malloc_is_told(self):
        exe = os.path.join(BUILD, "ownmalloc")
        plain = run([exe], cwd=self.tmp).stdout
        data = os.path.join(self.tmp, "o.data")
        p = run([WEFT, "record", "-q", "-o", data, "--memory", "--", exe], cwd=self.tmp)
        # and weft's runtime took none of its memory (its arena could run out): no call to the
        # program's allocation functions came from weft
        self.assertEqual(p.stdout, plain)
        self.assertEqual(plain, "own mallocs: 100\ncalls from weft: 0\n")
        self.assertIn("defines its own malloc, which comes before weft's: its allocations are not recorded",
                      p.stderr)
        self.assertIn("NOT the program's malloc", run([WEFT, "info", data]).stdout)

    def test_no_false_warning_when_calls_reach_weft(self):
        # Debian's python3 is a non-PIE executable whose malloc symbol is a canonical PLT entry
        # (dlsym returns it), and a wrapper preloaded ahead of weft forwards every call to it: in
        # both the allocations are recorded, and nothing may say they are not
        cases = []
        if os.path.exists("/usr/bin/python3"):
            cases.append(("python3", ["/usr/bin/python3", "-c", "x = [bytearray(100000) for i in range(20)]"]))
        fwd = os.path.join(BUILD, "libfwdmalloc.so")
        cases.append(("memcalls", ["sh", "-c", f"LD_PRELOAD={fwd}:$LD_PRELOAD exec {os.path.join(BUILD, 'memcalls')}"]))
        for name, cmd in cases:
            with self.subTest(program=name):
                data = os.path.join(self.tmp, name + ".data")
                p = run([WEFT, "record", "-q", "-o", data, "--memory", "--", *cmd], cwd=self.tmp)
                self.assertNotIn("its allocations are not recorded", p.stderr)
                self.assertNotIn("NOT the program's malloc", run([WEFT, "info", data]).stdout)
                self.assertNotIn("not in the trace", run([WEFT, "report", "--memory", data]).stdout)
                doc = next(d for d in self.report_json(data) if d["name"] == name)
                heap = next(h for h in doc["heaps"] if h["heap"] == "malloc")
                if name == "python3":  # the 20 blocks of 100000 bytes are among them
                    self.assertGreaterEqual(sum(h["count"] for h in doc["histogram"] if h["min"] == 65536), 20)
                else:
                    self.assertEqual((heap["allocs"], heap["alloc_bytes"]), (1, 100))

    def test_plot_legends_and_gap_labels(self):
        # two methods of one long class template instance and a very long name: each legend
        # label is its own and ends inside the picture; the slice-less band has the report's
        # name; the gap between the brk heap and the mappings is in human units
        data = self.record_mem("longnames")
        png = os.path.join(self.tmp, "mem.png")
        lines = [json.loads(l) for l in run([WEFT, "plot", "memory", data, "-o", png, "--describe"]).stdout.splitlines()]
        legend = [l for l in lines if "legend" in l]
        self.assertEqual(len(legend), 3, lines)
        heap_png = os.path.join(self.tmp, "heap.png")
        bands = [json.loads(l) for l in run([WEFT, "plot", "heap", data, "-o", heap_png, "--describe"]).stdout.splitlines()]
        bands = [b for b in bands if "band" in b]
        for labels, width in (([(l["label"], l["right"]) for l in legend], 1600),
                              ([(b["label"], b["label_right"]) for b in bands], 1600)):
            self.assertEqual(len({lab for lab, _ in labels}), len(labels), labels)  # all different
            for lab, right in labels:
                self.assertLessEqual(right, width, lab)
                self.assertRegex(lab, r"\d+(\.\d+)? (B|KiB|MiB)$")
        self.assertTrue(any("fill_first" in lab for lab, _ in labels), labels)
        self.assertTrue(any("fill_second" in lab for lab, _ in labels), labels)
        gaps = [l for l in lines if "gap" in l]
        self.assertTrue(gaps, lines)
        units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        for g in gaps:
            m = re.fullmatch(r"gap (\d+(?:\.\d)?) (\S+)", g["label"])
            self.assertIsNotNone(m, g)
            k = units.index(m.group(2))
            self.assertTrue(1 <= float(m.group(1)) < 1024 or k == 0, g)
            self.assertAlmostEqual(float(m.group(1)) * 1024 ** k, g["gap"], delta=0.05 * 1024 ** k)

    def test_one_name_for_the_sliceless_band(self):
        # memcalls has no slices: the report, both plots and the .pftrace say the same name
        data = self.record_mem("memcalls")
        name = "[outside any slice]"
        self.assertIn(name, run([WEFT, "report", "--memory", data]).stdout)
        heap = [json.loads(l) for l in run([WEFT, "plot", "heap", data, "-o", os.path.join(self.tmp, "h.png"),
                                            "--describe"]).stdout.splitlines()]
        self.assertIn(name, [b["name"] for b in heap if "band" in b])
        mem = [json.loads(l) for l in run([WEFT, "plot", "memory", data, "-o", os.path.join(self.tmp, "m.png"),
                                           "--describe"]).stdout.splitlines()]
        self.assertIn(name, {l.get("slice") for l in mem} | {l.get("name") for l in mem})

    def test_json_export_has_counters_and_args(self):
        data = self.record_mem("memtest", PLUGIN)
        for style in ("be", "x"):
            out, _ = self.convert(data, f"m-{style}.json", f"--json-style={style}")
            doc = self.load_json(out)
            ev = doc["traceEvents"]
            self.assertTrue(any(e["ph"] == "C" and e["name"] == "heap peak bytes" for e in ev))
            args = [e["args"] for e in ev if e.get("args", {}).get("mem.alloc_count") == 10
                    and e["args"].get("mem.alloc_bytes") == 640]
            self.assertEqual(args, [{"mem.alloc_count": 10, "mem.alloc_bytes": 640, "mem.free_count": 10,
                                     "mem.freed_bytes": 640}], style)


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs weft record's runtime")
class AccessSites(TraceTest):
    """--mem-access=pagefault on tests/memory/touch.c (writer_pass writes every page of its 64 MiB
    block, reader_pass reads every 4th page of its 16 MiB block): in the .pftrace, one cumulative
    counter per allocation site of the process, each access charged to the slice that allocated
    the block it landed in; the SQLite export's own join (docs/sqlite.md) is the reference."""

    def setUp(self):
        super().setUp()
        # page-fault sampling needs perf_event_open (root, or kernel.perf_event_paranoid <= 2)
        p = run([WEFT, "record", "-q", "--no-convert", "-o", os.path.join(self.tmp, "probe.data"),
                 "--mem-access=pagefault", "--", "true"], cwd=self.tmp)
        if "unavailable" in p.stderr:
            self.skipTest("page-fault sampling is not permitted here: " + p.stderr.strip())

    def test_accesses_per_allocation_site(self):
        data = os.path.join(self.tmp, "a.data")
        p = run([WEFT, "record", "-q", "-o", data, "--memory", "--mem-access=pagefault", "--",
                 os.path.join(BUILD, "memtouch")], cwd=self.tmp)
        self.assertEqual(p.stdout, "touched\n")
        samples = int(re.search(r"page faults sampled: (\d+) samples, 0 lost", run([WEFT, "info", data]).stdout).group(1))
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        tracks, within, decreasing = self.tp(
            pf,
            # every access track of the process: its unit, points, final (= highest) value
            "select t.name, t.unit, count(*) n, max(c.value) mx, (select c2.value from counter c2 "
            "where c2.track_id = t.id order by c2.ts desc limit 1) last from counter_track t "
            "join counter c on c.track_id = t.id join process_counter_track pct on pct.id = t.id "
            "join process p using(upid) where p.name like '%memtouch' and (t.name like 'accesses: %' "
            "or t.name = 'memory accesses sampled (page faults)') group by t.id",
            # a site's points lie inside its slice: the accesses were made there, beside it
            "select t.name, sum(c.ts < s.ts or c.ts > s.ts + s.dur) outside from counter_track t "
            "join counter c on c.track_id = t.id join slice s on 'accesses: ' || s.name = t.name "
            "where s.name in ('writer_pass', 'reader_pass') group by t.id",
            # cumulative: never going down
            "select count(*) n from (select c.value v, lag(c.value) over (partition by c.track_id "
            "order by c.ts) pv from counter c join counter_track t on t.id = c.track_id "
            "where t.name like 'accesses: %') where v < pv")
        t = {r["name"]: r for r in tracks}
        for r in tracks:
            self.assertEqual(r["unit"], "count", r)
            self.assertEqual(r["mx"], r["last"], r)
            self.assertLessEqual(r["n"], 50002, r)  # bucketed: at most ~50000 points a track
        self.assertEqual(decreasing, [{"n": 0}])
        self.assertEqual(sorted((r["name"], r["outside"]) for r in within),
                         [("accesses: reader_pass", 0), ("accesses: writer_pass", 0)])
        # first touches: one per page, >= 99% of them charged to the slice that allocated the block
        for slice_name, pages in (("writer_pass", (64 << 20) // PAGE), ("reader_pass", (16 << 20) // PAGE // 4)):
            with self.subTest(slice=slice_name):
                got = t["accesses: " + slice_name]["last"]
                self.assertGreaterEqual(got, pages * 99 // 100)
                self.assertLessEqual(got, pages + pages // 100)
        # the rest (the stacks, libraries, the runtime's buffers) is small; every sample is in
        # exactly one track, and the total track is kept
        unjoined = t["accesses: not in a recorded block"]["last"] if "accesses: not in a recorded block" in t else 0
        self.assertLess(unjoined, (64 << 20) // PAGE // 10)
        self.assertEqual(t["memory accesses sampled (page faults)"]["last"], samples)
        sites = [r["last"] for n, r in t.items() if n.startswith("accesses: ")]
        self.assertEqual(sum(sites), samples)
        # the same join as the SQLite export's: per allocating slice, and the unjoined
        db = os.path.join(self.tmp, "a.db")
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        ref = dict(con.execute(
            "select case when x.allocation_id is null then 'not in a recorded block' "
            "else coalesce(b.name, '[outside any slice]') end, count(*) from accesses x "
            "left join allocations a on a.id = x.allocation_id left join slices b on b.id = a.slice_id "
            "group by 1").fetchall())
        self.assertEqual({n[len("accesses: "):]: r["last"] for n, r in t.items() if n.startswith("accesses: ")}, ref)
        # Perfetto's schema reads the tracks: counter descriptors of unit count, under the process
        text = self.protoc_decode(pf)
        if text is not None:
            for name in ("accesses: writer_pass", "accesses: reader_pass"):
                m = re.search(r'track_descriptor \{\s*uuid: \d+\s*name: "%s"\s*parent_uuid: (\d+)\s*'
                              r'counter \{\s*unit: UNIT_COUNT\s*\}' % re.escape(name), text)
                self.assertIsNotNone(m, name)
                self.assertRegex(text, r'uuid: %s\s*process \{\s*pid: \d+' % m.group(1))


    def record_list(self, *args):
        """tests/memory/linkedlist.c under --memory --mem-access=pagefault: the trace, its SQLite
        export (open) and the .pftrace's access tracks ({name: final count})."""
        data = os.path.join(self.tmp, "l.data")
        p = run([WEFT, "record", "-q", "-o", data, "--memory", "--mem-access=pagefault", "--",
                 os.path.join(BUILD, "memlist"), *args], cwd=self.tmp)
        self.assertEqual(p.stdout, "built\n")
        db = os.path.join(self.tmp, "l.db")
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        tracks, = self.tp(pf, "select t.name, max(c.value) last from counter_track t join counter c "
                              "on c.track_id = t.id where t.name like 'accesses: %' group by t.id")
        return data, con, {r["name"]: r["last"] for r in tracks}

    def test_faults_inside_malloc_join_their_block(self):
        """build_list's faults (one per 4 KiB page of the growing heap, most taken inside malloc
        before it returns the block; on the main thread the brk heap, on four threads after it
        their arenas): on each thread >= 90% joined to a block build_list allocated, of the heap,
        in SQLite and in the .pftrace's per-site track."""
        data, con, tracks = self.record_list("threads")
        rows = con.execute(
            "select x.utid, count(*), count(x.allocation_id), sum(b.name = 'build_list'), "
            "sum(x.region = 'malloc'), sum(x.region = 'unknown') from accesses x "
            "join slices s on s.id = x.slice_id left join allocations a on a.id = x.allocation_id "
            "left join slices b on b.id = a.slice_id where s.name = 'build_list' group by x.utid "
            "order by count(*) desc").fetchall()
        self.assertEqual(len(rows), 5)
        for k, (utid, total, joined, own_site, malloc_region, unknown) in enumerate(rows):
            with self.subTest(utid=utid):
                pages = (200000 if k == 0 else 50000) * 64 // PAGE  # 56 bytes: 64-byte chunks
                self.assertGreaterEqual(total, pages * 9 // 10)
                self.assertGreaterEqual(joined, total * 9 // 10, (total, joined))
                self.assertEqual(own_site, joined)
                self.assertEqual(malloc_region, joined)
                self.assertLessEqual(unknown, total // 100 + 1)
        heaps = con.execute("select distinct a.heap from accesses x join allocations a on a.id = x.allocation_id "
                            "join slices s on s.id = x.slice_id where s.name = 'build_list'").fetchall()
        self.assertEqual(heaps, [("malloc",)])
        # the .pftrace's track of the site is the same join
        ref = dict(con.execute(
            "select case when x.allocation_id is null then 'not in a recorded block' "
            "else coalesce(b.name, '(no slice)') end, count(*) from accesses x "
            "left join allocations a on a.id = x.allocation_id left join slices b on b.id = a.slice_id "
            "group by 1").fetchall())
        self.assertEqual({n[len("accesses: "):]: v for n, v in tracks.items()}, ref)
        total = sum(r[1] for r in rows)
        self.assertGreaterEqual(tracks["accesses: build_list"], total * 9 // 10)
        # weft's own faults are left out (its buffers, filled by the function hooks and the
        # allocation recorder; its sampler thread), and counted: no sample has an instruction or
        # an address in the preload's mapping or comes from a weft thread, and what is not the
        # program's blocks is a handful (stacks)
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"left out: \d+ samples in weft's own memory")
        text = "".join(weftlib.maps_records(next(os.path.join(data, f) for f in os.listdir(data) if f.endswith(".wmeta"))))
        maps = re.findall(r"([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+ +\S*libweft-preload\.so", text)
        self.assertTrue(maps)
        lo, hi = min(int(a, 16) for a, b in maps), max(int(b, 16) for a, b in maps)
        inside, = con.execute("select count(*) from accesses where (ip >= ? and ip < ?) or (addr >= ? and addr < ?)",
                              (lo, hi, lo, hi)).fetchone()
        self.assertEqual(inside, 0)

    def test_threads_one_after_another_take_their_own_faults(self):
        """memlist's four threads run one after another (one CPU, SCHED_FIFO: none is preempted,
        as on a loaded machine now and then): each still takes its own faults in build_list. A
        thread started after another had ended would be given that one's arena, its freed nodes
        paged in already, and take none (test_faults_inside_malloc_join_their_block's 4 != 5)."""
        def one_cpu_fifo():
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        data, db = os.path.join(self.tmp, "s.data"), os.path.join(self.tmp, "s.db")
        try:
            p = subprocess.run([WEFT, "record", "-q", "--no-convert", "-o", data, "--memory", "--mem-access=pagefault",
                                "--", os.path.join(BUILD, "memlist"), "threads"], cwd=self.tmp, capture_output=True,
                               text=True, timeout=120, preexec_fn=one_cpu_fifo)
        except subprocess.SubprocessError as e:  # (preexec_fn refused: no CAP_SYS_NICE)
            self.skipTest(f"SCHED_FIFO is not permitted here: {e}")
        self.assertEqual((p.returncode, p.stdout), (0, "built\n"), p.stderr)
        run([WEFT, "export", "-q", data, "-o", db])
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        rows = con.execute("select x.utid, count(*) from accesses x join slices s on s.id = x.slice_id "
                           "where s.name = 'build_list' group by x.utid order by count(*) desc").fetchall()
        self.assertEqual(len(rows), 5, rows)
        for k, (utid, total) in enumerate(rows):
            self.assertGreaterEqual(total, (200000 if k == 0 else 50000) * 64 // PAGE * 9 // 10, rows)
        weft_threads, = con.execute("select count(*) from accesses x join threads t using(utid) "
                                    "where t.name like 'weft-%'").fetchone()
        self.assertEqual(weft_threads, 0)
        (n, outside), = con.execute("select count(*), count(*) - count(allocation_id) from accesses").fetchall()
        self.assertLessEqual(outside, n // 50, (n, outside))

# A malloc/free loop: argv[1] records (half allocations, half frees), 1024 blocks live at most.
CHURN_C = r"""
#include <stdlib.h>
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	static void *slot[1024];
	unsigned x = 12345;
	for (long i = 0; i < n / 2; i++) {
		x = x * 1103515245u + 12345u;
		unsigned k = (x >> 8) % 1024;
		free(slot[k]);
		slot[k] = malloc(16 + (x >> 20) % 2048);
	}
	return 0;
}
"""

# Runs argv[1..] and prints its peak RSS in KB (wait4's ru_maxrss); exits as it did. A child of
# this small process, not of Python: ru_maxrss counts the memory a process had before its exec.
PEAK_C = r"""
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	pid_t pid = fork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (argc < 2 || pid < 0 || wait4(pid, &st, 0, &ru) != pid)
		return 126;
	printf("%ld\n", ru.ru_maxrss);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
}
"""


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs weft record's allocation interposer")
class BoundedAnalysis(TraceTest):
    """The analyses stream through a trace in memory proportional to what is live, not to the
    records (issue 21): each command's peak RSS (the kernel's count for the child, ru_maxrss) on a
    trace of 1.5 M memory records is within 4 MB of the same on 150 k records, where holding
    each record (~100 B) or the trace file (~5 B each) adds 7-140 MB."""

    GROWTH_KB = 4 << 10  # what 1.35 M more records may add (the counters' points are capped)

    def setUp(self):
        super().setUp()
        for name, text in (("churn", CHURN_C), ("peak", PEAK_C)):
            src = os.path.join(self.tmp, name + ".c")
            with open(src, "w") as f:
                f.write(text)
            run(["gcc", "-O1", src, "-o", os.path.join(self.tmp, name)])
        self.prog = os.path.join(self.tmp, "churn")

    def trace(self, records):
        data = os.path.join(self.tmp, f"c{records}.data")
        run([WEFT, "record", "-q", "--memory", "--no-convert", "-o", data, "--", self.prog, str(records)])
        return data

    def peak_kb(self, *args):
        """weft ARGS' peak resident set (KB); it must succeed (its stdout goes to a file). glibc's
        mmap threshold is fixed at its initial 128 KiB: by default it rises to the size of the
        largest mapped block freed, after which a run's few large buffers (a plot's 5.8 MB
        surface) may come from the heap and stay resident, or not, by the order of a few frees:
        `plot heap` measured 20 or 24 MB on the same trace, either way round between the two
        traces, 4 MB of noise against the 4 MB this test allows."""
        out = os.path.join(self.tmp, "stdout")
        p = run([os.path.join(self.tmp, "peak"), "/bin/sh", "-c", 'exec "$0" "$@" >"%s"' % out, WEFT, *args],
                env={"MALLOC_MMAP_THRESHOLD_": "131072"})
        return int(p.stdout)

    def test_peak_rss_does_not_grow_with_the_records(self):
        small, big = self.trace(150_000), self.trace(1_500_000)
        out = os.path.join(self.tmp, "out")
        for name, args in (("report --memory", ["report", "--memory"]),
                           ("convert", ["convert", "-o", out + ".pftrace"]),
                           ("plot heap", ["plot", "heap", "-o", out + ".png"]),
                           # (a window of the first ms: drawing every block would take long)
                           ("plot memory", ["plot", "memory", "--time", "0:1ms", "-o", out + ".png"])):
            with self.subTest(name):
                at = 2 if args[0] == "plot" else 1
                # the smaller of two runs each: how much the converter's threads hold in flight
                # depends on their scheduling (convert: 4.5 MB of growth once, in a loaded
                # pristine-root run, against 4 MB allowed)
                a = min(self.peak_kb(*args[:at], small, *args[at:]) for _ in range(2))
                b = min(self.peak_kb(*args[:at], big, *args[at:]) for _ in range(2))
                self.assertLess(b - a, self.GROWTH_KB, f"{name}: {a} KB at 150 k records, {b} KB at 1.5 M")


class NamedHeaps(TraceTest, PoolCounters):
    """weft_heap_* in a program linked with libweft, no preloading: runs in every build."""

    def test_pool_from_cxx(self):
        data, _ = self.record("memtest_cpp")
        out = run([WEFT, "report", "--memory", "--format=csv", data]).stdout.splitlines()
        rows = [l for l in out[1:] if ',"pool",' in l]
        self.assertEqual(len(rows), 1, out)
        # its function hooks need weft record's runtime: no slices here
        self.assertRegex(rows[0], r'^\d+,"pool","\[outside any slice\]",3,768,2,512,768,256,1,')
        self.assertFalse([l for l in out[1:] if ',"malloc",' in l])  # no interposer: no malloc heap
        pf, _ = self.convert(data, "h.pftrace")
        self.counter_max(pf)

    def test_heap_events_from_a_signal_handler(self):
        data, p = self.record("memexits", ["sigheap"])
        out = run([WEFT, "report", "--memory", "--format=json", data]).stdout
        doc = json.loads(out)
        heaps = {h["heap"]: h for h in doc[0]["heaps"]}
        main_rows = {r["slice"]: r for r in heaps["main"]["rows"]}
        # no -finstrument-functions hooks without weft record: outside any slice
        self.assertEqual(heaps["main"]["allocs"], 20000)
        self.assertEqual(heaps["main"]["frees"], 20000)
        self.assertEqual(sum(r["allocs"] for r in main_rows.values()), 20000)
        for h in heaps.values():
            self.assertEqual(h["unknown_frees"], 0, h["heap"])


if __name__ == "__main__":
    main()
