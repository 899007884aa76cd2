"""python3 -m weft [--c-calls] [--tasks] [-m MODULE | SCRIPT] [ARGS...] - runs a Python program
with every Python call recorded as a slice (weft._calltrace), into the trace directory of
WEFT_OPTIONS (default ./weft.data; `weft convert weft.data -o trace.pftrace` makes a file for
ui.perfetto.dev). --c-calls records the C functions Python code calls too, --tasks each
asyncio Task as an async slice (as weft record --python=c-calls,tasks).

The program runs as `python3 SCRIPT ARGS` would run it: as __main__, with sys.argv =
[SCRIPT, ARGS...] and the script's directory first on sys.path; its exit status is kept.
Threads it starts are traced too. Under `weft record --python` the hook is installed already
(and this just runs the program)."""
import os
import runpy
import sys

USAGE = "usage: python3 -m weft [--c-calls] [--tasks] [-m MODULE | SCRIPT] [ARGS...]"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    from weft import _record
    modes = {}
    while argv and argv[0] in ("--c-calls", "--tasks"):
        modes[argv[0][2:].replace("-", "_")] = True
        argv = argv[1:]
    if not argv:
        print(f"weft: {USAGE}", file=sys.stderr)
        return 2
    if argv[0] == "-m":
        if len(argv) < 2:
            print(f"weft: {USAGE}", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        _record.start(**modes)
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print(f"weft: cannot run '{script}': no such file", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    _record.start(**modes)
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
