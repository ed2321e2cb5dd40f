#!/usr/bin/env python3
"""test_http.py - http_listen, the read-only HTTP endpoint (docs/http.md).

Each path through a real HTTP client (http.client): /metrics the same
series as metrics_file and clean for `promtool check metrics`, /report the
report page, /status the JSON of `status --json`, /healthz 200 while the
state store can be written and 503 with the reason when it cannot (a full
tmpfs, as in test_full_store; root only, else that part is skipped).  HEAD
gives the head alone; other methods 405, other paths 404, bad heads 400,
431, 414, 505.  Bounds: the 17th connection at once is answered 503; a
client that never finishes its head (silent, or trickling a byte at a
time) is answered 408 and closed after the timeout
(BACKFILLD_TEST_HTTP_TIMEOUT_MS) and never holds another client's answer;
hostile bytes change nothing and the daemon serves on.  An absolute-form
target is served its path.  The refusals of a flood are logged in all,
the last ones by a timer once it ends; an IPv4-mapped loopback address
is not warned about.  Reload moves the
listener; an address in use refuses the start with one line.  Then a
real Prometheus (Debian's `prometheus`, when installed: its own config,
a temporary storage folder, a free port; stopped whatever happens)
scrapes the endpoint and its HTTP API says up == 1.
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import harness as h

GUARD = 30.0
TIMEOUT_MS = 1500

JOBS = """
- name: daily
  partition: day
  start: 2026-01-01
  catchup: false
  command: ["true"]
- name: weekly
  partition: week
  upstream: [daily]
  command: ["true"]
"""


free_port = h.free_port


def listening_port(d):
    """The port the daemon logged it listens on (http_listen: ...:0)."""
    deadline = time.monotonic() + GUARD
    while True:
        with open(d.log) as f:
            lines = [l for l in f if "http: listening on" in l]
        if lines:
            return int(lines[-1].rsplit(":", 1)[1].split()[0])
        h.check(time.monotonic() < deadline, "no 'http: listening on' line")
        time.sleep(0.05)


def get(port, path, method="GET", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=GUARD)
    c.request(method, path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body


def raw(port, data, shut=True):
    """Send bytes, read the answer until the server closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out


def status_of(answer):
    h.check(answer.startswith(b"HTTP/1.1 "), "not an HTTP answer: %r" % answer[:80])
    return int(answer.split(b" ", 2)[1])


def series(text):
    return sorted(set(l.split("{")[0].split(" ")[0] for l in text.splitlines()
                      if l and not l.startswith("#")))


