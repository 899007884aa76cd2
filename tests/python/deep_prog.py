"""Deep recursion for tests/integration/test_python_calls.py: `deep_prog.py N` raises the
recursion limit and recurses N deep in the main thread, in a thread with a small stack
(threading.stack_size) and in a generator chain; CPython 3.11 runs such Python-to-Python calls
without C recursion, so untraced this fits any C stack."""
import sys
import threading


def down(n):
    return 0 if n == 0 else 1 + down(n - 1)


def thread_down(n):
    return 0 if n == 0 else 1 + thread_down(n - 1)


def nested(n):  # each level a generator resumed by the one above it (C recursion in 3.11 too)
    if n:
        yield from nested(n - 1)
    yield n


def main(n):
    sys.setrecursionlimit(5 * n + 1000)
    got = {}
    threading.stack_size(256 << 10)
    t = threading.Thread(target=lambda: got.setdefault("thread", thread_down(n)), name="deep")
    t.start()
    t.join()
    print("deep", down(n), got["thread"], next(nested(n // 4)))


main(int(sys.argv[1]))
