"""The system sampler (cpu_mem=, power=, gpu=; weft record --cpu-mem --power): fixture trees under
tests/data/system stand for /sys and /proc (sysfs_root=, procfs_root=) and a stub NVML
(tests/programs/nvml_stub.c, nvml_lib=) whose readings follow its call count, so every value
on the .pftrace's counter tracks is known exactly; sysprobe (tests/programs/sysprobe.c)
rewrites a fixture file and waits until the sampler has read it. The real /proc and getrusage
are checked with lower bounds only. Read back with trace_processor and protoc."""
import os
import re
import shutil
from weftlib import TraceTest, main, run, WEFT, BUILD, SRC

PAGE = os.sysconf("SC_PAGE_SIZE")
PROBE = os.path.join(BUILD, "sysprobe")
STUB = os.path.join(BUILD, "nvml_stub.so")
FIXTURES = os.path.join(SRC, "tests", "data", "system")
MAX_UJ = 262143328850  # max_energy_range_uj of both fixture zones
NVML_DESC = f"power of 2 GPUs ({STUB}), energy of 1, SM clock of 2, utilization of 1, every 20 ms"


class System(TraceTest):
    def fixture(self):
        root = os.path.join(self.tmp, "fx")
        shutil.copytree(FIXTURES, root)
        return os.path.join(root, "sys"), os.path.join(root, "proc")

    def counters(self, pf):
        rows, = self.tp(pf, "select t.name, c.ts, c.value from counter c join counter_track t on c.track_id = t.id "
                            "order by t.name, c.ts")
        tracks = {}
        for r in rows:
            tracks.setdefault(r["name"], []).append((r["ts"], r["value"]))
        return tracks

    def test_fixtures_exact(self):
        sysfs, procfs = self.fixture()
        freq0 = os.path.join(sysfs, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
        pkg = os.path.join(sysfs, "class/powercap/intel-rapl:0/energy_uj")
        opts = (f"cpu_mem=1:power=1:power_period=20ms:sysfs_root={sysfs}:procfs_root={procfs}:nvml_lib={STUB}")
        # package-0: 262142000000 (fixture) -> 262143000000 -> 1000000 (past max_energy_range_uj)
        data, _ = self.record("sysprobe", ["wait", freq0, "set", freq0, "2400000", "set", pkg, "262143000000",
                                           "set", freq0, "1800000", "set", pkg, "000001000000",
                                           "nvml", STUB, 6], options=opts)
        info = run([WEFT, "info", data]).stdout
        self.assertIn("cpu-mem  used: user and system CPU time (getrusage) and RSS", info)
        self.assertIn("cpufreq  used: scaling_cur_freq of 2 CPUs of 3", info)
        self.assertIn("rapl     used: energy_uj of 2 RAPL zones", info)
        self.assertIn(f"nvml     used: {NVML_DESC}", info)
        self.assertRegex(info, r"sampler:  [0-9.]+ ms CPU in [0-9.]+ s \([0-9.]+%\), [0-9]+ rounds")
        pf, _ = self.convert(data, "t.pftrace")
        self.tp_no_errors(pf)
        self.protoc_decode(pf)
        # CPU frequency: Perfetto's cpufreq tracks, one value per change
        freq, = self.tp(pf, "select t.cpu, c.value from counter c join cpu_counter_track t on c.track_id = t.id "
                            "where t.name = 'cpufreq' order by t.cpu, c.ts")
        self.assertEqual([(r["cpu"], r["value"]) for r in freq],
                         [(0, 1200000), (0, 2400000), (0, 1800000), (1, 3000000)])
        c = self.counters(pf)
        # RAPL: watts = energy between two readings / time between them; the wrap counted once
        pw = c["RAPL package-0 power"]
        nonzero = [(k, v) for k, (_, v) in enumerate(pw) if v != 0]
        self.assertEqual(len(nonzero), 2, pw)
        for (k, v), d_uj in zip(nonzero, (1000000, 1000000 + (MAX_UJ - 262143000000))):
            expect = d_uj * 1e3 / (pw[k + 1][0] - pw[k][0])
            self.assertAlmostEqual(v, expect, delta=expect * 1e-9)
        self.assertEqual({v for _, v in c["RAPL package-0:core power"]}, {0})
        self.check_gpus(pf, c)
        # the fixture statm: 300 resident pages, unchanged
        self.assertEqual({v for _, v in c["mem.rss"]}, {300 * PAGE})
        types, = self.tp(pf, "select distinct t.name, t.type from track t where t.name in "
                             "('RAPL package-0 power', 'mem.rss', 'cpu.user %')")
        kinds = {r["name"]: r["type"] for r in types}
        self.assertEqual(kinds["RAPL package-0 power"], "global_counter_track_event")
        self.assertEqual(kinds["mem.rss"], "process_counter_track_event")
        self.assertEqual(kinds["cpu.user %"], "process_counter_track_event")

    def check_gpus(self, pf, c):
        """The stub NVML's two GPUs (tests/programs/nvml_stub.c): a track per GPU with its NVML
        counters under it, every value exact; the readings at open are not recorded."""
        gpus, kids = self.tp(pf, "select name, type from track where parent_id is null and name like 'GPU%' "
                                 "order by name",
                             "select t.name, p.name parent, t.type, ct.unit from track t join track p "
                             "on t.parent_id = p.id join counter_track ct on ct.id = t.id "
                             "where p.name like 'GPU%' order by t.name")
        self.assertEqual([r["name"] for r in gpus], ["GPU 0: Stub GPU", "GPU 1: Stub GPU"])
        self.assertEqual({(r["name"], r["parent"], r["unit"]) for r in kids}, {
            ("GPU 0 power", "GPU 0: Stub GPU", "W"), ("GPU 0 SM clock", "GPU 0: Stub GPU", "MHz"),
            ("GPU 0 utilization", "GPU 0: Stub GPU", "%"), ("GPU 0 memory utilization", "GPU 0: Stub GPU", "%"),
            ("GPU 0 energy", "GPU 0: Stub GPU", "J"),
            ("GPU 1 power", "GPU 1: Stub GPU", "W"), ("GPU 1 SM clock", "GPU 1: Stub GPU", "MHz")})
        self.assertEqual({r["type"] for r in kids}, {"global_counter_track_event"})
        # GPU 0 reports its energy (5 J more at each reading): its power is the energy between two
        # readings over the time between them, at the first; GPU 1's is NVML's (200 + min(n, 4) W)
        energy, power = c["GPU 0 energy"], c["GPU 0 power"]
        self.assertEqual([v for _, v in energy], [5 * k for k in range(len(energy))])
        self.assertEqual([t for t, _ in power], [t for t, _ in energy[:-1]])
        for (t1, e1), (t2, e2), (_, w) in zip(energy, energy[1:], power):
            expect = (e2 - e1) * 1e9 / (t2 - t1)
            self.assertAlmostEqual(w, expect, delta=expect * 1e-9)
        self.assertEqual([v for _, v in c["GPU 1 power"]], [201, 202, 203, 204])
        self.assertNotIn("GPU 1 energy", c)
        # SM clock (g+1)*1000 + 100*min(n, 4) MHz; GPU 0's utilization 20*min(n, 4) %, memory
        # 5 + 10*min(n, 4) %; GPU 1 has no utilization (NOT_SUPPORTED)
        self.assertEqual([v for _, v in c["GPU 0 SM clock"]], [1100, 1200, 1300, 1400])
        self.assertEqual([v for _, v in c["GPU 1 SM clock"]], [2100, 2200, 2300, 2400])
        self.assertEqual([v for _, v in c["GPU 0 utilization"]], [20, 40, 60, 80])
        self.assertEqual([v for _, v in c["GPU 0 memory utilization"]], [15, 25, 35, 45])
        self.assertNotIn("GPU 1 utilization", c)
        self.assertNotIn("GPU 1 memory utilization", c)
        # the ordering Perfetto's UI follows: the GPU's children by rank, after the CUPTI streams
        text = self.protoc_decode(pf)
        if text is not None:
            self.assertEqual(text.count("child_ordering: EXPLICIT"), 2)
            ranks = []
            for d in text.split("track_descriptor {")[1:]:
                m, r = re.search(r'name: "(GPU \d [^"]+)"', d), re.search(r"sibling_order_rank: (\d+)", d)
                if m and r:
                    ranks.append((m.group(1), r.group(1)))
            self.assertEqual(sorted(ranks), sorted([
                ("GPU 0 power", "1000"), ("GPU 0 SM clock", "1001"), ("GPU 0 utilization", "1002"),
                ("GPU 0 memory utilization", "1003"), ("GPU 0 energy", "1004"),
                ("GPU 1 power", "1000"), ("GPU 1 SM clock", "1001")]))

    def test_gpu_alone(self):
        # gpu=1 without power=1: NVML every power_period, none of power=1's CPU sources
        # (cupti_lib= a missing library: CUPTI's part is not what this test checks)
        sysfs, _ = self.fixture()
        opts = f"gpu=1:cupti_lib={self.tmp}/none.so:power_period=20ms:sysfs_root={sysfs}:nvml_lib={STUB}"
        data, _ = self.record("sysprobe", ["nvml", STUB, 6], options=opts)
        info = run([WEFT, "info", data]).stdout
        self.assertIn(f"nvml     used: {NVML_DESC}", info)
        for src in ("cpu-mem", "cpufreq", "cpuidle", "rapl"):
            self.assertNotIn(f"    {src} ", info)
        pf, _ = self.convert(data, "g.pftrace")
        self.tp_no_errors(pf)
        c = self.counters(pf)
        self.check_gpus(pf, c)
        self.assertFalse([n for n in c if not n.startswith("GPU")], c)

    def test_cpuidle_exact(self):
        sysfs, _ = self.fixture()
        cpu = os.path.join(sysfs, "devices/system/cpu")
        t = {(c, s): os.path.join(cpu, f"cpu{c}/cpuidle/state{s}/time") for c in (0, 1) for s in (0, 1)}
        base = {(0, 0): 1000000, (0, 1): 20000000, (1, 0): 3000000, (1, 1): 40000000}
        steps = []
        for (c, s), add in (((0, 0), 10000), ((0, 1), 25000), ((1, 0), 50000), ((1, 1), 12500), ((0, 0), 5000)):
            base[c, s] += add  # idle us in one sampling period: add / 200 ms in percent
            steps += ["set", t[c, s], f"{base[c, s]:012d}"]
        # a 200 ms period: a round 100 ms late (scaled to one period) is not to be feared here
        data, _ = self.record("sysprobe", ["wait", t[0, 0]] + steps,
                              options=f"power=1:sample_period=200ms:sysfs_root={sysfs}:nvml_lib={self.tmp}/none.so")
        info = run([WEFT, "info", data]).stdout
        self.assertIn(f"cpuidle  used: idle time of 2 CPUs of 3 (4 states, {cpu}/cpuN/cpuidle/stateK/time), "
                      "every 200 ms, idle us per period, on change", info)
        pf, _ = self.convert(data, "t.pftrace")
        self.tp_no_errors(pf)
        c = self.counters(pf)
        # the first sample sets the base; then a value per change, 0 between the steps
        self.assertEqual([v for _, v in c["cpu0 idle %"]], [0, 5, 0, 12.5, 0, 2.5, 0])
        self.assertEqual([v for _, v in c["cpu1 idle %"]], [0, 25, 0, 6.25, 0])
        self.assertNotIn("cpu2 idle %", c)
        types, = self.tp(pf, "select distinct type from track where name like 'cpu_ idle %'")
        self.assertEqual([r["type"] for r in types], ["global_counter_track_event"])
        # CPUs without cpuidle (a virtual machine): unavailable, no track
        for c in (0, 1):
            shutil.rmtree(os.path.join(cpu, f"cpu{c}/cpuidle"))
        shutil.rmtree(data)
        data, _ = self.record("sysprobe", ["spin", 5],
                              options=f"power=1:sysfs_root={sysfs}:nvml_lib={self.tmp}/none.so")
        info = run([WEFT, "info", data]).stdout
        self.assertIn(f"cpuidle  unavailable: no {cpu}/cpu0/cpuidle/state*/time (no cpuidle driver: a virtual "
                      "machine?)", info)
        pf, _ = self.convert(data, "n.pftrace")
        self.assertFalse([n for n in self.counters(pf) if "idle" in n])

    def test_unavailable(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        data, _ = self.record("sysprobe", ["spin", 5], options=f"cpu_mem=1:power=1:sysfs_root={empty}:"
                                                                 f"procfs_root={empty}:nvml_lib={empty}/none.so")
        info = run([WEFT, "info", data]).stdout
        self.assertIn(f"RSS unavailable: {empty}/self/statm: No such file or directory", info)
        self.assertIn(f"cpufreq  unavailable: cannot list {empty}/devices/system/cpu: No such file or directory", info)
        self.assertIn(f"cpuidle  unavailable: cannot list {empty}/devices/system/cpu: No such file or directory", info)
        self.assertIn(f"rapl     unavailable: no {empty}/class/powercap", info)
        self.assertIn(f"nvml     unavailable: cannot load {empty}/none.so", info)
        pf, _ = self.convert(data, "t.pftrace")
        c = self.counters(pf)
        self.assertNotIn("mem.rss", c)
        self.assertFalse([n for n in c if n.startswith(("RAPL", "GPU", "cpufreq")) or "idle" in n], c)

    def test_record_cpu_mem_real(self):
        data = os.path.join(self.tmp, "r.data")
        run([WEFT, "record", "-q", "--cpu-mem", "-o", data, "--", PROBE, "spin", "30", "alloc", "64"], cwd=self.tmp)
        info = run([WEFT, "info", data]).stdout
        self.assertIn("cpu-mem  used: user and system CPU time (getrusage) and RSS (/proc/self/statm)", info)
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        args, = self.tp(pf, "select s.name, a.key, a.int_value v from slice s join args a using(arg_set_id) "
                            "where s.name = 'spin'")
        a = {r["key"]: r["v"] for r in args}
        # 30 ms of CPU spun; the slice's figure is interpolated between readings 10 ms apart,
        # each end within one period's CPU (docs/format.md), and getrusage splits user and
        # system time by tick sampling: only their sum has a bound, 30 - 2 x 10 ms
        self.assertIn("debug.cpu_sys_ns", a)
        self.assertGreaterEqual(a["debug.cpu_user_ns"] + a["debug.cpu_sys_ns"], 10000000, a)
        self.assertGreater(a["debug.mem_rss_bytes"], 0)
        c = self.counters(pf)
        rss = [v for _, v in c["mem.rss"]]
        self.assertGreaterEqual(max(rss) - rss[0], 60 << 20)  # 64 MiB touched, kept to the exit
        self.assertGreater(max(v for _, v in c["cpu.user %"]), 0)

    def slice_args(self, pf, name):
        rows, = self.tp(pf, "select a.key, a.int_value v from slice s join args a using(arg_set_id) "
                            f"where s.name = '{name}'")
        return {r["key"]: r["v"] for r in rows}

    def test_record_cpu_mem_exact(self):
        # the matching slice: its own thread's CPU time, read at begin and end
        data = os.path.join(self.tmp, "x.data")
        p = run([WEFT, "record", "-q", "--cpu-mem=exact:/^sp/", "-o", data, "--", PROBE, "spin", "150"],
                cwd=self.tmp)
        measured = int(next(l for l in p.stdout.splitlines() if l.startswith("spin_cpu_ns")).split()[1])
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        a = self.slice_args(pf, "spin")
        got = a["debug.cpu_user_ns"] + a["debug.cpu_sys_ns"]
        self.assertLess(abs(got - measured), measured * 0.1, (got, measured))
        self.assertGreater(a["debug.mem_rss_bytes"], 0)
        self.assertNotIn("debug.mem_rss_delta_bytes", a)  # exact, not interpolated
        # a slice the pattern does not match keeps the interpolated args; the matching one
        # (alloc) has exact ones
        data = os.path.join(self.tmp, "y.data")
        run([WEFT, "record", "-q", "--cpu-mem=exact:alloc", "-o", data, "--", PROBE, "spin", "50", "alloc", "16"],
            cwd=self.tmp)
        pf = os.path.join(data, "trace.pftrace")
        a = self.slice_args(pf, "spin")
        # (interpolated between the sampler's readings: how much of the 50 ms falls in the
        # slice depends on when the samples came, 0 in a loaded sanitizer run: not asserted)
        self.assertIn("debug.cpu_user_ns", a)
        self.assertIn("debug.mem_rss_delta_bytes", a)
        b = self.slice_args(pf, "alloc")
        self.assertIn("debug.cpu_sys_ns", b)
        self.assertGreaterEqual(b["debug.mem_rss_bytes"], 16 << 20)
        self.assertNotIn("debug.mem_rss_delta_bytes", b)

    def test_record_cpu_mem_exact_bad(self):
        for arg in ("exact:/[/", "exact:", "exact", "fast:spin", "exact:a:b"):
            p = run([WEFT, "record", "-q", f"--cpu-mem={arg}", "--", PROBE, "spin", "1"], check=False,
                    cwd=self.tmp)
            self.assertEqual(p.returncode, 2, (arg, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("--cpu-mem", p.stderr)


if __name__ == "__main__":
    main()
