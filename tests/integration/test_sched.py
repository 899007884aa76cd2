"""weft record --sched: scheduling on the timeline. As root, the kernel's sched_switch,
sched_waking, task_newtask and task_rename tracepoints of every task go into the trace and the
.pftrace carries them as ftrace bundles, so trace_processor's thread_state shows what each
thread of schedmix did inside its weft slice (on the same utid as the slice). Without root
(the program run as nobody) the program's own context switches are recorded instead, said in
one line, and shown as on/off-CPU slices. Lower bounds only: this machine is shared.

Some kernels leave switches out (a VM's never reports a switch out of its agent's threads, and
now and then one out of idle); weft counts them and the .pftrace closes each CPU's chain, so
trace_processor's stats stay clean on a loaded machine too."""
import os
import re
import shutil
import subprocess
import unittest
from weftlib import TraceTest, main, run, sanitizer, WEFT, BUILD

SCHEDMIX = os.path.join(BUILD, "schedmix")
MS = 1000000
# sched rows with a negative length other than each CPU's last: trace_processor gives that one
# -1 (it had not ended when the recording did), as in any trace, Perfetto's own included
BAD_DUR = ("select s.cpu, s.ts, s.dur from sched s where s.dur < 0 and "
           "(s.dur != -1 or s.ts < (select max(ts) from sched s2 where s2.cpu = s.cpu))")

# per weft slice: the time its thread spent in each state inside the slice. A state with no
# end (dur -1: its thread's next switch is not in the trace, as for a thread's last run before
# it exits) lasts to the slice's end.
IN_SLICE = ("select s.name as slice, tt.utid as utid, s.dur as dur, st.state as state, "
            "sum(min(case when st.dur < 0 then s.ts + s.dur else st.ts + st.dur end, s.ts + s.dur) "
            "- max(st.ts, s.ts)) as t "
            "from slice s join thread_track tt on s.track_id = tt.id "
            "join thread_state st on st.utid = tt.utid "
            "where st.dur != 0 and st.ts < s.ts + s.dur and (st.dur < 0 or st.ts + st.dur > s.ts) "
            "group by s.id, st.state")


