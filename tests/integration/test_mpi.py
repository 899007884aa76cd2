"""libweft-mpi.so (src/mpi/, docs/mpi.md): `weft record -o D -- mpirun -np 4 ./mpi_app` under
Open MPI and MPICH, read back with trace_processor SQL. tests/mpi/mpi_app.c's messages are all
known: the test checks every rank's MPI slices and their arguments, one arrow per message
between the right slices of the right ranks, none backwards in time, the collectives' instance
numbers, the communicator ids (recomputed here from mpi-ids.h's formula) and the MPI records
(0 messages not drawn). Skipped where an MPI's compiler wrapper is absent."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import meta_records, BUILD, SRC, WEFT, TraceTest, main, run, sanitizer  # noqa: E402

APP = os.path.join(SRC, "tests", "mpi", "mpi_app.c")
FLAVORS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "4"], 1),
    "mpich": ("mpicc.mpich", ["mpirun.mpich", "-np", "4"], 2),
}
M64 = (1 << 64) - 1


# mpi-ids.h, in Python: the ids are recomputable from what both sides know
def fmix(x):
    x &= M64
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & M64
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & M64
    x ^= x >> 31
    return x


def mix(a, b, c):
    h = fmix(a + 0x9e3779b97f4a7c15)
    h = fmix(h ^ (b & M64))
    return fmix(h ^ (c & M64))


def comm_id(parent, n, root):
    return mix(parent, n, root) & 0x7fffffffffff


SLICES = """
select p.pid as pid, s.id as id, s.name as name, s.ts as ts, s.dur as dur,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_peer') as peer,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_tag') as tag,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_bytes') as bytes,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_comm') as comm,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_comm_size') as comm_size,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_root') as root,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_seq') as seq,
  (select int_value from args a where a.arg_set_id = s.arg_set_id and a.key = 'debug.mpi_messages') as messages
from slice s join thread_track tt on s.track_id = tt.id join thread using(utid) join process p using(upid)
where s.category = 'mpi' order by s.ts"""
# weft's clock sync slices, with their parent's category (NULL: at the thread's top, or under
# a function of the program's; never an MPI call)
SYNCS = """
select p.pid as pid, s.ts as ts, s.dur as dur,
  (select pp.category from slice pp where pp.id = s.parent_id) as parent_cat
from slice s join thread_track tt on s.track_id = tt.id join thread using(utid) join process p using(upid)
where s.name = 'weft: clock sync' order by s.ts"""
# an arrow ends on an instant `received` inside the completing call's slice (so that
# trace_processor orients it from the send): its parent is the completing slice
FLOWS = """select f.slice_out as slice_out, si.name as in_name,
  case when si.name = 'received' then si.parent_id else f.slice_in end as slice_in
