"""A program with profile functions of its own, for tests/integration/test_python_calls.py:
`setprofile_prog.py N` calls use_len(N) (N calls of the builtin len) with no profile
function, under sys.setprofile(mine), with none again, under cProfile, and in a thread under
sys.setprofile(mine); prints what its own profilers saw (len calls) and what
sys.getprofile() says, which must not depend on whether weft records it."""
import cProfile
import pstats
import sys
import threading

counts = {}


def mine(frame, event, arg):
    if event == "c_call":
        counts[arg.__name__] = counts.get(arg.__name__, 0) + 1


def use_len(n):
    s = "ab"
    for _ in range(n):
        len(s)


def in_thread(n):
    sys.setprofile(mine)
    use_len(n)
    sys.setprofile(None)


def main(n):
    use_len(n)
    sys.setprofile(mine)
    seen = sys.getprofile() is mine
    use_len(n)
    sys.setprofile(None)
    seen = seen and sys.getprofile() is None
    use_len(n)
    prof = cProfile.Profile()
    prof.enable()
    use_len(n)
    prof.disable()
    t = threading.Thread(target=in_thread, args=(n,), name="other")
    t.start()
    t.join()
    by_cprofile = sum(v[1] for (f, l, name), v in pstats.Stats(prof).stats.items() if "len" in name)
    print("setprofile", counts.get("len"), by_cprofile, seen, sys.getprofile())


main(int(sys.argv[1]))
