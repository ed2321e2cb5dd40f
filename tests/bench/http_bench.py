#!/usr/bin/env python3
"""http_bench.py - the HTTP endpoint's cost, as ratios measured in one run
(docs/http.md).  Run by hand from a build tree:

    BACKFILLD=build/daemon/backfilld BACKFILLCTL=build/daemon/backfillctl \
        python3 tests/bench/http_bench.py [--jobs 50] [--n 300]

Prints, for a daemon with --jobs jobs: the median time of GET /status
against the same status --json over the control socket (the baseline: the
same renderer behind another transport), and the median of GET /healthz
with 15 idle clients holding connections open against without them (a
slow client must not cost the others).  No assertion: figures only.
"""
import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness as h  # noqa: E402


def get(port, path):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: b\r\n\r\n" % path).encode())
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    h.check(got.startswith(b"HTTP/1.1 200 "), "GET %s: %r" % (path, got[:80]))
    return got


def timed(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    jobs = "".join("- name: j%d\n  partition: day\n  command: [\"true\"]\n" % i
                   for i in range(a.jobs))
    d = h.Daemon(jobs=jobs, name="httpbench", settings={"http_listen": "127.0.0.1:0"})
    with open(d.log) as f:
        port = int([l for l in f if "http: listening on" in l][-1].rsplit(":", 1)[1].split()[0])
    # the socket's request without the harness's notification draining
    base = timed(lambda: d._request({"cmd": "status", "json": "1"}, 30), a.n)
    web = timed(lambda: get(port, "/status"), a.n)
    calm = timed(lambda: get(port, "/healthz"), a.n)
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(15)]
    busy = timed(lambda: get(port, "/healthz"), a.n)
    for s in idle:
        s.close()
    d.stop()
    print("jobs=%d n=%d" % (a.jobs, a.n))
    print("GET /status / status --json on the socket: %.2f (%.3f ms / %.3f ms)"
          % (web / base, web * 1e3, base * 1e3))
    print("GET /healthz with 15 idle clients / without: %.2f (%.3f ms / %.3f ms)"
          % (busy / calm, busy * 1e3, calm * 1e3))


if __name__ == "__main__":
    main()