class Sched(TraceTest):
    @staticmethod
    def states(rows):
        """IN_SLICE's rows: {(slice, utid): {"dur": its length, state: time}}"""
        out = {}
        for r in rows:
            out.setdefault((r["slice"], r["utid"]), {"dur": r["dur"]})[r["state"]] = r["t"]
        return out

    def assert_clean(self, pf, *queries):
        """trace_processor's stats have no error or data loss, and no sched row a negative
        length but each CPU's last. Returns the rows of the queries, run in the same load."""
        stats, bad, *rows = self.tp(pf, "select name, idx, severity, source, value from stats where value > 0 "
                                        "and severity in ('error', 'data_loss')", BAD_DUR, *queries)
        self.assertEqual(stats, [], pf)
        self.assertEqual(bad, [], pf)
        return rows

    @unittest.skipUnless(os.geteuid() == 0, "the tracepoints need root")
    def test_thread_state_of_the_programs_threads(self):
        data = os.path.join(self.tmp, "s.data")
        p = run([WEFT, "record", "-o", data, "--sched", "--", SCHEDMIX])
        self.assertIn("schedmix done", p.stdout)
        self.assertNotIn("sched:", p.stderr)  # no notice, nothing unavailable
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"sched:    every task on \d+ CPUs \(tracepoints sched_switch, sched_waking, "
                               r"task_newtask, task_rename\): \d+ records, 0 lost, 1 reader thread")
        pf = os.path.join(data, "trace.pftrace")
        utids, in_slice, spinner = self.assert_clean(
            pf, "select t.tid, count(distinct t.utid) as n from thread t "
                "join process p using(upid) where p.name = 'schedmix' group by t.tid",
            IN_SLICE, "select count(*) as n from sched join thread using(utid) where thread.name = 'spinner'")
        # every thread of the program is one utid: its slices' and its scheduling
        self.assertTrue(utids)
        self.assertTrue(all(r["n"] == 1 for r in utids), utids)
        st = self.states(in_slice)
        by_name = {}
        for (name, utid), v in st.items():
            by_name.setdefault(name, []).append(v)
        self.assertEqual(sorted(by_name), ["contend", "sleep", "spin"], st)
        sleep, = by_name["sleep"]
        self.assertGreaterEqual(sleep.get("S", 0), 40 * MS, sleep)
        spin, = by_name["spin"]
        # it never sleeps: on a CPU or waiting for one the whole slice (how much of it running
        # depends on the machine's load: on a shared two-CPU machine others take their turns)
        self.assertGreaterEqual(spin.get("Running", 0) + spin.get("R", 0) + spin.get("R+", 0), spin["dur"] * 9 // 10, spin)
        self.assertGreater(spin.get("Running", 0), 0, spin)
        self.assertLess(spin.get("S", 0), 5 * MS, spin)
        self.assertEqual(len(by_name["contend"]), 2)
        for c in by_name["contend"]:
            # each sleeps holding the mutex 4 x 10 ms, or waits for it asleep; runs between
            self.assertGreaterEqual(c.get("S", 0), 40 * MS, c)
            self.assertGreater(c.get("Running", 0), 0, c)
        # the CPU tracks: sched slices of the program's threads, and the kernel named them
        self.assertGreater(spinner[0]["n"], 0)
        # the ftrace bundles and system_info are valid Perfetto protos
        text = self.protoc_decode(pf)
        if text is not None:  # None: Perfetto's schema is absent here (said on stderr)
            self.assertIn("sched_switch {", text)
            self.assertIn("utsname {", text)

    @unittest.skipUnless(os.geteuid() == 0, "the tracepoints need root")
    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "records programs not built with this build's "
                     "sanitizer (TSan): preloading is not testable here")
    def test_clean_on_a_loaded_machine(self):
        # two busy processes besides the program; on this VM most recordings meet switches
        # the kernel left out
        busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
        try:
            datas = []
            for i, cmd in enumerate([["sleep", "0.3"], [SCHEDMIX]]):
                data = os.path.join(self.tmp, "l%d.data" % i)
                run([WEFT, "record", "-q", "-o", data, "--sched", "--", *cmd])
                datas.append(data)
        finally:
            for b in busy:
                b.kill()
                b.wait()
        for data in datas:
            info = run([WEFT, "info", data]).stdout
            self.assertRegex(info, r"\d+ records, 0 lost, 1 reader thread")
            self.assert_clean(os.path.join(data, "trace.pftrace"))

    @unittest.skipUnless(os.geteuid() == 0, "the tracepoints need root")
    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "records programs not built with this build's "
                     "sanitizer (TSan): preloading is not testable here")
    def test_clean_across_exec(self):
        # the image after exec records on its own: nothing between the two (the CPUs idle there)
        data = os.path.join(self.tmp, "e.data")
        run([WEFT, "record", "-q", "-o", data, "--sched", "--", "sh", "-c", "sleep 0.05; exec sleep 0.05"])
        info = run([WEFT, "info", data]).stdout
        self.assertEqual(len(re.findall(r"sched:    every task", info)), 2, info)
        self.assert_clean(os.path.join(data, "trace.pftrace"))

    @unittest.skipUnless(os.geteuid() == 0, "the tracepoints need root")
    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "records programs not built with this build's "
                     "sanitizer (TSan): preloading is not testable here")
    def test_children_are_one_process_each(self):
        # each child is one process in trace_processor, its weft tracks (heap counters with
        # --memory, its threads) and its scheduling together, under its parent: before, the
        # process descriptors (at the trace's start) made a process per pid that the sched
        # stream's fork (task_newtask) then replaced with another one, holding the thread_state
        loop = "for i in 1 2 3; do /bin/ls / >/dev/null; done"
        cases = [("bash", ["--memory"], ["bash", "-c", loop], "ls"), ("bash", [], ["bash", "-c", loop], "ls")]
        if shutil.which("lua5.4"):  # os.execute: system(), a vfork-like clone, then sh
            script = os.path.join(self.tmp, "x.lua")
            with open(script, "w") as f:
                f.write('for i = 1, 3 do os.execute("exit 0") end\n')
            cases.append(("lua5.4", ["--memory"], ["lua5.4", script], "sh"))
        for k, (root_name, opts, cmd, child_name) in enumerate(cases):
            with self.subTest(cmd=cmd[0], opts=opts):
                data = os.path.join(self.tmp, "c%d.data" % k)
                run([WEFT, "record", "-q", "-o", data, "--sched", *opts, "--", *cmd])
                info = run([WEFT, "info", data]).stdout
                root = int(re.search(r'^process (\d+) "%s" \(parent \d+\)$' % re.escape(root_name), info, re.M).group(1))
                kids = {int(c): int(p) for c, p in
                        re.findall(r'^process (\d+) "%s" \(parent (\d+)\)' % child_name, info, re.M)}
                self.assertEqual(len(kids), 3, info)
                self.assertEqual(set(kids.values()), {root}, info)
                pids = ",".join(str(p) for p in [root, *kids])
                procs, threads, states, counters = self.assert_clean(
                    os.path.join(data, "trace.pftrace"),
                    f"select upid, pid, parent_upid from process where pid in ({pids})",
                    f"select tid, count(distinct utid) as n from thread where tid in ({pids}) group by tid",
                    f"select t.tid, t.upid, count(*) as n from thread_state s join thread t using(utid) "
                    f"where t.tid in ({pids}) group by t.tid, t.upid",
                    f"select distinct p.pid, c.upid from process_counter_track c join process p using(upid) "
                    f"where p.pid in ({pids})")
                by_pid = {}
                for r in procs:
                    by_pid.setdefault(r["pid"], []).append(r)
                # one process per pid: the program and each child
                self.assertEqual({p: len(v) for p, v in by_pid.items()}, {p: 1 for p in [root, *kids]}, procs)
                upid = {p: v[0]["upid"] for p, v in by_pid.items()}
                # one thread per main thread, its scheduling on its process
                self.assertTrue(all(r["n"] == 1 for r in threads), threads)
                state_upids = {}
                for r in states:
                    state_upids.setdefault(r["tid"], set()).add(r["upid"])
                for c in kids:
                    self.assertEqual(state_upids.get(c), {upid[c]}, (c, states, procs))
                    # its parent is the program
                    self.assertEqual(by_pid[c][0]["parent_upid"], upid[root], procs)
                # its heap counters on the same process (a sanitizer build has no allocation
                # interposer: its runtime's malloc comes first, and no heap is recorded)
                if opts and not sanitizer():
                    got = {}
                    for r in counters:
                        got.setdefault(r["pid"], set()).add(r["upid"])
                    for c in kids:
                        self.assertEqual(got.get(c), {upid[c]}, (c, counters, procs))

    def test_broken_switch_chains_are_closed(self):
        # tests/unit/sched_chain_trace.c: a switch the kernel left out on CPU 0 (70 -> 200,
        # whose first record is a waking at 3 ms), and an exec with nothing recorded from 5 to
        # 20 ms
        data = os.path.join(self.tmp, "hand.data")
        os.mkdir(data)
        run([os.path.join(BUILD, "sched_chain_trace"), data])
        info = run([WEFT, "info", data]).stdout
        self.assertIn("            1 switch not reported by the kernel (a CPU's next switch was out of another "
                      "task): the .pftrace puts it at the next task's first record\n", info)
        pf = os.path.join(self.tmp, "hand.pftrace")
        run([WEFT, "convert", data, "-o", pf])
        rows, = self.assert_clean(pf, "select s.cpu, s.ts, s.dur, t.tid from sched s join thread t using(utid) "
                                      "order by s.cpu, s.ts, s.dur")
        got = [(r["cpu"], r["ts"] // 1000, r["dur"] if r["dur"] < 0 else r["dur"] // 1000, r["tid"]) for r in rows]
        self.assertEqual(got, [
            (0, 1000, 1000, 100), (0, 2000, 1000, 70), (0, 3000, 1000, 200),
            (0, 4000, 16000, 0),  # idle, then the gap: idle too
            (0, 20000, 0, 300), (0, 20000, 2000, 100), (0, 22000, -1, 0),
            (1, 1000, 4000, 101), (1, 5000, 16000, 0),  # idle already: nothing missing
            (1, 21000, -1, 101)], rows)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to drop privileges")
    def test_without_root_own_context_switches(self):
        # nobody must reach the build tree: every directory above it searchable by others
        d = os.path.dirname(os.path.abspath(WEFT))
        while d != "/":
            if not os.stat(d).st_mode & 0o001:
                self.skipTest(f"{d} is not searchable by others: an unprivileged user cannot run weft")
            d = os.path.dirname(d)
        os.chmod(self.tmp, 0o777)
        data = os.path.join(self.tmp, "n.data")
        p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 WEFT, "record", "-o", data, "--sched", "--", SCHEDMIX], cwd=self.tmp)
        self.assertIn("schedmix done", p.stdout)
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            level = int(f.read())
        self.assertIn(f"weft: sched: full scheduling needs root (perf_event_paranoid {level}): recording the "
                      "program's own context switches\n", p.stderr)
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"sched:    the program's own context switches on \d+ CPUs \(no root\): \d+ records, 0 lost")
        pf = os.path.join(data, "trace.pftrace")
        self.tp_no_errors(pf)
        rows, = self.tp(pf, "select s.name, s.ts, s.dur from slice s join track t on s.track_id = t.id "
                            "where t.name like 'sleeper %: on/off CPU'")
        off = [r for r in rows if r["name"] == "off CPU"]
        self.assertTrue(any(r["name"] == "on CPU" for r in rows), rows)
        # every thread's track has a title: its name, or "thread TID" for one without a name
        titles, = self.tp(pf, "select name from track where name like '%on/off CPU'")
        for t in titles:
            self.assertRegex(t["name"], r"^\S.* \d+: on/off CPU$", titles)
        rows2, = self.tp(pf, "select ts, dur from slice where name = 'sleep'")
        sl = rows2[0]
        inside = sum(min(r["ts"] + r["dur"], sl["ts"] + sl["dur"]) - max(r["ts"], sl["ts"])
                     for r in off if r["ts"] < sl["ts"] + sl["dur"] and r["ts"] + r["dur"] > sl["ts"])
        self.assertGreaterEqual(inside, 40 * MS, (rows, sl))

    def test_bad_sched_threads(self):
        p = run([WEFT, "record", "--sched-threads", "0", "--", SCHEDMIX], check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "weft: record: bad value '0' for --sched-threads: expected 1 to 16 threads, "
                                   "cpu, core, package, numa or CPU lists such as 0-3/4-7 (threads reading the "
                                   "per-CPU rings)\n")

    @unittest.skipUnless(os.geteuid() == 0, "the tracepoints need root")
    def test_two_reader_threads(self):
        data = os.path.join(self.tmp, "t.data")
        run([WEFT, "record", "-q", "-o", data, "--sched", "--sched-threads", "2", "--", SCHEDMIX])
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"0 lost, (1 reader thread|2 reader threads)\n")
        # the readers are weft's threads, listed after the program's and not counted as its
        readers = re.findall(r'^  weft\'s thread \d+ "(weft-sched\S*)": ', info, re.M)
        self.assertIn("weft-sched", readers)
        program = re.findall(r'^  thread \d+ "([^"]*)": ', info, re.M)
        self.assertEqual(sorted(program), ["contend1", "contend2", "sleeper", "spinner"], info)
        self.assertRegex(info, r"\nthreads:    4 \(and %d of weft's\)\n" % len(readers))

    @unittest.skipUnless(os.geteuid() == 0, "the tracepoints need root")
    def test_reader_cpu_sets(self):
        # topology from tests/data/topology (2 packages x 2 cores x 2 threads: cores 0,4 1,5
        # 2,6 3,7; packages 0-1,4-5 and 2-3,6-7) over this machine's online CPUs; a CPU past 7
        # has no topology file there and is a set of its own
        sysfs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "topology", "sys")
        online = online_cpus()

        def expect(key):
            sets = {}
            for c in online:
                sets.setdefault(key(c), []).append(c)
            return [ranges(v) for v in sets.values()]
        cases = {"core": expect(lambda c: c % 4 if c < 8 else 100 + c),
                 "package": expect(lambda c: (0 if c % 4 < 2 else 2) if c < 8 else 100 + c),
                 "cpu": [str(c) for c in online]}
        if len(online) >= 2:
            a, b = online[1], online[0]
            cases[f"{a}/{b}"] = [ranges([a]), ranges([c for c in online if c != a])]
        for spec, sets in cases.items():
            data = os.path.join(self.tmp, "r-%s.data" % spec.replace("/", "_"))
            run([WEFT, "record", "-q", "-o", data, "--sched", "--sched-threads", spec, "--", SCHEDMIX],
                env={"WEFT_OPTIONS": f"sysfs_root={sysfs}"})
            info = run([WEFT, "info", data]).stdout
            got = re.findall(r"^ +reader (weft-sched\S*) +CPUs (\S+)$", info, re.M)
            want = [("weft-sched" if i == 0 else f"weft-sched-{i}", s) for i, s in enumerate(sets)]
            self.assertEqual(got, want, (spec, info))
            self.assertIn(f"{len(sets)} reader thread", info)
            self.assertNotIn("not pinned", info)


def online_cpus():
    out = []
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            a, _, b = part.partition("-")
            out += range(int(a), int(b or a) + 1)
    return out


def ranges(cpus):
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


if __name__ == "__main__":
    main()
