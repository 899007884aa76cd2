"""Four threads calling step() N times each: two started before Python call tracing starts (their
running frames have no slice; every step() they call afterwards does), two after. Run with
`weft record` (no --python: this program starts the tracer itself) or with plain python3."""
import sys
import threading

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100


def step(i):
    return i + 1


def worker(go):
    go.wait()
    t = 0
    for i in range(N):
        t = step(t)
    assert t == N


def main():
    go = threading.Event()
    early = [threading.Thread(target=worker, args=(go,), name=f"early{i}") for i in range(2)]
    for t in early:
        t.start()
    from weft import _record
    _record.start()
    late = [threading.Thread(target=worker, args=(go,), name=f"late{i}") for i in range(2)]
    for t in late:
        t.start()
    go.set()
    for t in early + late:
        t.join()
    print("threads", 4 * N)


main()
