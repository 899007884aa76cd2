"""The workload of calls_bench.py: `fib N` (fib(25) makes 242785 calls), `loop N` (N calls of
a function that does nothing) or `len N` (N calls of the builtin len, a C function, from one
Python function); N = 0 measures the start-up and exit alone."""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def nothing():
    pass


def loop(n):
    for _ in range(n):
        nothing()


def lens(n):
    s = "ab"
    for _ in range(n):
        len(s)


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    if kind == "fib":
        fib(n) if n else None
    elif kind == "len":
        lens(n)
    else:
        loop(n)


main()