from flow f join slice si on si.id = f.slice_in"""

SENDERS = {"MPI_Send", "MPI_Isend", "MPI_Sendrecv", "MPI_Startall", "MPI_Sendrecv_replace", "MPI_Start"}
COMPLETERS = {"MPI_Recv", "MPI_Waitall", "MPI_Sendrecv", "MPI_Mrecv", "MPI_Test", "MPI_Sendrecv_replace",
              "MPI_Waitany", "MPI_Wait", "MPI_Waitsome"}


def expected_counts(r):
    """MPI slices of rank r in mpi_app.c (MPI_Test: at least 1, counted apart)."""
    c = {"MPI_Init": 1, "MPI_Irecv": 3, "MPI_Isend": 4, "MPI_Waitall": 3, "MPI_Sendrecv": 1,
         "MPI_Comm_split": 1, "MPI_Allreduce": 2, "MPI_Comm_free": 1, "MPI_Bcast": 1, "MPI_Reduce": 1,
         "MPI_Gather": 1, "MPI_Send_init": 1, "MPI_Recv_init": 1, "MPI_Startall": 2,
         "MPI_Request_free": 2, "MPI_Mprobe": 1, "MPI_Mrecv": 1, "MPI_Wait": 2, "MPI_Barrier": 1,
         "MPI_Finalize": 1}
    c["MPI_Send"] = 1 + (r in (0, 1)) + (r > 0)    # ring, split (its rank 0), tag 5
    c["MPI_Recv"] = 1 + (r in (2, 3)) + 3 * (r == 0)
    if r == 0:
        c["MPI_Probe"] = 3
    return c


class MpiTest(TraceTest):
    apps = {}

    def app(self, flavor):
        cc = FLAVORS[flavor][0]
        if not shutil.which(cc) or not shutil.which(FLAVORS[flavor][1][0]):
            self.skipTest(f"{cc} or {FLAVORS[flavor][1][0]} not installed")
        if sanitizer():
            self.skipTest("the MPI launchers are not built with the sanitizer")
        if flavor not in MpiTest.apps:
            out = os.path.join(BUILD, f"mpi_app_{flavor}")
            run([cc, "-O1", "-Wno-stringop-overflow", "-o", out, APP])
            MpiTest.apps[flavor] = out
        return MpiTest.apps[flavor]

    def record_job(self, flavor, *opts):
        app = self.app(flavor)
        data = os.path.join(self.tmp, "run.data")
        run([WEFT, "record", "-q", "-o", data, *opts, "--", *FLAVORS[flavor][1], app], timeout=120)
        return data

    def check_job(self, flavor):
        data = self.record_job(flavor)
        trace = os.path.join(data, "trace.pftrace")
        slices, flows, syncs = self.tp(trace, SLICES, FLOWS, SYNCS)
        self.tp_no_errors(trace)
        by_id = {s["id"]: s for s in slices}
        pids = sorted({s["pid"] for s in slices})
        self.assertEqual(len(pids), 4, pids)
        # weft's clock sync: its own two slices per rank, after MPI_Init's end and before
        # MPI_Finalize's begin, inside none of the program's MPI calls (before, the ping-pongs
        # ran inside MPI_Init and MPI_Finalize: seconds of them on an oversubscribed node)
        for pid in pids:
            mine = [s for s in syncs if s["pid"] == pid]
            self.assertEqual([s["parent_cat"] for s in mine], [None, None], mine)
            init = next(s for s in slices if s["pid"] == pid and s["name"] == "MPI_Init")
            fin = next(s for s in slices if s["pid"] == pid and s["name"] == "MPI_Finalize")
            self.assertLessEqual(init["ts"] + init["dur"], mine[0]["ts"])
            self.assertLessEqual(mine[1]["ts"] + mine[1]["dur"], fin["ts"])
        info = run([WEFT, "info", data]).stdout
        self.assertEqual(len(re.findall(r"\n  clock sync: phase 0 [0-9.]+ ms \((the reference|\d+ round trips, best "
                                        r"[0-9.]+ us)\), phase 1 [0-9.]+ ms .*; weft's own slices \(weft: clock sync\), "
                                        r"outside the program's MPI calls\n", info)), 4, info)
        # report --mpi: that time is neither in MPI nor the program's own (Outside)
        j = json.loads(run([WEFT, "report", "--mpi", "-f", "json", data]).stdout)
        for rk in j["ranks"]:
            self.assertGreater(rk["weft_sync_ns"], 0, rk)
            self.assertEqual(rk["outside_ns"], max(0, rk["span_ns"] - rk["mpi_ns"] - rk["weft_sync_ns"]), rk)
        # each rank: the ring's MPI_Send goes to rank + 1
        rank = {}
        for pid in pids:
            first = next(s for s in slices if s["pid"] == pid and s["name"] == "MPI_Send")
            rank[pid] = (first["peer"] - 1) % 4
        self.assertEqual(sorted(rank.values()), [0, 1, 2, 3])
        for pid in pids:
            r = rank[pid]
            mine = [s for s in slices if s["pid"] == pid]
            got = {}
            for s in mine:
                got[s["name"]] = got.get(s["name"], 0) + 1
            tests = got.pop("MPI_Test", 0)
            self.assertGreaterEqual(tests, 1)
            self.assertEqual(got, expected_counts(r), f"rank {r}")
            sends = [s for s in mine if s["name"] == "MPI_Send"]
            recvs = [s for s in mine if s["name"] == "MPI_Recv"]
            # 1: the ring
            self.assertEqual((sends[0]["peer"], sends[0]["tag"], sends[0]["bytes"], sends[0]["comm"],
                              sends[0]["comm_size"]), ((r + 1) % 4, 1, 4, 0, 4))
            self.assertEqual((recvs[0]["peer"], recvs[0]["tag"], recvs[0]["bytes"]), ((r + 3) % 4, 1, 4))
            # 2: the exchange's Waitall completed two receives of 32 bytes
            wa = [s for s in mine if s["name"] == "MPI_Waitall"]
            self.assertEqual((wa[0]["messages"], wa[0]["bytes"]), (2, 64))
            self.assertEqual([(w["messages"], w["bytes"], w["peer"]) for w in wa[1:]],
                             [(1, 4, (r + 3) % 4)] * 2)  # persistent: one receive each
            # 3: Sendrecv with rank ^ 1
            sr, = [s for s in mine if s["name"] == "MPI_Sendrecv"]
            self.assertEqual((sr["peer"], sr["tag"], sr["bytes"], sr["comm"]), (r ^ 1, 3, 32, 0))
            # 4: the split communicator: its id is mix(WORLD, 1st creation, its rank 0)
            sub = comm_id(0, 1, r % 2)
            if r in (0, 1):
                self.assertEqual((sends[1]["peer"], sends[1]["tag"], sends[1]["bytes"], sends[1]["comm"],
                                  sends[1]["comm_size"]), (r + 2, 4, 8, sub, 2))
            else:
                self.assertEqual((recvs[1]["peer"], recvs[1]["tag"], recvs[1]["bytes"], recvs[1]["comm"]),
                                 (r - 2, 4, 8, sub))
            colls = [(s["name"], s["comm"], s["seq"], s["root"], s["bytes"], s["comm_size"]) for s in mine
                     if s["name"] in ("MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Gather", "MPI_Barrier")]
            self.assertEqual(colls, [("MPI_Allreduce", sub, 1, None, 4, 2), ("MPI_Bcast", 0, 1, 1, 4, 4),
                                     ("MPI_Reduce", 0, 2, 2, 4, 4), ("MPI_Allreduce", 0, 3, None, 8, 4),
                                     ("MPI_Gather", 0, 4, 0, 4, 4), ("MPI_Barrier", 0, 5, None, 0, 4)])
            # 5: rank 0's ANY_SOURCE receives name their actual sources
            if r == 0:
                self.assertEqual(sorted((s["peer"], s["bytes"], s["tag"]) for s in recvs[1:]),
                                 [(1, 4, 5), (2, 8, 5), (3, 12, 5)])
            # 8: the matched probe's receive
            mr, = [s for s in mine if s["name"] == "MPI_Mrecv"]
            self.assertEqual((mr["peer"], mr["tag"], mr["bytes"]), ((r + 3) % 4, 8, 12))
        # 3. one arrow per message: 4 ring + 8 exchange + 4 Sendrecv + 2 split + 3 ANY_SOURCE + 8
        # persistent + 4 matched probe + 4 test loop
        self.check_flows(flows, by_id, rank, {
            ("MPI_Recv", "MPI_Send"): 9, ("MPI_Isend", "MPI_Waitall"): 8, ("MPI_Sendrecv", "MPI_Sendrecv"): 4,
            ("MPI_Startall", "MPI_Waitall"): 8, ("MPI_Isend", "MPI_Mrecv"): 4, ("MPI_Isend", "MPI_Test"): 4})
        recs = self.check_records(data, flavor, 37)
        self.assertEqual({v[3] for v in recs.values()}, {0})  # no Fortran

    def check_flows(self, flows, by_id, rank, expected):
        self.assertEqual(len(flows), sum(expected.values()))
        pairs = {}
        for f in flows:
            a, b = by_id[f["slice_out"]], by_id[f["slice_in"]]
            self.assertNotEqual(a["pid"], b["pid"])
            # every arrow points from the sending call to the instant where the message arrived
            self.assertEqual(f["in_name"], "received", (a, b))
            s, d = a, b
            self.assertIn(s["name"], SENDERS, (a, b))
            self.assertIn(d["name"], COMPLETERS, (a, b))
            # causality: the receive completes after the send began
            self.assertLessEqual(s["ts"], d["ts"] + d["dur"], (s, d))
            if d["peer"] is not None:
                self.assertEqual(d["peer"], rank[s["pid"]], (s, d))
            key = tuple(sorted((s["name"], d["name"])))
            pairs[key] = pairs.get(key, 0) + 1
        self.assertEqual(pairs, expected)

    def check_records(self, data, flavor, messages):
        """The MPI records (final counts: `messages` sent and received in all, none undrawn) and
        the CLOCK_SYNC ones; returns the MPI records by rank."""
        # the MPI records: final counts, 37 sent and received in all, none undrawn
        recs = {}
        syncs = []
        for name in os.listdir(data):
            if name.endswith(".wmeta"):
                for t, p in meta_records(os.path.join(data, name)):
                    if t == 33:
                        recs[struct.unpack_from("<I", p)[0]] = struct.unpack_from("<IIIIQQQQ", p)
                    elif t == 34:
                        syncs.append(struct.unpack_from("<IIqQQII", p))
        self.assertEqual(sorted(recs), [0, 1, 2, 3])
        self.assertEqual({v[1] for v in recs.values()}, {4})
        self.assertEqual({v[2] for v in recs.values()}, {FLAVORS[flavor][2]})
        self.assertEqual(sum(v[5] for v in recs.values()), messages)
        self.assertEqual(sum(v[6] for v in recs.values()), messages)
        self.assertEqual([v[7] for v in recs.values()], [0] * 4)
        # weft info says so: each rank, 0 not drawn; every message between processes forward in time
        info = run([WEFT, "info", data]).stdout
        lines = re.findall(r"^  mpi: +rank (\d) of 4, (Open MPI|MPICH).*, (\d+) not drawn", info, re.M)
        self.assertEqual(sorted(lines), [(str(r), "Open MPI" if flavor == "openmpi" else "MPICH", "0")
                                         for r in range(4)], info)
        self.assertIn(f"messages:   {messages} between processes", info)
        self.assertIn(" 0 backwards in time, 0 flows without their other end", info)
        # CLOCK_SYNC: phases 0 and 1 on every rank; one host, one clock: the true offset is 0, so
        # each measured one is within half its round trip (oversubscribed ranks can make that long)
        self.assertEqual(sorted(s[0] for s in syncs), [0] * 4 + [1] * 4)
        self.assertTrue(all(abs(s[2]) <= s[4] // 2 + 1000 for s in syncs), syncs)
        # 10 round trips each, more where none took under 200 us (an oversubscribed node)
        self.assertEqual(sorted(min(s[5], 10) for s in syncs), [0, 0] + [10] * 6)
        # (more than 10: until one took under 200 us, or 100, or 100 ms with that peer)
        self.assertTrue(all(10 <= s[5] <= 100 for s in syncs if s[5]), syncs)
        # what each phase took here, weft's own time (us; the reference's too)
        self.assertTrue(all(s[6] > 0 for s in syncs), syncs)
        return recs

    def check_fortran(self, flavor):
        fc = "mpifort." + ("openmpi" if flavor == "openmpi" else "mpich")
        if not shutil.which(fc):
            self.skipTest(f"{fc} not installed")
        self.app(flavor)
        exe = os.path.join(self.tmp, "fapp")
        run([fc, "-o", exe, os.path.join(SRC, "tests", "mpi", "mpi_app.f90")])
        data = os.path.join(self.tmp, "run.data")
        run([WEFT, "record", "-q", "-o", data, "--", *FLAVORS[flavor][1], exe], timeout=120)
        slices, flows = self.tp(os.path.join(data, "trace.pftrace"), SLICES, FLOWS)
        by_id = {s["id"]: s for s in slices}
        rank = {}
        for pid in sorted({s["pid"] for s in slices}):
            first = next(s for s in slices if s["pid"] == pid and s["name"] == "MPI_Send")
            rank[pid] = (first["peer"] - 1) % 4
        self.assertEqual(sorted(rank.values()), [0, 1, 2, 3])
        for pid, r in rank.items():
            mine = [s for s in slices if s["pid"] == pid]
            got = {}
            for s in mine:
                got[s["name"]] = got.get(s["name"], 0) + 1
            # each call once: MPICH's Fortran library calls MPI_X, not recorded again
            self.assertEqual(got, {"MPI_Init": 1, "MPI_Send": 1, "MPI_Recv": 1, "MPI_Irecv": 2, "MPI_Isend": 2,
                                   "MPI_Waitall": 1, "MPI_Sendrecv": 1, "MPI_Comm_split": 1, "MPI_Allreduce": 1,
                                   "MPI_Comm_free": 1, "MPI_Bcast": 1, "MPI_Reduce": 1, "MPI_Barrier": 1,
                                   "MPI_Finalize": 1}, f"rank {r}")
            recv, = [s for s in mine if s["name"] == "MPI_Recv"]
            self.assertEqual((recv["peer"], recv["tag"], recv["bytes"]), ((r + 3) % 4, 1, 4))
            sr, = [s for s in mine if s["name"] == "MPI_Sendrecv"]
            self.assertEqual((sr["peer"], sr["tag"], sr["bytes"]), (r ^ 1, 3, 32))
            wa, = [s for s in mine if s["name"] == "MPI_Waitall"]
            self.assertEqual((wa["messages"], wa["bytes"]), (2, 64))
            colls = [(s["name"], s["comm"], s["seq"], s["root"]) for s in mine
                     if s["name"] in ("MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Barrier")]
            self.assertEqual(colls, [("MPI_Allreduce", comm_id(0, 1, r % 2), 1, None), ("MPI_Bcast", 0, 1, 1),
                                     ("MPI_Reduce", 0, 2, 2), ("MPI_Barrier", 0, 3, None)])
        self.check_flows(flows, by_id, rank, {("MPI_Recv", "MPI_Send"): 4, ("MPI_Isend", "MPI_Waitall"): 8,
                                              ("MPI_Sendrecv", "MPI_Sendrecv"): 4})
        recs = self.check_records(data, flavor, 16)
        self.assertEqual({v[3] for v in recs.values()}, {1})  # WEFT_MPI_F_FORTRAN

    def test_fortran_openmpi(self):
        self.check_fortran("openmpi")

    def test_fortran_mpich(self):
        self.check_fortran("mpich")

    def check_more(self, flavor):
        """mpi_more.c: Init_thread, one-sided calls, an ambiguous match (no arrow, counted not
        drawn), Comm_dup."""
        self.app(flavor)
        exe = os.path.join(self.tmp, "more")
        run([FLAVORS[flavor][0], "-O1", "-Wno-stringop-overflow", "-o", exe,
             os.path.join(SRC, "tests", "mpi", "mpi_more.c")])
        data = os.path.join(self.tmp, "run.data")
        run([WEFT, "record", "-q", "-o", data, "--", *FLAVORS[flavor][1], exe], timeout=120)
        slices, flows = self.tp(os.path.join(data, "trace.pftrace"), SLICES, FLOWS)
        rank = {}
        for pid in sorted({s["pid"] for s in slices}):
            put = next(s for s in slices if s["pid"] == pid and s["name"] == "MPI_Put")
            rank[pid] = (put["peer"] - 1) % 4
        self.assertEqual(sorted(rank.values()), [0, 1, 2, 3])
        dup = comm_id(0, 1, 0)
        for pid, r in rank.items():
            mine = [s for s in slices if s["pid"] == pid]
            got = {}
            for s in mine:
                got[s["name"]] = got.get(s["name"], 0) + 1
            self.assertGreaterEqual(got.pop("MPI_Iprobe"), 1)
            self.assertGreaterEqual(got.pop("MPI_Improbe"), 1)
            self.assertGreaterEqual(got.pop("MPI_Waitsome"), 1)
            want = {"MPI_Init_thread": 1, "MPI_Win_create": 1, "MPI_Win_fence": 4, "MPI_Put": 1, "MPI_Win_lock": 1,
                    "MPI_Get": 1, "MPI_Win_unlock": 1, "MPI_Accumulate": 1, "MPI_Win_free": 1, "MPI_Barrier": 2,
                    "MPI_Comm_dup": 1, "MPI_Comm_free": 1, "MPI_Finalize": 1, "MPI_Sendrecv_replace": 1,
                    "MPI_Irecv": 3, "MPI_Isend": 5, "MPI_Waitany": 4, "MPI_Send": 2, "MPI_Recv": 4, "MPI_Imrecv": 1,
                    "MPI_Wait": 5, "MPI_Send_init": 1, "MPI_Start": 1, "MPI_Request_free": 1, "MPI_Iallreduce": 1}
            want["MPI_Comm_dup"] += 1
            want["MPI_Comm_free"] += 1 + (r < 2)
            want["MPI_Barrier"] += 1 + (r < 2)
            if r < 2:
                want["MPI_Comm_create_group"] = 1
            if r == 0:
                want["MPI_Send"] += 2
            if r == 1:
                want["MPI_Irecv"] += 2
                want["MPI_Waitall"] = 1
            self.assertEqual(got, want, f"rank {r}")
            sr, = [s for s in mine if s["name"] == "MPI_Sendrecv_replace"]
            self.assertEqual((sr["peer"], sr["tag"], sr["bytes"]), (r ^ 1, 11, 8))
            anys = [(s["messages"], s["peer"]) for s in mine if s["name"] == "MPI_Waitany"]
            self.assertEqual(sorted(anys, key=str), sorted([(1, (r + 3) % 4), (1, (r + 1) % 4), (None, None),
                                                            (None, None)], key=str))
            one = {s["name"]: s for s in mine}
            self.assertEqual((one["MPI_Put"]["bytes"], one["MPI_Put"]["comm"], one["MPI_Put"]["comm_size"]), (8, 0, 4))
            self.assertEqual((one["MPI_Get"]["peer"], one["MPI_Get"]["bytes"]), ((r + 3) % 4, 4))
            self.assertEqual((one["MPI_Win_lock"]["peer"], one["MPI_Win_unlock"]["peer"]), ((r + 3) % 4,) * 2)
            self.assertEqual((one["MPI_Accumulate"]["peer"], one["MPI_Accumulate"]["bytes"]), (0, 4))
            barriers = [(s["comm"], s["seq"]) for s in mine if s["name"] == "MPI_Barrier"]
            # the group's communicator leaves WORLD's creation count alone: the second Comm_dup
            # is WORLD's second creation call on every rank
            self.assertEqual(barriers, [(0, 1), (dup, 1)] + [(comm_id(0, (1 << 40) | 5, 0), 1)] * (r < 2) +
                             [(comm_id(0, 2, 0), 1)])
            self.assertEqual((one["MPI_Iallreduce"]["comm"], one["MPI_Iallreduce"]["seq"],
                              one["MPI_Iallreduce"]["bytes"]), (0, 2, 8))
            if r == 1:
                self.assertEqual((one["MPI_Waitall"]["messages"], one["MPI_Waitall"]["bytes"]), (2, 8))
        # the two messages of tag 6 cannot be matched for sure: no arrow; the rest one each
        self.check_flows(flows, {s["id"]: s for s in slices}, rank, {
            ("MPI_Sendrecv_replace", "MPI_Sendrecv_replace"): 4, ("MPI_Isend", "MPI_Waitany"): 8,
            ("MPI_Recv", "MPI_Send"): 8, ("MPI_Isend", "MPI_Wait"): 4, ("MPI_Recv", "MPI_Start"): 4,
            ("MPI_Isend", "MPI_Waitsome"): 4, ("MPI_Isend", "MPI_Recv"): 4})
        undrawn = {}
        for name in os.listdir(data):
            if name.endswith(".wmeta"):
                for t, p in meta_records(os.path.join(data, name)):
                    if t == 33:
                        v = struct.unpack_from("<IIIIQQQQ", p)
                        undrawn[v[0]] = (v[5], v[6], v[7])
        info = run([WEFT, "info", data]).stdout
        self.assertEqual(sorted(re.findall(r"^  mpi: +rank (\d) of 4.* (\d+) not drawn", info, re.M)),
                         [("0", "0"), ("1", "2"), ("2", "0"), ("3", "0")], info)
        # of tag 6, rank 0 sent 2, rank 1 received both, neither drawn: said once each, on rank 1;
        # then 7 messages from each rank, 7 received by each
        self.assertEqual(undrawn, {0: (11, 9, 0), 1: (9, 9, 2), 2: (9, 9, 0), 3: (9, 9, 0)})

    def test_filtered(self):
        """-N MPI_Isend: no Isend slices and no arrows from them, but the Isends are still
        counted, so the MPI_Send that follows one on the same quadruple (tag 20) is the second
        message: its arrow ends at the second MPI_Recv, not the first."""
        self.app("mpich")
        exe = os.path.join(self.tmp, "more")
        run([FLAVORS["mpich"][0], "-O1", "-Wno-stringop-overflow", "-o", exe,
             os.path.join(SRC, "tests", "mpi", "mpi_more.c")])
        data = os.path.join(self.tmp, "run.data")
        run([WEFT, "record", "-q", "-o", data, "-N", "MPI_Isend", "--", *FLAVORS["mpich"][1], exe], timeout=120)
        slices, flows = self.tp(os.path.join(data, "trace.pftrace"), SLICES, FLOWS)
        self.assertEqual([s for s in slices if s["name"] == "MPI_Isend"], [])
        by_id = {s["id"]: s for s in slices}
        recv20 = {}
        for s in slices:
            if s["name"] == "MPI_Recv" and s["tag"] == 20:
                recv20.setdefault(s["pid"], []).append(s["id"])
        self.assertEqual(sorted(len(v) for v in recv20.values()), [2] * 4)
        ends = []
        for f in flows:
            ids = {f["slice_out"], f["slice_in"]}
            for pid, (first, second) in recv20.items():
                if first in ids or second in ids:
                    other = by_id[(ids - {first, second}).pop()]
                    self.assertEqual(other["name"], "MPI_Send")
                    ends.append(second in ids)
        self.assertEqual(ends, [True] * 4)

    def test_more_openmpi(self):
        self.check_more("openmpi")

    def test_more_mpich(self):
        self.check_more("mpich")

    def test_openmpi(self):
        self.check_job("openmpi")

    def test_mpich(self):
        self.check_job("mpich")

    def test_mpi_off(self):
        """--mpi=off: the calls pass through, nothing is recorded; the MPI record says off."""
        data = self.record_job("mpich", "--mpi=off")
        n, = self.tp(os.path.join(data, "trace.pftrace"), "select count(*) as n from slice where category = 'mpi'")
        self.assertEqual(n, [{"n": 0}])
        recs = [(t, p) for name in os.listdir(data) if name.endswith(".wmeta")
                for t, p in meta_records(os.path.join(data, name)) if t in (33, 34)]
        flags = [struct.unpack_from("<IIII", p)[3] for t, p in recs if t == 33]
        self.assertEqual(flags, [2] * 8)  # WEFT_MPI_F_OFF, after Init and at Finalize, 4 ranks
        # the clocks are still measured (every rank must take part): phases 0 and 1 everywhere
        self.assertEqual(sorted(struct.unpack_from("<I", p)[0] for t, p in recs if t == 34), [0] * 4 + [1] * 4)

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build (TSan)")
    def test_without_mpi(self):
        """A program without MPI that calls MPI_Send (found at run time) gets an error back."""
        src = os.path.join(self.tmp, "nompi.c")
        with open(src, "w") as f:
            f.write('#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stdio.h>\n'
                    'int main(void) { int (*s)(const void *, int, long, int, int, long) = '
                    '(int (*)(const void *, int, long, int, int, long))dlsym(RTLD_DEFAULT, "MPI_Send");\n'
                    'int rc = s ? s("", 1, 0, 1, 0, 0) : -1; printf("%d\\n", rc); return 0; }\n')
        exe = os.path.join(self.tmp, "nompi")
        run(["cc", "-o", exe, src, "-ldl"])
        p = run([WEFT, "record", "-q", "-o", os.path.join(self.tmp, "d"), "--", exe])
        self.assertNotIn(p.stdout.strip(), ("0", "-1"))  # an MPI error code: 15 (MPICH's ERR_OTHER)
        self.assertEqual(p.stdout.strip(), "15")


if __name__ == "__main__":
    main()
