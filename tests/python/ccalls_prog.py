"""A program of tests/integration/test_python_calls.py for --python=c-calls: C functions called
a known number of times from known Python functions, in the main thread and in a thread
started after tracing began. Prints one line."""
import math
import sys
import threading

N, M, K = (int(a) for a in sys.argv[1:4])


def use_len(n):  # len x n (range is a type: not a C call)
    t = 0
    for _ in range(n):
        t += len("ab")
    return t


def use_append(m):  # list.append x m
    out = []
    for i in range(m):
        out.append(i)
    return len(out)


def use_sqrt(k):  # math.sqrt x k
    t = 0.0
    for i in range(k):
        t += math.sqrt(i)
    return t


def raises():  # math.sqrt x 1, left by an exception (C_EXCEPTION), caught here
    try:
        math.sqrt(-1)
    except ValueError:
        return 1
    return 0


def work(results):
    results.append((use_len(N), use_append(M), round(use_sqrt(K), 3), raises()))


main_results, thread_results = [], []
work(main_results)
t = threading.Thread(target=work, args=(thread_results,), name="late")
t.start()
t.join()
print("ccalls", main_results == thread_results, main_results[0])
