#!/usr/bin/python3
"""Where a traced Python call's time goes, in the calling thread alone: thread CPU time
(time.thread_time_ns, the writer thread not counted) per call of an empty function, 1M calls
in the process, for one MODE: plain (untraced), weft (weft._record.start(): every call
recorded), none (the same with WEFT_OPTIONS filter=no-such-function: the hook's floor),
cprof (cProfile), noop (3.12+: a Python-level no-op sys.monitoring callback for PY_START
and PY_RETURN). Prints "MODE ns/call". Run each mode a few times, interleaved:
  for m in plain weft none cprof; do PYTHONPATH=build/python WEFT_OPTIONS=output=/tmp/f.data \\
    /usr/bin/python3 bench/python/calls_floor.py $m; done
(for none: WEFT_OPTIONS=output=/tmp/f.data:filter=no-such-function)."""
import sys
import time

N = 1000000


def nothing():
    pass


def loop(n):
    for _ in range(n):
        nothing()


def main(mode):
    if mode in ("weft", "none"):
        from weft import _record
        _record.start()
    elif mode == "cprof":
        import cProfile
        cProfile.Profile().enable()
    elif mode == "noop":
        m = sys.monitoring
        m.use_tool_id(4, "noop")
        for ev in (m.events.PY_START, m.events.PY_RETURN):
            m.register_callback(4, ev, lambda *a: None)
        m.set_events(4, m.events.PY_START | m.events.PY_RETURN)
    elif mode != "plain":
        raise SystemExit(f"unknown mode {mode}")
    t = time.thread_time_ns()
    loop(N)
    t = time.thread_time_ns() - t
    print(mode, round(t / N, 1))


main(sys.argv[1] if len(sys.argv) > 1 else "plain")
