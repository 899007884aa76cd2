"""A program of tests/integration/test_python_calls.py for --python=tasks: three named
coroutines gathered, each awaiting asyncio.sleep(0) twice (so each task runs in 3 steps), and
one task whose exception the program catches, one named by the program. Prints one line per part."""
import asyncio


async def alpha():
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return "a"


async def beta():
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return "b"


async def gamma():
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return "c"


async def delta():
    return "d"


async def fails():
    await asyncio.sleep(0)
    raise KeyError("k")


async def main():
    print("gather", await asyncio.gather(alpha(), beta(), gamma()))
    try:
        await asyncio.create_task(fails())
    except KeyError as e:
        print("caught", repr(e))
    task = asyncio.create_task(delta(), name="named")
    await task
    print("name", task.get_name(), type(task).__name__)


asyncio.run(main())
