"""The GPU collector (gpu=1, weft record --gpu) against a fake CUPTI (tests/gpu/fake_cupti.c,
loaded through cupti_lib=) with the real exported names and record layouts, driven by
tests/gpu/gpu_app.c: CUDA calls become slices of the calling thread, kernels, copies and
memsets slices on a track per GPU stream with their resources, an arrow from each launch,
device memory a heap per GPU. The fake device clock runs 40 ppm fast with a 3000 s offset, so
the clock map is exercised. Read back with trace_processor, protoc and weft info."""
import atexit
import os
import re
import shutil
import tempfile
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD

FAKE = os.path.join(BUILD, "fake_cupti.so")
APP = "gpu_app"
VECADD = "vecAdd(float const*, float const*, float*, int)"
SCALE = "void math::scale<float>(float*, int)"


NO_PRELOAD = os.environ.get("WEFT_TEST_NO_PRELOAD")
# the "basic" run, recorded and converted once for the tests that only read it
_BASIC = {}
_SHARED = tempfile.mkdtemp(prefix="weft-gpu-")
atexit.register(shutil.rmtree, _SHARED, True)


class Gpu(TraceTest):
    def record_gpu(self, *args, options="", env=None, check=True):
        """gpu=1 in WEFT_OPTIONS of the app (linked with libweft): the in-process API, which
        every build can test (TSan included)."""
        out, p = self.record(APP, args, options=f"gpu=1:cupti_lib={FAKE}" + (":" + options if options else ""),
                             env=env)
        return out, p

    def record_cli(self, *args, options="", env=None, check=True):
        """weft record --gpu: the preloaded runtime, started by the CUDA driver's injection
        call (the fake's cuInit calls InitializeInjection of CUDA_INJECTION64_PATH)."""
        out = os.path.join(self.tmp, "trace.data")
        opts = f"cupti_lib={FAKE}" + (":" + options if options else "")
        p = run([WEFT, "record", "--gpu", "--no-convert", "--options", opts, "-o", out, "--", os.path.join(BUILD, APP), *args],
                env=env, check=check)
        return out, p

    def pftrace(self, data):
        pf, _ = self.convert(data, "t.pftrace")
        self.tp_no_errors(pf)
        return pf

    def basic(self):
        """gpu_app basic (in-process gpu=1) and its .pftrace, made once: (data, pftrace, stderr)."""
        if not _BASIC:
            data = os.path.join(_SHARED, "basic.data")
            p = run([os.path.join(BUILD, APP), "basic"], cwd=_SHARED,
                    env={"WEFT_OPTIONS": f"output={data}:gpu=1:cupti_lib={FAKE}"})
            pf = os.path.join(_SHARED, "basic.pftrace")
            run([WEFT, "convert", data, "-o", pf])
            self.tp_no_errors(pf)
            _BASIC.update(data=data, pf=pf, stderr=p.stderr)
        return _BASIC["data"], _BASIC["pf"], _BASIC["stderr"]

    def test_basic_layout(self):
        data, pf, stderr = self.basic()
        self.assertNotIn("unavailable", stderr)
        gpu, streams, kernels, copies = self.tp(
            pf,
            "select name from track where name like 'GPU 0%' and parent_id is null",
            "select t.name, p.name as parent from track t join track p on t.parent_id = p.id "
            "where t.name like 'stream %' order by t.name",
            "select s.name, t.name as track, count(*) as n from slice s join track t on s.track_id = t.id "
            "where s.category = 'gpu_kernel' group by s.name, t.name order by t.name, s.name",
            "select s.name, s.dur, extract_arg(s.arg_set_id, 'debug.bytes') as bytes, t.name as track "
            "from slice s join track t on s.track_id = t.id where s.category in ('gpu_memcpy', 'gpu_memset') "
            "order by s.ts")
        self.assertEqual([r["name"] for r in gpu], ["GPU 0: Fake GPU H100"])
        self.assertEqual({(r["name"], r["parent"]) for r in streams},
                         {("stream 7", "GPU 0: Fake GPU H100"), ("stream 13", "GPU 0: Fake GPU H100"),
                          ("stream 0", "GPU 0: Fake GPU H100")} & {(r["name"], r["parent"]) for r in streams})
        by = {(r["name"], r["track"]): r["n"] for r in kernels}
        self.assertEqual(by.get((VECADD, "stream 7")), 20, kernels)
        self.assertEqual(by.get((SCALE, "stream 13")), 10, kernels)
        self.assertEqual(sum(r["n"] for r in kernels), 32, kernels)  # + the sync kernel and the driver launch
        names = [(r["name"], r["bytes"]) for r in copies]
        self.assertIn(("Memcpy HtoD", 1 << 20), names)
        self.assertIn(("Memcpy DtoH", 1 << 20), names)
        self.assertIn(("Memset", 64 << 10), names)
        self.assertIn(("Memcpy DtoH", "stream 13"), [(r["name"], r["track"]) for r in copies])

    def test_kernel_args_and_occupancy(self):
        data, pf, _ = self.basic()
        rows, = self.tp(pf, "select a.key, a.display_value from slice s join args a using(arg_set_id) "
                            f"where s.name = '{VECADD}' and s.id = (select min(id) from slice where name = '{VECADD}')")
        args = {r["key"]: r["display_value"] for r in rows}
        for k in ("grid", "block", "registers_per_thread", "static_shared_bytes", "dynamic_shared_bytes",
                  "local_bytes_per_thread", "local_bytes_total", "occupancy", "device", "context", "stream",
                  "correlation_id", "mangled"):
            self.assertIn("debug." + k, args, args)
        self.assertEqual(args["debug.mangled"], "_Z6vecAddPKfS0_Pfi")
        self.assertEqual(args["debug.stream"], "7")

    def test_flows_from_launches(self):
        data, pf, _ = self.basic()
        flows, unlinked = self.tp(
            pf,
            "select o.name as src, i.name as dst, i.category as cat, ot.utid is not null as host "
            "from flow f join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id "
            "left join thread_track ot on o.track_id = ot.id",
            "select count(*) as n from slice where category like 'gpu_%' and id not in (select slice_in from flow)")
        launch = [r for r in flows if r["src"] == "cudaLaunchKernel"]
        self.assertEqual(len(launch), 31, flows)  # 20 + 10 + the sync kernel
        self.assertTrue(all(r["cat"] == "gpu_kernel" and r["host"] for r in launch), launch)
        self.assertEqual(len([r for r in flows if r["src"] == "cuLaunchKernel"]), 1, flows)
        self.assertIn(("cudaMemcpy", "Memcpy HtoD"), [(r["src"], r["dst"]) for r in flows])
        self.assertIn(("cudaMemcpyAsync", "Memcpy DtoH"), [(r["src"], r["dst"]) for r in flows])
        self.assertIn(("cudaMemset", "Memset"), [(r["src"], r["dst"]) for r in flows])
        self.assertEqual(unlinked[0]["n"], 0, "device work without an arrow from its launch")
        text = self.protoc_decode(pf)
        if text is not None:
            self.assertIn("terminating_flow_ids:", text)

    def test_graph_launch_one_arrow(self):
        """A CUDA graph: one cudaGraphLaunch, six kernels with its correlation id. One arrow
        (to the first), the id on all six, no error in trace_processor."""
        data, _ = self.record_gpu("graph")
        pf = self.pftrace(data)
        kernels, flows = self.tp(
            pf,
            "select s.name, extract_arg(s.arg_set_id, 'debug.correlation_id') as corr from slice s "
            "where s.category = 'gpu_kernel' order by s.ts",
            "select o.name as src, i.name as dst from flow f join slice o on f.slice_out = o.id "
            "join slice i on f.slice_in = i.id order by i.ts")
        nodes = [r for r in kernels if r["name"] == "graphnode(float*)"]
        self.assertEqual(len(nodes), 6, kernels)
        self.assertEqual(len({r["corr"] for r in nodes}), 1, nodes)
        self.assertEqual([(r["src"], r["dst"]) for r in flows],
                         [("cudaGraphLaunch", "graphnode(float*)"), ("cudaLaunchKernel", VECADD),
                          ("cudaLaunchKernel", VECADD)])

    def test_sync_kernel_inside_host_scope(self):
        """The clock map: a kernel run synchronously inside a host scope lies inside it (the fake
        device clock is 3000 s ahead and 40 ppm fast)."""
        data, pf, _ = self.basic()
        host, dev = self.tp(pf, "select ts, dur from slice where name = 'sync kernel'",
                            "select ts, dur from slice where name = 'sync_kernel()'")
        self.assertEqual(len(host), 1, host)
        self.assertEqual(len(dev), 1, dev)
        h, d = host[0], dev[0]
        self.assertGreaterEqual(d["ts"], h["ts"])
        self.assertLessEqual(d["ts"] + d["dur"], h["ts"] + h["dur"])
        self.assertGreaterEqual(d["dur"], 190000)

    def test_device_memory_heap(self):
        """cudaMalloc 4 MiB in "setup", then cuMemAlloc 1 MiB (freed), then cudaFree: a live
        counter that peaks at 5 MiB and ends at 0; the 4 MiB charged to "setup"."""
        data, pf, _ = self.basic()
        rep = run([WEFT, "report", "--memory", data]).stdout
        self.assertIn("GPU 0 memory", rep)
        rows, = self.tp(pf, "select c.ts, c.value from counter c join counter_track t "
                            "on c.track_id = t.id where t.name = 'heap live bytes: GPU 0 memory' order by c.ts")
        values = [int(r["value"]) for r in rows]
        self.assertEqual(max(values), 5 << 20, values)
        self.assertEqual(values[-1], 0, values)
        self.assertIn(4 << 20, values)
        db = os.path.join(self.tmp, "t.db")
        run([WEFT, "export", data, "-o", db])
        import sqlite3
        con = sqlite3.connect(db)
        got = con.execute("select a.size, s.name from allocations a left join slices s on s.id = a.slice_id "
                          "where a.heap = 'GPU 0 memory' order by a.alloc_ts").fetchall()
        self.assertEqual(got, [(4 << 20, "setup"), (1 << 20, None)], got)

    def test_info_and_drops(self):
        data, p = self.record_gpu("drops", "5")
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"dropped: +[1-9]")
        m = re.search(r"dropped:\s+(\d+)", info)
        self.assertEqual(int(m.group(1)), 5, info)

    @unittest.skipIf(NO_PRELOAD, "needs weft record's runtime")
    def test_cli_injection(self):
        """weft record --gpu: CUPTI is loaded at cuInit through CUDA_INJECTION64_PATH, in the
        processes that use CUDA only; the program's output and exit status are its own."""
        data, p = self.record_cli("basic")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kernels 32", p.stdout)
        pf = self.pftrace(data)
        n, flows = self.tp(pf, "select count(*) as n from slice where category = 'gpu_kernel'",
                           "select count(*) as n from flow")
        self.assertEqual(n[0]["n"], 32)
        self.assertGreaterEqual(flows[0]["n"], 32)
        # a process that never initializes CUDA loads no CUPTI and says nothing
        p2 = run([WEFT, "record", "--gpu", "--options", f"cupti_lib={FAKE}", "-o", os.path.join(self.tmp, "sh.data"),
                  "--", "/bin/sh", "-c", "exit 3"], check=False)
        self.assertEqual(p2.returncode, 3)
        self.assertNotIn("gpu", p2.stderr)

    @unittest.skipIf(NO_PRELOAD, "needs weft record's runtime")
    def test_crash_keeps_kernels(self):
        """A fatal signal flushes what CUPTI holds; the program still dies of it."""
        data, p = self.record_cli("crash", check=False)
        self.assertEqual(p.returncode, -11, p.stderr)
        pf = self.pftrace(data)
        n, = self.tp(pf, "select count(*) as n from slice where category = 'gpu_kernel'")
        self.assertEqual(n[0]["n"], 5)

    def test_threads(self):
        data, _ = self.record_gpu("threads", "4")
        pf = self.pftrace(data)
        kernels, flows = self.tp(pf, "select count(*) as n from slice where category = 'gpu_kernel'",
                                 "select count(*) as n from flow f join slice i on f.slice_in = i.id "
                                 "where i.category = 'gpu_kernel'")
        self.assertEqual(kernels[0]["n"], 200)
        self.assertEqual(flows[0]["n"], 200)

    def test_unavailable(self):
        """CUPTI refusing (profiling restricted to root) leaves the program alone and says why."""
        data, p = self.record_gpu("basic", env={"FAKE_CUPTI_FAIL": "enable"})
        self.assertEqual(p.returncode, 0)
        lines = [l for l in p.stderr.splitlines() if "gpu unavailable" in l]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("INSUFFICIENT_PRIVILEGES", lines[0].upper().replace(" ", "_"))
        info = run([WEFT, "info", data]).stdout
        self.assertIn("unavailable", info)
        data2, p2 = self.record_gpu("basic", options="cupti_lib=/nonexistent/libcupti.so")
        self.assertIn("cannot load /nonexistent/libcupti.so", p2.stderr)


if __name__ == "__main__":
    main()
