"""weft.h as C and C++: every macro and function compiles with gcc/g++ and clang/clang++ over
the supported standards with warnings as errors (tests/compile/use_all.c, use_all.cpp), records
what it says, links without -lweft under -DWEFT_DISABLE, and, built with -finstrument-
functions, records none of weft's own inline helpers as the program's functions."""
import glob
import json
import os
import shutil
import unittest
from weftlib import TraceTest, main, run, WEFT, BUILD, SRC

INC = os.path.join(SRC, "include")
C_SRC = os.path.join(SRC, "tests", "compile", "use_all.c")
CXX_SRC = os.path.join(SRC, "tests", "compile", "use_all.cpp")
WARN = ["-Wall", "-Wextra", "-Werror"]


def sanitize_flags():
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("WEFT_SANITIZE:"):
                v = line.strip().split("=", 1)[1]
                return [f"-fsanitize={v}"] if v else []
    return []


def have(tool):
    return shutil.which(tool) is not None


class Header(TraceTest):
    def build(self, compiler, src, *flags, link=True):
        exe = os.path.join(self.tmp, "a.out")
        cmd = [compiler, *WARN, "-I", INC, src, *flags, "-o", exe]
        if link:  # a program using a sanitizer build of libweft is built with that sanitizer
            cmd += ["-L", BUILD, "-lweft", "-Wl,-rpath," + BUILD] + sanitize_flags()
        run(cmd)
        return exe

    def test_compiles_everywhere(self):
        combos = [(c, "-std=" + s, C_SRC) for c in ("gcc", "clang") for s in ("c99", "c11", "gnu11", "gnu17")]
        combos += [(c, "-std=" + s, CXX_SRC) for c in ("g++", "clang++") for s in ("c++11", "c++14", "c++17", "c++20")]
        skipped = sorted({c for c, _, _ in combos if not have(c)})
        if skipped:
            print(f"SKIP compilers not installed: {skipped}", file=__import__("sys").stderr)
        for cc, std, src in combos:
            if not have(cc):
                continue
            with self.subTest(cc=cc, std=std):
                run([cc, std, *WARN, "-I", INC, "-c", src, "-o", os.path.join(self.tmp, "x.o")])
        # the functions alone are strict ISO C (the macros use GNU extensions: see weft.h)
        plain = os.path.join(self.tmp, "plain.c")
        with open(plain, "w") as f:
            f.write("#include <weft.h>\nint main(void) { weft_flow_out(weft_track(\"t\")); return weft_stop(); }\n")
        run(["gcc", "-std=c11", "-pedantic", *WARN, "-I", INC, "-c", plain, "-o", os.path.join(self.tmp, "p.o")])

    def check_trace(self, exe):
        out = os.path.join(self.tmp, "t.data")
        p = run([exe], env={"WEFT_OPTIONS": f"output={out}"}, cwd=self.tmp)
        pf, _ = self.convert(out, "t.pftrace")
        self.tp_no_errors(pf)
        return p.stdout, pf

    def test_cxx_records_what_it_says(self):
        exe = self.build("g++", CXX_SRC, "-std=c++11", "-O2")
        stdout, pf = self.check_trace(exe)
        self.assertEqual(stdout.split()[:2], ["16", "0"])
        names, args = self.tp(
            pf, "select name, count(*) n from slice group by name order by name",
            "select s.name, a.key, a.display_value v from slice s join args a using(arg_set_id) "
            "where a.key like 'debug.%' order by 1, 2")
        got = {r["name"]: r["n"] for r in names}
        for name, n in {"main": 1, "a": 3, "b": 3, "twice body": 6, "widget()": 1, "lambda": 1,
                        "run": 1, "ran": 1, "explicit": 1, "complete": 1, "on track": 1}.items():
            self.assertEqual(got.get(name), n, name)
        # WEFT_FUNC in a template and a method: the function's name, once per instantiation call
        self.assertEqual(sum(n for k, n in got.items() if "twice" in k and k != "twice body"), 6, got)
        a = {(r["name"], r["key"]): r["v"] for r in args}
        self.assertEqual(a[("widget()", "debug.k")], "7")
        self.assertEqual(a[("ran", "debug.odd")], "true")
        self.assertEqual(a[("ran", "debug.who")], "widget")
        self.assertEqual(a[("on track", "debug.t")], "1")

    def test_c_records_what_it_says(self):
        exe = self.build("gcc", C_SRC, "-std=gnu11", "-O0")
        stdout, pf = self.check_trace(exe)
        self.assertEqual(stdout.split()[:2], ["6", "0"])
        rows, = self.tp(pf, "select a.key, a.display_value v from slice s join args a using(arg_set_id) "
                            "where s.name = 'work body' and a.key like 'debug.%' order by s.ts, a.key limit 6")
        got = {r["key"]: r["v"] for r in rows}
        self.assertRegex(got.pop("debug.p"), r"^0x[0-9a-f]+$")
        self.assertEqual(got, {"debug.n": "0", "debug.u": "0", "debug.d": "0.0", "debug.odd": "false",
                               "debug.s": "text"})

    def test_disable_needs_no_library(self):
        for cc, src in (("gcc", C_SRC), ("g++", CXX_SRC)):
            with self.subTest(cc=cc):
                exe = self.build(cc, src, "-DWEFT_DISABLE", "-O2", link=False)
                p = run([exe], cwd=self.tmp, env={"WEFT_OPTIONS": "output=" + os.path.join(self.tmp, "no.data")})
                self.assertEqual(p.stdout.split()[1], "0")  # weft_stats_get: 0, as with enable=0
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "no.data")))

    @unittest.skipIf(os.environ.get("WEFT_TEST_NO_PRELOAD"), "preloading is not testable in this build")
    def test_helpers_not_instrumented(self):
        exe = self.build("gcc", C_SRC, "-O0", "-finstrument-functions")
        data = os.path.join(self.tmp, "rec.data")
        p = run([WEFT, "record", "-q", "-o", data, "--", exe], cwd=self.tmp)
        rows = json.loads(run([WEFT, "report", "--format=json", data]).stdout)
        funcs = {r["function"] for r in rows}
        self.assertIn("work", funcs)
        self.assertIn("main", funcs)
        self.assertEqual(sorted(f for f in funcs if f.startswith("weft")), [])
        info = run([WEFT, "info", data]).stdout
        self.assertRegex(info, r"recorded: \d+ events, 0 dropped")


if __name__ == "__main__":
    main()
