"""Two hosts on one machine without MPI: the receiver runs in other UTS and time namespaces
(hostname nodeB, CLOCK_BOOTTIME 5000 s ahead), the sender on this host; they exchange one
message through a fifo (tests/programs/hostpair.c) linked by a user flow id. The converters
must put nodeB's times on this host's clock (REALTIME alignment), give nodeB's processes
unique pids (pid | host index << 22), and draw the message forward in time; `weft info`
says the offset it found."""
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

from weftlib import BUILD, WEFT, TraceTest, main, run, sanitizer

AHEAD_NS = 5000 * 10**9
HOSTPAIR = os.path.join(BUILD, "hostpair")


def namespaces_usable():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    p = subprocess.run(["unshare", "--time", "--boottime", "1", "--uts", "--fork", "true"], capture_output=True)
    return p.returncode == 0


NS = f"unshare --time --boottime {AHEAD_NS // 10**9} --monotonic {AHEAD_NS // 10**9} --uts --fork"


@unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
@unittest.skipUnless(namespaces_usable(), "needs root and time namespaces (unshare --time)")
class TwoHosts(TraceTest):
    def fifo(self):
        f = os.path.join(self.tmp, "fifo")
        os.mkfifo(f)
        return f

    def one_recording(self):
        """Both processes under one `weft record`."""
        data = os.path.join(self.tmp, "D")
        f = self.fifo()
        run([WEFT, "record", "-o", data, "--", "sh", "-c",
             f"{HOSTPAIR} send {f} & {NS} sh -c 'hostname nodeB && exec {HOSTPAIR} recv {f}'; wait"])
        return data

    def check(self, data, trace, names=True):
        slices, flows = self.tp(
            trace,
            "select s.name, s.ts, s.dur, t.tid, p.pid, p.name pname, coalesce(extract_arg(s.arg_set_id, "
            "'debug.boot_ns'), extract_arg(s.arg_set_id, 'args.boot_ns')) boot from slice s join thread_track tt "
            "on s.track_id = tt.id join thread t using(utid) join process p using(upid) "
            "where s.name in ('send', 'recv') order by s.name",
            "select so.name src, si.name dst from flow f join slice so on f.slice_out = so.id "
            "join slice si on f.slice_in = si.id")
        recv, send = slices
        self.assertEqual((recv["name"], send["name"]), ("recv", "send"))
        # two hosts' processes, named with their host (in the .pftrace: Chrome JSON names a
        # pid by its first image, the shell that exec'd), nodeB's ids made unique with its index
        if names:
            self.assertEqual(recv["pname"], "hostpair (nodeB)")
            self.assertEqual(send["pname"], f"hostpair ({os.uname().nodename})")
        self.assertEqual(recv["pid"] >> 22, 1, slices)
        self.assertEqual(recv["tid"], recv["pid"])
        self.assertEqual(send["pid"] >> 22, 0, slices)
        self.assertEqual(send["tid"], send["pid"])
        # nodeB's times are on this host's clock: its own reading of its clock (the argument
        # boot_ns, taken just before each instant) less the namespace's 5000 s is the
        # instant's time, within 100 us (the closest of five: one may be preempted between);
        # a complete slice's times (ns, not ticks) likewise
        ticks, marks = self.tp(
            trace,
            "select s.ts, coalesce(extract_arg(s.arg_set_id, 'debug.boot_ns'), extract_arg(s.arg_set_id, "
            "'args.boot_ns')) boot from slice s where s.name = 'tick'",
            "select s.ts, s.dur from slice s where s.name = 'mark'")
        self.assertEqual(len(ticks), 5, ticks)
        self.assertLess(min(abs(t["ts"] - (t["boot"] - AHEAD_NS)) for t in ticks), 100_000, ticks)
        self.assertEqual(len(marks), 1, marks)
        self.assertEqual(marks[0]["dur"], 1000)
        self.assertGreater(marks[0]["ts"], max(t["ts"] for t in ticks))
        self.assertLess(marks[0]["ts"] - max(t["ts"] for t in ticks), 10**9, marks)
        # the message goes forward: received after it was sent, linked by the user's flow id
        self.assertGreater(recv["ts"], send["ts"], slices)
        self.assertEqual(flows, [{"src": "send", "dst": "recv"}])
        return slices

    def info_offset(self, data):
        out = run([WEFT, "info", data]).stdout
        m = re.search(r"host nodeB:.*\n    clock: offset ([-+]\d+) ns, drift \+0\.000 ns/s \(REALTIME", out)
        self.assertTrue(m, out)
        self.assertIn("messages:   1 between processes (1 between hosts), 0 backwards in time, "
                      "0 flows without their other end", out)
        return int(m.group(1))

    def test_one_recording(self):
        data = self.one_recording()
        off = self.info_offset(data)
        print(f"nodeB offset recovered: {off} ns (truth {-AHEAD_NS})")
        self.assertLess(abs(off + AHEAD_NS), 100_000)
        pf, _ = self.convert(data, "t.pftrace")
        self.tp_no_errors(pf)
        self.check(data, pf)
        for style in ("be", "x"):
            with self.subTest(style=style):
                js, _ = self.convert(data, f"t-{style}.json", f"--json-style={style}")
                self.load_json(js)
                self.check(data, js, names=False)

    @unittest.skipUnless(os.path.exists(os.path.join(BUILD, "python", "weft")) and not sanitizer(),
                         "the Python module is not built, or built with a sanitizer Debian's python3 lacks")
    def test_python_flow(self):
        """PerfFlowAspect's case: Python components on two hosts, linked by a flow id of the
        program's choosing (weft.flow_out / weft.flow_in)."""
        f = self.fifo()
        script = os.path.join(self.tmp, "pair.py")
        with open(script, "w") as s:
            s.write("import os, sys, weft\n"
                    "fd = os.open(sys.argv[2], os.O_WRONLY if sys.argv[1] == 'send' else os.O_RDONLY)\n"
                    "if sys.argv[1] == 'send':\n"
                    "    with weft.scope('py send'):\n"
                    "        weft.flow_out(0x1234)\n"
                    "        os.write(fd, b'x')\n"
                    "else:\n"
                    "    os.read(fd, 1)\n"
                    "    with weft.scope('py recv'):\n"
                    "        weft.flow_in(0x1234)\n")
        data = os.path.join(self.tmp, "P")
        py = sys.executable
        run([WEFT, "record", "-o", data, "--", "sh", "-c",
             f"{py} {script} send {f} & {NS} sh -c 'hostname nodeB && exec {py} {script} recv {f}'; wait"],
            env={"PYTHONPATH": os.path.join(BUILD, "python")})
        self.assertLess(abs(self.info_offset(data) + AHEAD_NS), 100_000)
        pf, _ = self.convert(data, "t.pftrace")
        flows, = self.tp(pf, "select so.name src, so.ts t0, si.name dst, si.ts + si.dur t1, pi.name host "
                             "from flow f join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id "
                             "join thread_track tt on si.track_id = tt.id join thread using(utid) "
                             "join process pi using(upid)")
        self.assertEqual(len(flows), 1, flows)
        self.assertEqual((flows[0]["src"], flows[0]["dst"]), ("py send", "py recv"))
        self.assertTrue(flows[0]["host"].endswith("(nodeB)"), flows)
        self.assertGreater(flows[0]["t1"], flows[0]["t0"])

    def test_separate_recordings(self):
        """One `weft record` per host, each with its own directory; the files of both in one
        directory read as one trace (until `weft convert D1 D2` exists, a copy)."""
        f = self.fifo()
        d1, d2 = os.path.join(self.tmp, "D1"), os.path.join(self.tmp, "D2")
        a = subprocess.Popen([WEFT, "record", "-o", d1, "--", HOSTPAIR, "send", f])
        # the reference host is the one where the run began: nodeB's recording starts once the
        # sender runs (under a sanitizer either may otherwise take its first clock reading first)
        while not os.path.exists(f + ".started"):
            self.assertIsNone(a.poll(), "the sender ended before it started")
            time.sleep(0.01)
        # nodeB's recording with every task's context switches (sched=1): that host's CPUs
        run(["sh", "-c", f"{NS} sh -c 'hostname nodeB && exec {WEFT} record --sched -o {d2} -- {HOSTPAIR} recv {f}'"])
        self.assertEqual(a.wait(timeout=60), 0)
        both = os.path.join(self.tmp, "both")
        os.mkdir(both)
        for d in (d1, d2):
            for name in os.listdir(d):
                if name.endswith((".wmeta", ".wevents")):
                    shutil.copy(os.path.join(d, name), both)
        off = self.info_offset(both)
        self.assertLess(abs(off + AHEAD_NS), 100_000)
        pf, _ = self.convert(both, "t.pftrace")
        self.check(both, pf)
        # another host's CPUs are not this one's: its switches are left out of the one timeline
        # (alone, nodeB's directory has them)
        nodeb, _ = self.convert(d2, "b.pftrace")
        (alone,), = self.tp(nodeb, "select count(*) n from sched")
        (merged,), = self.tp(pf, "select count(*) n from sched")
        if alone["n"]:
            self.assertEqual(merged["n"], 0)
        else:
            print("SKIP the sched part: no context switches recorded here", file=sys.stderr)


