"""Generators and coroutines for tests/integration/test_python_calls.py: a generator of 10
yields, a coroutine that awaits N times under asyncio (and the coroutines it awaits), an async
generator. `gens_prog.py N` runs them; `gens_prog.py N profile` runs them under a
sys.setprofile function of its own, untraced, and prints how many 'call' events each function
of this file got: what a profiler (cProfile is one) counts, which weft's slices must match."""
import asyncio
import json
import sys


def ten():
    for i in range(10):
        yield i


async def tick(i):
    await asyncio.sleep(0)
    return i


async def waits(n):
    total = 0
    for i in range(n):
        total += await tick(i)
    return total


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


async def use_agen(n):
    return [x async for x in agen(n)]


def main(n):
    a = sum(ten())
    b = asyncio.run(waits(n))
    c = asyncio.run(use_agen(3))
    print("gens", a, b, c)


if __name__ == "__main__":
    n = int(sys.argv[1])
    if sys.argv[2:] == ["profile"]:
        calls = {}
        here = __file__

        def count(frame, event, arg):
            if event == "call" and frame.f_code.co_filename == here:
                calls[frame.f_code.co_qualname] = calls.get(frame.f_code.co_qualname, 0) + 1

        sys.setprofile(count)
        main(n)
        sys.setprofile(None)
        print(json.dumps(calls, sort_keys=True))
    else:
        main(n)
