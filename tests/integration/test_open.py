"""weft open and weft record --open: the trace served once over HTTP to the Perfetto UI, checked
with an HTTP client that sends the UI's Origin header (headers and bytes), the preflight, wrong
paths and origins, Ctrl-C on a terminal, a busy port, a directory converted first, and a desktop's
browser (a stand-in xdg-open that fetches the URL as the UI does). Every server listens on a free
port (--port), never 9001: tests may run side by side."""
import http.client
import os
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from weftlib import BUILD, WEFT, TraceTest, main, on_tty, run  # noqa: E402

ORIGIN = "https://ui.perfetto.dev"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_desktop(extra=None):
    """the environment without a desktop (no browser is started), plus EXTRA"""
    e = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    e.update(extra or {})
    return e


class OpenTest(TraceTest):
    def make_dir(self, name="x.data"):
        """a small trace directory (the pipeline example), not converted"""
        d = os.path.join(self.tmp, name)
        run([os.path.join(BUILD, "pipeline"), "2", "200", "1"], env={"WEFT_OPTIONS": f"output={d}"}, cwd=self.tmp)
        return d

    def start(self, *args, env=None, record=None):
        """weft open ARGS (or weft record --open RECORD ARGS) on a free port; returns (process,
        port, url) once the URL is printed"""
        port = free_port()
        cmd = [WEFT, "open", "--port", str(port)] if record is None else [WEFT, "record", f"--open={port}", *record]
        p = subprocess.Popen([*cmd, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=self.tmp, env=env or no_desktop())
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(), p.stdout.close(), p.stderr.close()))
        url = ""
        for line in p.stdout:  # the URL, after what a recorded program printed
            if line.startswith(ORIGIN):
                url = line.strip()
                break
        self.assertTrue(url, f"no URL printed; stderr: {p.stderr.read() if p.poll() is not None else ''}")
        return p, port, url

    def request(self, port, method, path, origin=ORIGIN, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        h = dict(headers or {})
        if origin:
            h["Origin"] = origin
        c.request(method, path, headers=h)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r, body

    def assert_serving(self, p):
        time.sleep(0.2)
        if p.poll() is not None:
            self.fail("weft open ended before the file was fetched: " + p.stderr.read())

    def fetch_and_check(self, p, port, url, file, ctype="application/octet-stream"):
        """the UI's GET: status, headers, the bytes; then weft ends with 0"""
        name = os.path.basename(file)
        self.assertEqual(url, f"{ORIGIN}/#!/?url=http://127.0.0.1:{port}/{name}")
        r, body = self.request(port, "GET", "/" + name)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Access-Control-Allow-Origin"), ORIGIN)
        self.assertEqual(r.getheader("Content-Type"), ctype)
        self.assertEqual(int(r.getheader("Content-Length")), os.path.getsize(file))
        with open(file, "rb") as f:
            self.assertEqual(body, f.read())
        self.assertEqual(p.wait(timeout=30), 0, p.stderr.read())

    def test_preflight_wrong_path_origin_then_fetch(self):
        d = self.make_dir()
        pf, _ = self.convert(d, "t.pftrace")
        p, port, url = self.start("-n", pf)
        # the preflight Chrome sends before a public page reads from 127.0.0.1
        r, body = self.request(port, "OPTIONS", "/t.pftrace", headers={
            "Access-Control-Request-Method": "GET", "Access-Control-Request-Private-Network": "true",
            "Access-Control-Request-Headers": "range"})
        self.assertEqual(r.status, 204)
        self.assertEqual(r.getheader("Access-Control-Allow-Origin"), ORIGIN)
        self.assertIn("GET", r.getheader("Access-Control-Allow-Methods"))
        self.assertEqual(r.getheader("Access-Control-Allow-Private-Network"), "true")
        self.assertEqual(r.getheader("Access-Control-Allow-Headers"), "range")
        self.assert_serving(p)
        r, _ = self.request(port, "GET", "/other.pftrace")
        self.assertEqual(r.status, 404)
        r, _ = self.request(port, "GET", "/t.pftrace", origin="https://evil.example")
        self.assertEqual(r.status, 403)
        r, _ = self.request(port, "POST", "/t.pftrace")
        self.assertEqual(r.status, 405)
        r, body = self.request(port, "HEAD", "/t.pftrace")
        self.assertEqual((r.status, body, int(r.getheader("Content-Length"))), (200, b"", os.path.getsize(pf)))
        self.assert_serving(p)
        self.fetch_and_check(p, port, url, pf)

    def test_idle_connection_does_not_block(self):
        pf, _ = self.convert(self.make_dir(), "t.pftrace")
        p, port, url = self.start("-n", pf)
        idle = socket.create_connection(("127.0.0.1", port))  # a browser's connection opened ahead
        idle.sendall(b"GET /t.pftrace HTTP/1.1\r\n")  # and an unfinished request
        self.addCleanup(idle.close)
        self.fetch_and_check(p, port, url, pf)

    def test_json_served_as_is(self):
        js, _ = self.convert(self.make_dir(), "t.json")
        p, port, url = self.start("-n", js)
        self.fetch_and_check(p, port, url, js, ctype="application/json")

    def test_directory_converted_first(self):
        d = self.make_dir()
        ref, _ = self.convert(d, "ref.pftrace")  # the same trace converts to the same bytes
        p, port, url = self.start("-n", d)
        pf = os.path.join(d, "trace.pftrace")
        self.assertTrue(os.path.exists(pf))
        self.fetch_and_check(p, port, url, pf)
        with open(pf, "rb") as a, open(ref, "rb") as b:
            self.assertEqual(a.read(), b.read())
        # an existing trace.pftrace is served as it is, not converted again
        os.chmod(pf, stat.S_IRUSR)
        mtime = os.stat(pf).st_mtime_ns
        p, port, url = self.start("-n", d)
        self.fetch_and_check(p, port, url, pf)
        self.assertEqual(os.stat(pf).st_mtime_ns, mtime)

    def test_default_is_weft_data(self):
        self.make_dir("weft.data")
        p, port, url = self.start("-n")
        self.fetch_and_check(p, port, url, os.path.join(self.tmp, "weft.data", "trace.pftrace"))

    def test_ctrl_c(self):
        pf, _ = self.convert(self.make_dir(), "t.pftrace")
        port = free_port()
        sent, code, out = on_tty([WEFT, "open", "-n", "--port", str(port), pf], self.tmp, b"Ctrl-C to stop",
                                 lambda pid, fd: os.write(fd, b"\x03"), timeout=30)
        self.assertTrue(sent, out)
        self.assertEqual(code, 130, out)
        self.assertIn("interrupted before the UI fetched the trace", out)

    def test_port_busy(self):
        pf, _ = self.convert(self.make_dir(), "t.pftrace")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port = s.getsockname()[1]
            p = run([WEFT, "open", "-n", "--port", str(port), pf], check=False, env=no_desktop(), timeout=30)
        self.assertEqual(p.returncode, 1)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(f"port {port} of 127.0.0.1 is in use", lines[0])
        self.assertIn("--port", lines[0])

    def test_usage_and_missing_trace(self):
        for args in (["--port", "0"], ["--port", "x"], ["--port", "70000"], ["a", "b"], ["--origin", "ftp://x"]):
            p = run([WEFT, "open", *args], check=False, env=no_desktop(), cwd=self.tmp)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
        p = run([WEFT, "open", "-n", "--port", str(free_port())], check=False, env=no_desktop(), cwd=self.tmp)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no trace at weft.data", p.stderr)
        self.assertIn("usage: weft open", run([WEFT, "open", "--help"]).stdout)

    def fake_browser(self):
        """a directory with an xdg-open that records its URL and fetches it as the UI does"""
        bindir = os.path.join(self.tmp, "bin")
        os.mkdir(bindir)
        log = os.path.join(self.tmp, "xdg-open.log")
        script = os.path.join(bindir, "xdg-open")
        with open(script, "w") as f:
            f.write(f"""#!{sys.executable}
import http.client, sys, urllib.parse
open({log!r}, "a").write(sys.argv[1] + "\\n")
target = urllib.parse.urlparse(urllib.parse.parse_qs(sys.argv[1].split("#!/?", 1)[1])["url"][0])
c = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
c.request("GET", target.path, headers={{"Origin": {ORIGIN!r}}})
c.getresponse().read()
""")
        os.chmod(script, 0o755)
        return bindir, log

    def test_browser_opened_on_a_desktop_only(self):
        pf, _ = self.convert(self.make_dir(), "t.pftrace")
        bindir, log = self.fake_browser()
        path = bindir + ":" + os.environ["PATH"]
        # a desktop: xdg-open gets the URL, and its fetch ends weft open
        p, port, url = self.start(pf, env=no_desktop({"PATH": path, "WAYLAND_DISPLAY": "wayland-0"}))
        self.assertEqual(p.wait(timeout=30), 0, p.stderr.read())
        with open(log) as f:
            self.assertEqual(f.read().split(), [url])
        # none: the URL is printed, no browser started
        os.unlink(log)
        p, port, url = self.start(pf, env=no_desktop({"PATH": path}))
        self.assert_serving(p)
        self.assertFalse(os.path.exists(log))
        self.fetch_and_check(p, port, url, pf)
        # -n: none either, even on a desktop
        p, port, url = self.start("-n", pf, env=no_desktop({"PATH": path, "DISPLAY": ":0"}))
        self.assert_serving(p)
        self.assertFalse(os.path.exists(log))
        self.fetch_and_check(p, port, url, pf)

    def test_record_open(self):
        d = os.path.join(self.tmp, "r.data")
        p, port, url = self.start("--", os.path.join(BUILD, "ft_recurse_O2"), record=("-o", d))
        pf = os.path.join(d, "trace.pftrace")
        self.fetch_and_check(p, port, url, pf)
        rows, = self.tp(pf, "select count(*) as n from slice where name = 'fib'")
        self.assertGreater(rows[0]["n"], 0)
        p = run([WEFT, "record", "--open", "--no-convert", "--", "true"], check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--open", p.stderr)
        p = run([WEFT, "record", "--open=0", "--", "true"], check=False, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    main()
