"""The Python program of tests/integration/test_python_calls.py: calls whose numbers are known
exactly (the test counts the slices of each function). Prints one line per part."""
import asyncio
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def run_fib():  # 21891 calls of fib, 20 deep
    return fib(20)


class Klass:
    def method(self, x):
        return x + 1

    @staticmethod
    def static(x):
        return x * 2

    @classmethod
    def klass(cls, x):
        return x - 1


def outer(k):
    def inner(x):
        return x + k
    return inner


def run_misc():  # Klass.method x7, Klass.static x4, Klass.klass x3, inner x5, lambda x3
    k = Klass()
    t = sum(k.method(i) for i in range(7))  # the genexpr: 8 resumptions
    t += sum(Klass.static(i) for i in range(4))
    t += sum([Klass.klass(i) for i in range(3)])  # a listcomp: its own code object, one call
    f = outer(10)
    for i in range(5):
        t += f(i)
    t += sum(map(lambda x: x * 3, range(3)))
    return t


def gen(n):
    for i in range(n):
        yield i


def run_gen():  # gen: 6 resumptions for 5 values (the last one ends it)
    return list(gen(5))


async def leaf(i):
    await asyncio.sleep(0)
    return i


async def gathered():
    return await asyncio.gather(leaf(0), leaf(1), leaf(2))


def run_async():  # leaf: 3 coroutines, each started and resumed once after sleep(0)
    return asyncio.run(gathered())


def raiser(n):
    if n == 0:
        raise ValueError("deep")
    raiser(n - 1)


def catch_at(depth):
    try:
        raiser(depth)
    except ValueError:
        return 1
    return 0


def run_exc():  # catch_at x4 (normal exits), raiser 1+2+3+4 = 10 (all by exception)
    return sum(catch_at(d) for d in range(4))


def main():
    print("fib", run_fib())
    print("misc", run_misc())
    print("gen", run_gen())
    print("async", run_async())
    print("exc", run_exc())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