class Ranks(TraceTest):
    """A job of three ranks on three hosts, built by tests/unit/test_hosts.c (nodeB's rank 0 is
    the reference; nodeA aligned on REALTIME, nodeC over MPI with drift)."""

    def built(self):
        d = os.path.join(self.tmp, "R")
        os.mkdir(d)
        run([os.path.join(BUILD, "test_hosts"), "--write", d])
        return d

    def test_named_and_ordered_by_rank(self):
        d = self.built()
        want = [(200, "app rank 0 (nodeB)"), (100 | 1 << 22, "app rank 1 (nodeA)"), (300 | 2 << 22, "app rank 2 (nodeC)")]
        pf, _ = self.convert(d, "t.pftrace", "--compress=none")
        self.tp_no_errors(pf)
        rows, labels = self.tp(pf, "select pid, name from process where pid > 0 order by name",
                               "select p.pid, a.string_value label from process p join args a using(arg_set_id) "
                               "where a.key like 'chrome.process_label%' order by p.pid")
        self.assertEqual([(r["pid"], r["name"]) for r in rows], want)
        # the host as the process's label too
        self.assertEqual([(r["pid"], r["label"]) for r in labels],
                         [(200, "nodeB"), (100 | 1 << 22, "nodeA"), (300 | 2 << 22, "nodeC")])
        # the UI's order (trace_processor keeps it for the UI only: read from the packets): the
        # root track asks for explicit process order, each process track's rank is the rank
        text = self.protoc_decode(pf)
        if text is None:
            self.skipTest("Perfetto schema absent (../shared/perfetto): the UI's order is read from the packets")
        self.assertIn("track_descriptor {\n    uuid: 0\n    process_ordering: PROCESS_ORDERING_EXPLICIT\n  }", text)
        ranks = [(m.group(1), r.group(1)) for block in text.split("track_descriptor {")
                 for m in [re.search(r"\n    process {\n      pid: (\d+)\n", block)]
                 for r in [re.search(r"\n    sibling_order_rank: (\d+)\n", block)] if m and r]
        self.assertEqual(sorted((int(p), int(r)) for p, r in ranks), sorted((p, i) for i, (p, _) in enumerate(want)))
        js, _ = self.convert(d, "t.json")
        rows, = self.tp(js, "select pid, name from process where pid > 0 order by name")
        self.assertEqual([(r["pid"], r["name"]) for r in rows], want)
        doc = self.load_json(js)
        order = {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"] if e.get("name") == "process_sort_index"}
        self.assertEqual(order, {p: i for i, (p, _) in enumerate(want)})

    def test_end_args_and_flows(self):
        """Arguments and arrows after an END belong to the slice it ends (nodeC's `work`, ended
        with `bytes` = 4096 and the arrow from nodeA's `work`), in every output."""
        d = self.built()
        q = ("select po.pid src, pi.pid dst from flow f join slice so on f.slice_out = so.id "
             "join slice si on f.slice_in = si.id join thread_track a on so.track_id = a.id "
             "join thread ta on a.utid = ta.utid join process po on ta.upid = po.upid "
             "join thread_track b on si.track_id = b.id join thread tb on b.utid = tb.utid "
             "join process pi on tb.upid = pi.upid",
             "select s.ts, s.dur, a.key, a.int_value from slice s join args a using(arg_set_id) "
             "where s.name = 'work' and a.key like '%bytes'")
        for name, extra in (("t.pftrace", ()), ("t-be.json", ("--json-style=be",)), ("t-x.json", ("--json-style=x",))):
            with self.subTest(out=name):
                out, _ = self.convert(d, name, *extra)
                flows, args = self.tp(out, *q)
                # the arrow back in time (nodeC -> nodeB) trace_processor leaves out
                self.assertEqual(flows, [{"src": 100 | 1 << 22, "dst": 300 | 2 << 22}])
                self.assertEqual(len(args), 1, args)
                self.assertEqual(args[0]["int_value"], 4096)
                self.assertEqual(args[0]["ts"], 20 * 10**9 + 500)

    def test_machines(self):
        """--machines: each host a Perfetto machine (machine_id = its index, the reference 0),
        its processes and threads there, times as on the one timeline."""
        d = self.built()
        q = ("select p.pid, p.machine_id from process p where pid > 0 order by pid",
             "select s.ts, t.tid, t.machine_id from slice s join thread_track tt on s.track_id = tt.id "
             "join thread t using(utid) where s.name = 'work' order by s.ts")
        one, _ = self.convert(d, "one.pftrace")
        pf, _ = self.convert(d, "m.pftrace", "--machines")
        self.tp_no_errors(pf)
        procs, slices = self.tp(pf, *q)
        self.assertEqual([(r["pid"], r["machine_id"]) for r in procs],
                         [(200, 0), (100 | 1 << 22, 1), (300 | 2 << 22, 2)])
        self.assertEqual([r["machine_id"] for r in slices], [0, 1, 2, 2])
        _, base = self.tp(one, *q)
        self.assertEqual([r["ts"] for r in slices], [r["ts"] for r in base])
        self.assertEqual({r["machine_id"] for r in base}, {0})

    def test_info(self):
        out = run([WEFT, "info", self.built()]).stdout
        self.assertIn("hosts:      3 (times on nodeB's clock)\n"
                      "  host nodeB: processes 200 (rank 0)\n    clock: the reference\n"
                      f"  host nodeA: processes {100 | 1 << 22} (rank 1)\n"
                      "    clock: offset +3000000020 ns, drift +0.000 ns/s (REALTIME, median of 3 clock readings)\n"
                      f"  host nodeC: processes {300 | 2 << 22} (rank 2)\n"
                      "    clock: offset -5000000000 ns, drift +100.000 ns/s (MPI ping-pong, 2 phases, best round "
                      "trip 1000 ns)\n"
                      "messages:   2 between processes (2 between hosts), 1 backwards in time (worst by "
                      "10000.000 ms), 1 flows without their other end\n", out)


class OneHost(TraceTest):
    def test_single_host_has_no_hosts_block(self):
        """A trace of one host: no hosts block, names and pids as recorded."""
        data, _ = self.record("asyncflow", [3])
        out = run([WEFT, "info", data]).stdout
        self.assertNotIn("hosts:", out)
        pf, _ = self.convert(data, "t.pftrace")
        rows, = self.tp(pf, "select name from process where pid > 0")
        self.assertEqual([r["name"] for r in rows], ["asyncflow"])


if __name__ == "__main__":
    main()
