"""The data sources' table (src/collect/source.h) drives every source: each source the run
started describes itself once per process at stop (a SOURCES record), and `weft info` lists
those lines in the table's order - the preload runtime's (memory, mem_access, sched,
counters), the system sampler, the GPU collector started late by CUDA's injection entry (the
fake CUPTI), and a fork child's own. A source this machine cannot run says "unavailable" in
one line instead and is not listed."""
import os
import re
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

ORDER = ["sampler", "gpu", "memory", "mem_access", "watch", "sched", "counters"]  # collect/sources.c
FAKE = os.path.join(BUILD, "fake_cupti.so")


def sources_by_process(info):
    """{pid: [(name, line), ...]} from weft info's source: lines, per process block."""
    out, pid = {}, None
    for line in info.splitlines():
        m = re.match(r"^process (\d+) ", line)
        if m:
            pid = int(m.group(1))
            out[pid] = []
        m = re.match(r"^  source:   (\w+): (.+)$", line)
        if m and pid is not None:
            out[pid].append((m.group(1), m.group(2)))
    return out


class Sources(TraceTest):
    def check_order(self, names):
        self.assertEqual(names, sorted(names, key=ORDER.index))  # the table's order
        self.assertEqual(len(names), len(set(names)))            # each once

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs weft record's runtime")
    def test_preload_sources_and_fork_child(self):
        data = os.path.join(self.tmp, "d")
        p = run([WEFT, "record", "-q", "--no-convert", "--memory", "--sched", "--counters=task-clock",
                 "--mem-access=pagefault", "--cpu-mem", "-o", data, "--", os.path.join(BUILD, "features")],
                cwd=self.tmp)
        # what this machine refuses is said once, and not listed
        refused = set(re.findall(r"^weft: (\w[\w-]*)[=:].*unavailable", p.stderr, re.M))
        refused = {r.replace("-", "_") for r in refused}
        want = [n for n in ("sampler", "memory", "mem_access", "sched", "counters") if n not in refused]
        procs = sources_by_process(run([WEFT, "info", data]).stdout)
        self.assertEqual(len(procs), 2, procs)  # features forks a child
        for pid, rows in procs.items():
            names = [n for n, _ in rows]
            self.check_order(names)
            self.assertEqual(names, want, (pid, rows, p.stderr))
        lines = dict(procs[min(procs)])
        self.assertIn("allocations and frees", lines["memory"])
        self.assertIn("CPU time and RSS", lines["sampler"])
        if "counters" in lines:
            self.assertIn("task-clock", lines["counters"])

    def test_in_process_runtime(self):
        """libweft alone (a program tracing itself): the sampler and CUPTI rows."""
        out, _ = self.record("gpu_app", options=f"gpu=1:cupti_lib={FAKE}")
        procs = sources_by_process(run([WEFT, "info", out]).stdout)
        names = [n for rows in procs.values() for n, _ in rows]
        self.assertEqual(names, ["sampler", "gpu"])
        gpu = dict(next(iter(procs.values())))["gpu"]
        self.assertIn("fake_cupti.so", gpu)
        self.assertIn("kernels, copies, memsets", gpu)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD") or sanitizer(), "needs weft record's runtime")
    def test_gpu_started_late_by_injection(self):
        out = os.path.join(self.tmp, "g.data")
        p = run([WEFT, "record", "--gpu", "--no-convert", "--options", f"cupti_lib={FAKE}", "-o", out, "--",
                 os.path.join(BUILD, "gpu_app")])
        self.assertNotIn("unavailable", p.stderr)
        procs = sources_by_process(run([WEFT, "info", out]).stdout)
        names = [n for rows in procs.values() for n, _ in rows]
        self.assertEqual(names.count("gpu"), 1, procs)  # started once, by cuInit's injection call
        self.check_order(names)

    def test_unavailable_is_said_not_listed(self):
        out, p = self.record("gpu_app", options="gpu=1:cupti_lib=/nonexistent/libcupti.so")
        self.assertEqual(len(re.findall(r"^weft: gpu unavailable: ", p.stderr, re.M)), 1, p.stderr)
        procs = sources_by_process(run([WEFT, "info", out]).stdout)
        self.assertEqual([n for rows in procs.values() for n, _ in rows], ["sampler"])


if __name__ == "__main__":
    main()
