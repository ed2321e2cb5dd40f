#!/usr/bin/env python3
"""Garbage on the control socket (issue 2): random bytes, a header announcing
a huge body, a wrong version, malformed bodies, unknown commands, half frames
and idle connections.  The daemon answers (a RESPONSE with status=2 and an
err) or closes the connection, never exits, and still serves `status`."""
import random
import socket
import struct

import harness as h

GUARD = 10.0  # s: the daemon must answer or close within this


def answer_or_close(d, payload, what, expect_close=True, half_close=False):
    """Send payload; read until EOF.  Returns the frames the daemon sent."""
    with d.draining():
        return _answer_or_close(d, payload, what, expect_close, half_close)


def _answer_or_close(d, payload, what, expect_close, half_close):
    s = d.connect(GUARD)
    frames = []
    try:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us already: fine
        if half_close:
            s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            except socket.timeout:
                if expect_close:
                    h.fail("%s: the daemon neither answered nor closed within %.0f s"
                           % (what, GUARD))
                break
            if not chunk:
                break
            data += chunk
            if not expect_close and len(data) >= 12:
                n = struct.unpack(">I", data[8:12])[0]
                if len(data) >= 12 + n:
                    break
    finally:
        s.close()
    while len(data) >= 12:
        magic, version, type_, n = struct.unpack(">IHHI", data[:12])
        h.eq(magic, h.PROTO_MAGIC, "%s: magic of the daemon's answer" % what)
        h.eq(version, h.PROTO_VERSION, "%s: version of the daemon's answer" % what)
        h.check(len(data) >= 12 + n, "%s: truncated answer" % what)
        frames.append((type_, h.parse_body(data[12:12 + n])))
        data = data[12 + n:]
    h.eq(data, b"", "%s: trailing bytes after the daemon's frames" % what)
    for t, f in frames:
        h.eq(t, h.PROTO_RESPONSE, "%s: frame type of the answer" % what)
        h.eq(f.get("status"), "2", "%s: status of the answer %r" % (what, f))
        h.check(f.get("err"), "%s: the answer has no err: %r" % (what, f))
        h.check("\n" not in f["err"], "%s: err is not one line: %r" % (what, f["err"]))
    return frames


def still_serves(d, what):
    d.assert_alive("after %s" % what)
    rc, out, err = d.ctl("status", "--json")
    h.check(rc == 0, "status after %s: exit %d (%s)" % (what, rc, err))


def test_garbage():
    d = h.sales_daemon(name="garbage")
    rnd = random.Random(20260208)
    cases = [
        ("random bytes", bytes(rnd.getrandbits(8) for _ in range(4096))),
        ("random bytes after a valid magic",
         struct.pack(">I", h.PROTO_MAGIC) + bytes(rnd.getrandbits(8) for _ in range(64))),
        ("text", b"GET / HTTP/1.0\r\n\r\n"),
        ("huge announced length", h.frame(b"", length=0xFFFFFFFF)),
        ("length just above the limit", h.frame(b"", length=4 * 1024 * 1024 + 1)),
        ("request just above the request limit",
         h.frame(b"", length=1024 * 1024 + 1)),
        ("wrong version", h.frame({"cmd": "status"}, version=3)),
        ("version 1 (before DATA frames)", h.frame({"cmd": "status"}, version=1)),
        ("version 0", h.frame({"cmd": "status"}, version=0)),
        ("wrong magic", h.frame({"cmd": "status"}, magic=0x47455420)),
        ("unknown frame type", h.frame({"cmd": "status"}, type_=9)),
        ("a RESPONSE from the client", h.frame({"cmd": "status"}, type_=h.PROTO_RESPONSE)),
        ("body without NUL", h.frame(b"cmd=status")),
        ("field without =", h.frame(b"cmd\0")),
        ("empty key", h.frame(b"=status\0")),
        ("upper-case key", h.frame(b"CMD=status\0")),
        ("overlong key", h.frame(b"k" * 40 + b"=1\0")),
        ("NUL-only body", h.frame(b"\0\0\0\0")),
        ("too many fields", h.frame(b"".join(b"f%d=1\0" % i for i in range(200)))),
    ]
    for what, payload in cases:
        try:
            answer_or_close(d, payload, what)
        except h.TestFailure as e:
            h.soft(False, str(e))
        still_serves(d, what)
        print("  done: %s" % what)

    # Well-framed but wrong requests: the connection gets an answer.
    for what, fields in [
        ("unknown command", {"cmd": "frobnicate"}),
        ("no cmd", {"job": "fct_daily_sales"}),
        ("backfill without fields", {"cmd": "backfill"}),
        ("backfill with SQL job", {"cmd": "backfill", "job": "x'; DROP TABLE raw_sales;--",
                                   "from": "2026-02-08", "to": "2026-02-12"}),
        ("backfill with bad dates", {"cmd": "backfill", "job": "fct_daily_sales",
                                     "from": "2026-02-30", "to": "2026-02-12"}),
        ("wait for a bad request id", {"cmd": "wait", "request": "abc"}),
        ("runs with bad limit", {"cmd": "runs", "limit": "-5"}),
    ]:
        _, resp = d.request(fields, timeout=GUARD)
        h.eq(resp.get("status"), "2", "%s: status %r" % (what, resp))
        h.check(resp.get("err") and "\n" not in resp["err"], "%s: err %r" % (what, resp))
        still_serves(d, what)
        print("  ok: %s -> %s" % (what, resp["err"]))

    # Half a header, half a body, then the client goes away.
    for what, payload in [("half a header", h.frame({"cmd": "status"})[:6]),
                          ("half a body", h.frame({"cmd": "status"})[:20])]:
        s = d.connect(GUARD)
        s.sendall(payload)
        s.close()
        still_serves(d, what)
    # A half frame then end of input: the daemon closes (or answers).
    answer_or_close(d, h.frame({"cmd": "status"})[:20], "half a body then EOF",
                    half_close=True)

    # Idle and half-sent connections do not block others.
    idle = []
    for i in range(20):
        s = d.connect(GUARD)
        if i % 2:
            s.sendall(h.frame({"cmd": "status"})[:5])
        idle.append(s)
    still_serves(d, "20 idle connections")
    # Two requests on one connection, as protocol.md allows.
    s = d.connect(GUARD)
    try:
        s.sendall(h.frame({"cmd": "status", "json": "1"}) + h.frame({"cmd": "status"}))
        for n in (1, 2):
            fr = h.read_frame(s)
            h.check(fr is not None, "no answer %d of two pipelined requests" % n)
            h.eq((fr[0], fr[1].get("status")), (h.PROTO_RESPONSE, "0"),
                 "answer %d of two pipelined requests" % n)
    finally:
        s.close()
    for s in idle:
        s.close()
    still_serves(d, "closing the idle connections")

    # Nothing of this reached the state store or the warehouse.
    h.eq(d.runs(), [], "runs after the garbage")
    d.stop()


if __name__ == "__main__":
    h.main([test_garbage])
