#!/usr/bin/python3
"""gen_ranks.py SRC N OUT [--per-host K]: a generated N-rank trace directory for scale runs.

Clones the processes of a recorded job directory SRC (its ranks, in rank order) into OUT until
it holds N ranks: rank i is a copy of SRC's rank i % S, with pid 100000 + i, host
`nodeH` (H = i // K, K ranks per host, default 16), and its JOB and MPI records' rank set to i
(world size N). The copies' events are the recorded ones, byte for byte (so each rank's cost
to convert is real); their message arrows repeat the recorded flow ids, so arrows of different
copies share ids: a scale run measures conversion time and memory, not matching.
"""
import os
import struct
import sys

M_PROCESS, M_JOB, M_MPI = 1, 32, 33


def records(data):
    off = 32
    while off + 8 <= len(data):
        typ, _, ln = struct.unpack_from("<HHI", data, off)
        if off + 8 + ln > len(data):
            break
        yield typ, data[off + 8:off + 8 + ln]
        off += 8 + ln
    if off < len(data):
        yield None, data[off:]


def rewrite_meta(data, pid, host, rank, size):
    out = bytearray(data[:32])
    struct.pack_into("<I", out, 16, pid)
    for typ, payload in records(data):
        if typ is None:
            out += payload
            continue
        p = bytearray(payload)
        if typ == M_PROCESS and len(p) >= 16:
            struct.pack_into("<I", p, 0, pid)
            end = p.index(0, 16) if 0 in p[16:] else len(p)
            p = p[:16] + host.encode() + p[end:]
        elif typ == M_JOB and len(p) >= 16:
            struct.pack_into("<II", p, 0, rank, size)
        elif typ == M_MPI and len(p) >= 8:
            struct.pack_into("<II", p, 0, rank, size)
        out += struct.pack("<HHI", typ, 0, len(p)) + p
    return bytes(out)


def source_ranks(src):
    """(rank, stem, files) of each process of SRC that has a rank, in rank order."""
    procs = {}
    for name in sorted(os.listdir(src)):
        if name.endswith(".wmeta"):
            stem = name[:-6]
            with open(os.path.join(src, name), "rb") as f:
                data = f.read()
            rank = None
            for typ, payload in records(data):
                if typ in (M_JOB, M_MPI) and len(payload) >= 4:
                    r = struct.unpack_from("<I", payload, 0)[0]
                    if r != 0xFFFFFFFF and (rank is None or typ == M_MPI):
                        rank = r
            if rank is not None:
                procs[rank] = stem
    out = []
    for rank in sorted(procs):
        stem = procs[rank]
        evs = [n for n in os.listdir(src) if n.startswith(stem + "-") and n.endswith(".wevents")
               and n[len(stem) + 1:-8].isdigit()]
        out.append((rank, stem, sorted(evs)))
    return out


def main():
    args = sys.argv[1:]
    per_host = 16
    if "--per-host" in args:
        i = args.index("--per-host")
        per_host = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    src, n, out = args[0], int(args[1]), args[2]
    ranks = source_ranks(src)
    if not ranks:
        sys.exit("gen_ranks: %s holds no process with a rank" % src)
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        _, stem, evs = ranks[i % len(ranks)]
        pid, host = 100000 + i, "node%d" % (i // per_host)
        new = "%s-r%d-%d" % (host, i, pid)
        with open(os.path.join(src, stem + ".wmeta"), "rb") as f:
            meta = f.read()
        with open(os.path.join(out, new + ".wmeta"), "wb") as f:
            f.write(rewrite_meta(meta, pid, host, i, n))
        for ev in evs:
            with open(os.path.join(src, ev), "rb") as f:
                data = bytearray(f.read())
            struct.pack_into("<I", data, 16, pid)
            with open(os.path.join(out, new + ev[len(stem):]), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