def test_paths():
    d = h.Daemon(jobs=JOBS, name="http", settings={
        "http_listen": "127.0.0.1:0", "metrics_file": "b.prom"})
    port = listening_port(d)
    d.enqueue("backfill", "daily", "--from", "2026-02-02", "--to", "2026-02-03")
    d.settle()

    st, hd, body = get(port, "/metrics")
    h.eq(st, 200, "/metrics status")
    h.check(hd["content-type"].startswith("text/plain; version=0.0.4"), hd)
    text = body.decode()
    h.check('backfilld_runs_total{job="daily",state="succeeded"} 2' in text, text[:2000])
    # every state of backfilld_runs_total is the one docs/operations.md lists
    got = sorted(set(re.findall(r'backfilld_runs_total\{job="daily",state="([a-z]+)"\}', text)))
    with open(os.path.join(h.SOURCE_ROOT, "docs", "operations.md")) as f:
        row = [l for l in f if l.startswith("| `backfilld_runs_total`")][0]
    documented = sorted(re.search(r"`state` \(([a-z, ]+)\)", row).group(1).split(", "))
    h.eq(got, documented, "the states of backfilld_runs_total against docs/operations.md")
    tool = shutil.which("promtool")
    if tool is None and os.environ.get("BACKFILLD_REQUIRE_PROMTOOL") == "1":
        h.fail("promtool is not installed and BACKFILLD_REQUIRE_PROMTOOL=1")
    if tool is not None:
        p = subprocess.run([tool, "check", "metrics"], input=body, capture_output=True,
                           timeout=60)
        h.check(p.returncode == 0, "promtool check metrics on /metrics: %r %r"
                % (p.stdout, p.stderr))

    st, hd, body = get(port, "/status")
    h.eq(st, 200, "/status status")
    h.eq(hd["content-type"], "application/json", "/status type")
    web = json.loads(body)
    cli = d.json("status")
    h.eq(web["jobs"], cli["jobs"], "/status jobs as status --json")
    h.eq(sorted(web), sorted(cli), "/status keys as status --json")

    st, hd, body = get(port, "/report")
    h.eq(st, 200, "/report status")
    h.check(hd["content-type"].startswith("text/html"), hd)
    h.check(body.startswith(b"<!DOCTYPE html>") and b'data-job="daily"' in body,
            "the report page: %r" % body[:200])

    st, hd, body = get(port, "/healthz")
    h.eq((st, body), (200, b"ok\n"), "/healthz")

    st, hd, body = get(port, "/status", method="HEAD")
    h.eq((st, body), (200, b""), "HEAD /status: the head alone")
    h.check(int(hd["content-length"]) > 100, "HEAD's length is the body's: %r" % hd)
    st, hd, body = get(port, "/metrics?x=1")
    h.eq(st, 200, "a query is ignored")
    # an absolute-form target (RFC 9112 3.2.2: a server must accept it):
    # its path is served
    out = raw(port, b"GET http://127.0.0.1:%d/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
              % port)
    h.eq(status_of(out), 200, "an absolute-form target: %r" % out[:200])
    h.check(b"backfilld_build_info" in out, "the metrics through an absolute-form target")
    h.eq(status_of(raw(port, b"GET HTTP://x/nosuch HTTP/1.0\r\n\r\n")), 404,
         "an absolute-form target's path is routed")

    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        st, hd, body = get(port, "/metrics", method=method)
        h.eq(st, 405, method)
        h.eq(hd.get("allow"), "GET, HEAD", method + " Allow")
    st, hd, body = get(port, "/")
    h.eq(st, 404, "/")
    st, hd, body = get(port, "/metrics/../status")
    h.eq(st, 404, "no path normalisation")
    st, hd, body = get(port, "/" + "x" * 300)
    h.eq(st, 404, "a long path")

    h.eq(status_of(raw(port, b"GET /metrics HTTP/1.1\r\n\r\n")), 400, "no Host")
    h.eq(status_of(raw(port, b"GET /metrics HTTP/2.0\r\n\r\n")), 505, "HTTP/2.0")
    h.eq(status_of(raw(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")),
         400, "a body")
    h.eq(status_of(raw(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"y" * 10000 + b"\r\n\r\n")),
         431, "a huge header")
    h.eq(status_of(raw(port, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n")), 414, "a huge line")
    # the answer closes the connection: a pipelined second request is
    # not answered
    two = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    h.eq(two.count(b"HTTP/1.1 "), 1, "one answer per connection: %r" % two)
    h.check(b"Connection: close" in two, two)

    # a POST never reaches a command: nothing changed
    before = d.json("runs")
    get(port, "/status", method="POST")
    h.eq(len(d.json("runs")), len(before), "runs after a POST")
    d.assert_alive("after the requests")
    st, hd, body = get(port, "/metrics")
    d.stop()  # writes metrics_file once more
    with open(os.path.join(d.dir, "b.prom")) as f:
        filetext = f.read()
    h.eq(series(body.decode()), series(filetext), "/metrics has the series of metrics_file")


def test_bounds():
    d = h.Daemon(jobs=JOBS, name="httpb", settings={"http_listen": "127.0.0.1:0"},
                 env={"BACKFILLD_TEST_HTTP_TIMEOUT_MS": str(TIMEOUT_MS)})
    port = listening_port(d)
    # slow clients: a silent one and one that trickles bytes
    silent = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    trickle = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    trickle.sendall(b"GET /metrics HT")
    t0 = time.monotonic()
    # they hold nothing back: another client is answered at once
    st, hd, body = get(port, "/healthz")
    h.eq(st, 200, "a client beside slow ones")
    sent = 0
    trickle.settimeout(0.2)
    got = b""
    while time.monotonic() - t0 < GUARD:
        try:
            trickle.sendall(b"T")
            sent += 1
        except OSError:
            break
        try:
            b = trickle.recv(4096)
            if not b:
                break
            got += b
        except socket.timeout:
            pass
        except OSError:
            break   # reset: the server closed after its lingering close
    h.check(got.startswith(b"HTTP/1.1 408 "), "the trickling client: 408, got %r" % got)
    h.check(time.monotonic() - t0 < GUARD, "the trickling client was cut off")
    silent.settimeout(GUARD)
    out = silent.recv(4096)
    h.check(out.startswith(b"HTTP/1.1 408 "), "the silent client: %r" % out)
    silent.close()
    trickle.close()

    # too many connections: 16 served at once, the 17th refused (503)
    held = [socket.create_connection(("127.0.0.1", port), timeout=GUARD) for _ in range(16)]
    for s in held:
        s.sendall(b"G")  # accepted and read before the next one
    extra = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", shut=False)
    h.eq(status_of(extra), 503, "the 17th connection: %r" % extra)
    h.check(b"too many connections" in extra, extra)
    for s in held:
        s.close()
    # once they are gone, clients are served again
    deadline = time.monotonic() + GUARD
    while True:
        st, hd, body = get(port, "/healthz")
        if st == 200:
            break
        h.check(time.monotonic() < deadline, "served again after the 16 closed")
        time.sleep(0.05)

    # hostile clients: random bytes, a TLS hello, a reset, half a head
    import random
    rnd = random.Random(30)
    for _ in range(50):
        blob = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 600)))
        out = raw(port, blob)
        h.check(out == b"" or status_of(out) in (400, 405, 408, 414, 431, 505),
                "random bytes: %r" % out[:60])
    tls = bytes.fromhex("160301002e0100002a0303") + b"\0" * 40
    h.eq(status_of(raw(port, tls)), 400, "a TLS hello")
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    s.sendall(b"GET /report HTTP/1.1\r\nHost: x\r\n\r\n")
    s.close()  # reset while the answer is written
    h.eq(raw(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n"), b"", "half a head, then EOF")
    st, hd, body = get(port, "/healthz")
    h.eq(st, 200, "served on after hostile clients")
    d.assert_alive("after hostile clients")
    d.stop()


def test_refusal_count():
    """The refusals of a flood are all logged, by a timer once the flood
    ends (not only at the next refusal): the counts of the lines add up
    to the connections refused; an IPv4-mapped loopback address is
    loopback (no warning)."""
    ratelog = 1500
    d = h.Daemon(jobs=JOBS, name="httpr", settings={"http_listen": '"[::ffff:127.0.0.1]:0"'},
                 env={"BACKFILLD_TEST_HTTP_RATELOG_MS": str(ratelog)})
    port = listening_port(d)
    with open(d.log) as f:
        line = [l for l in f if "http: listening on" in l][-1]
    h.check("::ffff:127.0.0.1" in line and "not a loopback" not in line,
            "an IPv4-mapped loopback address is loopback: %r" % line)
    held = [socket.create_connection(("127.0.0.1", port), timeout=GUARD) for _ in range(16)]
    for s in held:
        s.sendall(b"G")
    flood = 40
    for _ in range(flood):
        out = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", shut=False)
        h.eq(status_of(out), 503, "a refused connection")
    t0 = time.monotonic()
    deadline = t0 + GUARD
    while True:
        with open(d.log) as f:
            counts = [int(l.split("http: ", 1)[1].split()[0]) for l in f
                      if "connections refused" in l]
        if sum(counts) == flood:
            break
        h.check(sum(counts) < flood and time.monotonic() < deadline,
                "the refusal lines count %r, not %d in all" % (counts, flood))
        time.sleep(0.05)
    h.check(len(counts) >= 2, "the first refusal at once, the rest later: %r" % counts)
    h.eq(counts[0], 1, "the first refusal logged at once")
    for s in held:
        s.close()
    d.stop()


def test_reload_and_refusal():
    p1, p2 = free_port(), free_port()
    d = h.Daemon(jobs=JOBS, name="httpr", settings={"http_listen": "127.0.0.1:%d" % p1})
    h.eq(get(p1, "/healthz")[0], 200, "on the first port")
    d.write_config(d.config_text.replace(":%d" % p1, ":%d" % p2))
    d.ok("reload")
    h.eq(get(p2, "/healthz")[0], 200, "on the new port after reload")
    try:
        get(p1, "/healthz")
        h.fail("the old port still answers")
    except ConnectionRefusedError:
        pass
    # an address in use: the reload is refused whole (exit 2), the
    # endpoint stays (test_reload.py: nothing else changes either)
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    busy = blocker.getsockname()[1]
    d.write_config(d.config_text.replace(":%d" % p2, ":%d" % busy))
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload to a port in use")
    h.check("cannot listen on http_listen 127.0.0.1:%d" % busy in e and
            "nothing was reloaded and the endpoint stays on 127.0.0.1:%d" % p2 in e,
            "the reload says so: %r" % e)
    h.eq(get(p2, "/healthz")[0], 200, "kept after a reload to a port in use")
    # off
    d.write_config("\n".join(l for l in d.config_text.splitlines()
                             if not l.startswith("http_listen")) + "\n")
    d.ok("reload")
    try:
        get(p2, "/healthz")
        h.fail("still answers with no http_listen")
    except ConnectionRefusedError:
        pass
    d.stop()

    # a start on an address in use: refused, one line, exit 2
    d2 = h.Daemon(jobs=JOBS, name="httpu", settings={"http_listen": "127.0.0.1:%d" % busy},
                  start=False)
    p = subprocess.run([d2.backfilld, "--config", d2.conf], capture_output=True, text=True,
                       env=d2.env(), timeout=60)
    h.eq(p.returncode, 2, "start on a port in use: exit\n" + p.stderr)
    h.check("cannot listen on http_listen 127.0.0.1:%d" % busy in p.stderr, p.stderr)
    blocker.close()
    # not a loopback address: said at start
    d3 = h.Daemon(jobs=JOBS, name="httpn", settings={"http_listen": "0.0.0.0:0"})
    with open(d3.log) as f:
        h.check(any("not a loopback address" in l for l in f), "the warning")
    d3.stop()
    d4 = h.Daemon(jobs=JOBS, name="httpc", settings={"http_listen": "localhost:80"}, start=False)
    p = subprocess.run([d4.backfilld, "--check-config", "--config", d4.conf],
                       capture_output=True, text=True, timeout=60)
    h.eq(p.returncode, 2, "check-config on localhost:80")
    h.check("http_listen must be PORT, IPV4:PORT or [IPV6]:PORT" in p.stderr and
            ":3:14:" in p.stderr and p.stderr.count("\n") == 1, p.stderr)


def test_healthz_store_full():
    h.sqlite_state_only("the state store's filesystem fills up")
    from test_full_store import mount_tmpfs, fill
    port = free_port()
    config = ("state_db: {dir}/st/state.db\nsocket: backfilld.sock\n"
              "http_listen: 127.0.0.1:%d\nmax_backfill: 100000\n"
              "warehouses:\n  - {name: wh, sqlite: wh.db}\n"
              "jobs:\n  - name: h\n    warehouse: wh\n    partition: hour\n"
              "    sql: INSERT OR REPLACE INTO t (k, pad) VALUES (:partition, zeroblob(100))\n"
              % port)
    d = h.Daemon(config=config, warehouses={"wh": "CREATE TABLE t (k TEXT PRIMARY KEY, pad BLOB);"},
                 name="httpf", env={"BACKFILLD_TEST_STORE_RETRY_MS": "300"}, start=False)
    st_dir = os.path.join(d.dir, "st")
    ok, why = mount_tmpfs(st_dir, "40M")
    if not ok:
        print("SKIP part: cannot mount a tmpfs (%s); run as root" % why)
        d.close()
        return
    d.state_db = os.path.join(st_dir, "state.db")
    try:
        d.start()
        h.eq(get(port, "/healthz")[0], 200, "/healthz before")
        d.enqueue("backfill", "h", "--from", "2026-01-01", "--to", "2026-03-01")
        fill(st_dir)
        deadline = time.monotonic() + GUARD
        while True:
            st, hd, body = get(port, "/healthz")
            if st == 503:
                break
            h.check(time.monotonic() < deadline, "/healthz never 503: %r" % body)
            time.sleep(0.05)
        h.check(body.startswith(b"the state store cannot be written: "), body)
        h.check(b"\n" == body[-1:] and body.count(b"\n") == 1, "one line: %r" % body)
        os.unlink(os.path.join(st_dir, "filler"))
        d.wait_notification("READY=1", 60, what="READY=1 after the restart in place")
        deadline = time.monotonic() + GUARD
        while True:
            try:
                if get(port, "/healthz")[0] == 200:
                    break
            except ConnectionRefusedError:
                pass
            h.check(time.monotonic() < deadline, "/healthz 200 after the restart")
            time.sleep(0.05)
        d.stop()
    finally:
        if d.alive():
            d.stop()
        subprocess.run(["umount", "-l", st_dir])


class Prometheus:
    """A prometheus server on a temporary folder: stopped by close()."""

    def __init__(self, target):
        self.dir = h.suite_mkdtemp("prom")
        self.port = free_port()
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: backfilld\n"
                    "    static_configs:\n      - targets: ['%s']\n" % target)
        self.log = open(os.path.join(self.dir, "log"), "w")
        h.register_server(self)
        self.proc = subprocess.Popen(
            [shutil.which("prometheus"), "--config.file=" + os.path.join(self.dir, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir)

    def query(self, q):
        url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (self.port, q)
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_prometheus_scrape():
    if shutil.which("prometheus") is None:
        print("SKIP part: prometheus is not installed (apt-get install prometheus)")
        return
    d = h.Daemon(jobs=JOBS, name="httpp", settings={"http_listen": "127.0.0.1:0"})
    port = listening_port(d)
    prom = Prometheus("127.0.0.1:%d" % port)
    try:
        deadline = time.monotonic() + 90
        last = None
        while True:
            try:
                last = prom.query("up")
                res = last["data"]["result"]
                if res and res[0]["value"][1] == "1":
                    break
            except OSError as e:
                last = e
            h.check(prom.proc.poll() is None, "prometheus exited: see %s" % prom.log.name)
            h.check(time.monotonic() < deadline, "up never 1: %r" % (last,))
            time.sleep(0.2)
        q = prom.query("backfilld_build_info")
        h.check(q["data"]["result"] and q["data"]["result"][0]["metric"]["job"] == "backfilld",
                "a scraped series: %r" % q)
    finally:
        prom.close()
    d.stop()


if __name__ == "__main__":
    h.main([test_paths, test_bounds, test_refusal_count, test_reload_and_refusal,
            test_healthz_store_full,
            test_prometheus_scrape])
