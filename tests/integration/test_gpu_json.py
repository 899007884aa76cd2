"""GPU activities in the Chrome JSON (src/export/json-gpu.c), on the trace tests/unit/test_gpu.c
builds by hand (`test_gpu --write DIR`): a row per (GPU, stream) under a process of its own,
X events with the .pftrace's arguments, and an arrow from each launching CUDA call, checked with
Python's json module and with Perfetto's trace_processor (its JSON importer)."""
import os
from weftlib import BUILD, TraceTest, main, run

GPU_PID = 0x7fff0000


class GpuJson(TraceTest):
    def setUp(self):
        super().setUp()
        self.data = os.path.join(self.tmp, "trace.data")
        os.mkdir(self.data)
        run([os.path.join(BUILD, "test_gpu"), "--write", self.data])

    def test_rows_and_args(self):
        for style in ("be", "x"):
            with self.subTest(style=style):
                js, _ = self.convert(self.data, f"t-{style}.json", f"--json-style={style}")
                ev = self.load_json(js)["traceEvents"]
                meta = {(e["pid"], e.get("tid"), e["name"]): e["args"]["name"] for e in ev if e["ph"] == "M"}
                self.assertEqual(meta[(GPU_PID, None, "process_name")], "GPU 0: NVIDIA H100 80GB HBM3")
                self.assertEqual(meta[(GPU_PID, 7, "thread_name")], "stream 7")
                gpu = [e for e in ev if e["pid"] == GPU_PID and e["ph"] == "X"]
                self.assertEqual([(e["name"], e["ts"], e["dur"]) for e in gpu], [
                    ("vadd(float*, float const*, int)", 5100.01, 10.001),
                    ("vadd(float*, float const*, int)", 5200.02, 20.002),
                    ("void reduce<256>(float*)", 5300.03, 40.004),
                    ("Memcpy HtoD", 5400.04, 100.01),
                    ("Memset", 5600.06, 10.001),
                    ("Memcpy DtoH", 5700.07, 10.001)])
                k = gpu[2]["args"]
                self.assertEqual((k["grid"], k["block"], k["registers_per_thread"], k["static_shared_bytes"],
                                  k["occupancy"], k["mangled"], k["correlation_id"], k["stream"]),
                                 ("64,1,1", "1024,1,1", 64, 4096, 0.5, "_Z6reduceILi256EEvPf", 3, 7))
                c = gpu[3]["args"]
                self.assertEqual((c["bytes"], c["kind"], c["src_kind"], c["dst_kind"]),
                                 (1000000, "HtoD", "pageable", "device"))
                self.assertEqual(gpu[4]["args"]["value"], 255)
                # arrow ends: one per launched activity (not the DtoH copy), at its start
                ends = [(e["ts"], e["id"]) for e in ev if e["ph"] == "f" and e["pid"] == GPU_PID]
                starts = {e["id"] for e in ev if e["ph"] == "s"}
                self.assertEqual([t for t, _ in ends], [5100.01, 5200.02, 5300.03, 5400.04, 5600.06])
                self.assertTrue(all(i in starts for _, i in ends))

    def test_trace_processor_flows(self):
        q = ("select so.name src, si.name dst, count(*) n from flow f join slice so on f.slice_out = so.id "
             "join slice si on f.slice_in = si.id group by 1, 2 order by 1, 2")
        want = [{"src": "cudaLaunchKernel", "dst": "vadd(float*, float const*, int)", "n": 2},
                {"src": "cudaLaunchKernel", "dst": "void reduce<256>(float*)", "n": 1},
                {"src": "cudaMemcpy", "dst": "Memcpy HtoD", "n": 1},
                {"src": "cudaMemset", "dst": "Memset", "n": 1}]
        rows_q = ("select t.name thread, p.name process, count(*) n from slice s join thread_track tt on "
                  "s.track_id = tt.id join thread t using(utid) join process p using(upid) "
                  "where p.pid = %d group by 1, 2" % GPU_PID)
        for style in ("be", "x"):
            with self.subTest(style=style):
                js, _ = self.convert(self.data, f"t-{style}.json", f"--json-style={style}")
                flows, rows = self.tp(js, q, rows_q)
                self.assertEqual(flows, want)
                self.assertEqual(rows, [{"thread": "stream 7", "process": "GPU 0: NVIDIA H100 80GB HBM3", "n": 6}])


if __name__ == "__main__":
    main()
