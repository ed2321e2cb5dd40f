"""test_notify.py - the systemd notify protocol, exercised for real.

The harness binds a unix datagram socket in the test's folder and starts
backfilld with NOTIFY_SOCKET pointing at it (no systemd manager involved).
With WATCHDOG_USEC=200000 the daemon must send, in this order:

    READY=1                        once the store is open and the socket listens
    WATCHDOG=1 (repeatedly)        every ~100 ms, from the event loop
    RELOADING=1 + MONOTONIC_USEC=  on SIGHUP, in one datagram
    READY=1                        when the reload is over
    STOPPING=1                     on SIGTERM, then exit status 0

and a reload to a broken file keeps the daemon and its configuration, and
puts the error's position in STATUS=.

A service manager that stops reading (its socket's queue full) does not
stop the daemon: it answers backfillctl, reloads, runs a backfill and
stops on SIGTERM, each state change having waited for room at most its
bound (daemon/server/notify.c), and says so once in its log.
"""

import os
import re
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Daemon, STOP_TIMEOUT, check, eq, fail, main)  # noqa: E402

WATCHDOG_USEC = 200000   # 100 ms between WATCHDOG=1
GUARD = 10.0             # failure guard for each awaited message

JOB = """
- name: noop_daily
  warehouse: wh
  partition: day
  start: 2026-03-01
  sql: SELECT 1
"""

LINE = re.compile(r"^[A-Z_]+=.*$")


def monotonic_usec():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def notify_daemon(name):
    # The warehouse file is created empty by the harness (sqlite3, no seed);
    # the test clock (2026-03-01) leaves noop_daily nothing due.
    return Daemon(jobs=JOB, warehouses={"wh": None}, name=name,
                  env={"WATCHDOG_USEC": str(WATCHDOG_USEC)})


def fields(msg):
    """A datagram's assignments as a dict, asserting the protocol's shape."""
    out = {}
    for line in msg.split("\n"):
        check(LINE.match(line) is not None,
              "notify datagram line %r is not VARIABLE=value (datagram %r)" % (line, msg))
        k, _, v = line.partition("=")
        out[k] = v
    return out


def wait_for(d, start, pred, what):
    """Index in d.notifications of the first datagram from `start` on for
    which pred(datagram) holds, as the harness's reader receives them."""
    return d.wait_notifications(pred, GUARD, what, start=start)


def next_index(d, start, line, what):
    """Index of the first datagram from `start` on holding `line`."""
    return wait_for(d, start, lambda m: line in m.split("\n"), what)


def test_sequence():
    d = notify_daemon("notify")
    ready = next_index(d, 0, "READY=1", "READY=1 after start")
    for m in d.notifications[:ready + 1]:
        fields(m)

    # The watchdog: at least twice after READY=1.
    w1 = next_index(d, ready + 1, "WATCHDOG=1", "a first WATCHDOG=1")
    w2 = next_index(d, w1 + 1, "WATCHDOG=1", "a second WATCHDOG=1")
    eq(fields(d.notifications[w2]), {"WATCHDOG": "1"}, "a watchdog datagram")

    # SIGHUP: RELOADING=1 with MONOTONIC_USEC in the same datagram, READY=1.
    before = monotonic_usec()
    mark = len(d.notifications)
    d.signal(signal.SIGHUP)
    rel = next_index(d, mark, "RELOADING=1", "RELOADING=1 after SIGHUP")
    after = monotonic_usec()
    f = fields(d.notifications[rel])
    check("MONOTONIC_USEC" in f,
          "RELOADING=1 without MONOTONIC_USEC= in the same datagram: %r"
          % d.notifications[rel])
    check(re.fullmatch(r"[0-9]+", f["MONOTONIC_USEC"]) is not None,
          "MONOTONIC_USEC=%r is not a number" % f["MONOTONIC_USEC"])
    usec = int(f["MONOTONIC_USEC"])
    check(before <= usec <= after,
          "MONOTONIC_USEC=%d is not CLOCK_MONOTONIC in us between SIGHUP (%d) "
          "and its datagram (%d)" % (usec, before, after))
    back = next_index(d, rel + 1, "READY=1", "READY=1 after the reload")
    for m in d.notifications[mark:back + 1]:
        fields(m)
        check("STOPPING=1" not in m.split("\n"), "STOPPING=1 during a reload: %r" % m)

    # The watchdog goes on after the reload.
    next_index(d, back + 1, "WATCHDOG=1", "WATCHDOG=1 after the reload")
    d.assert_alive("after the reload")

    # SIGTERM: STOPPING=1, then exit 0.
    mark = len(d.notifications)
    d.signal(signal.SIGTERM)
    stop = next_index(d, mark, "STOPPING=1", "STOPPING=1 after SIGTERM")
    for m in d.notifications[mark:stop + 1]:
        fields(m)
        check("READY=1" not in m.split("\n"), "READY=1 after SIGTERM: %r" % m)
    try:
        rc = d.proc.wait(STOP_TIMEOUT)
    except Exception:
        fail("backfilld did not exit within %.0f s of SIGTERM\n%s"
             % (STOP_TIMEOUT, d.log_tail()))
    d.proc = None
    eq(rc, 0, "backfilld exit status after SIGTERM")


def test_broken_reload():
    d = notify_daemon("notify-broken")
    good = d.config_text
    # An unknown key on a known line: the last line of the file.
    broken = good + "no_such_key: 1\n"
    d.write_config(broken)
    # the line as written (the harness may add a line of its own after it)
    bad_line = d.config_text.split("\n").index("no_such_key: 1") + 1

    mark = len(d.notifications)
    d.signal(signal.SIGHUP)
    rel = next_index(d, mark, "RELOADING=1", "RELOADING=1 after SIGHUP")
    back = next_index(d, rel + 1, "READY=1", "READY=1 after the refused reload")

    # The error and its position in STATUS= (with READY=1 or after it).
    pos = re.compile(r"backfilld\.yaml:(\d+):(\d+)")
    hit = wait_for(d, rel, lambda m: pos.search(fields(m).get("STATUS", "")),
                   "STATUS= naming backfilld.yaml:LINE:COLUMN after a broken reload")
    hit = [fields(d.notifications[hit])["STATUS"]]
    eq(int(pos.search(hit[0]).group(1)), bad_line, "line of the error in STATUS=%r" % hit[0])
    check(back > rel, "READY=1 came before RELOADING=1")

    d.assert_alive("after a broken reload")
    jobs = d.status()
    check("noop_daily" in jobs, "the old configuration was not kept: %r" % (jobs,))
    d.stop()


def fill_queue(path):
    """Send datagrams to the socket at path until its queue is full (as a
    service manager's that stopped reading); how many went in."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setblocking(False)
    n = 0
    try:
        while True:
            try:
                s.sendto(b"TEST_FILLER=1", path)
            except BlockingIOError:
                return n
            n += 1
            check(n < 100000, "the notify socket's queue never filled")
    finally:
        s.close()


def test_unread_socket_keeps_the_loop():
    """Nobody reads NOTIFY_SOCKET and its queue is full: backfillctl is
    answered, a reload and a backfill go through, SIGTERM stops the daemon
    (within the harness's guards: a liveness test, no timing).  A sender
    that blocks until the manager reads (sd_notify) hangs the loop at the
    first WATCHDOG=1 or RELOADING=1 and fails the first backfillctl."""
    d = notify_daemon("notify-unread")
    with d.notify_unread():
        fill_queue(d.notify_path)
        d.ok("reload")    # RELOADING=1 and READY=1 wait their bound, dropped
        d.ok("backfill", "noop_daily", "--from", "2026-03-01", "--to", "2026-03-03",
             "--wait")    # STATUS= lines dropped without waiting
        st = d.status()
        check("noop_daily" in st, "status while the notify queue is full: %r" % (st,))
        eq(st["noop_daily"]["succeeded"], 3, "noop_daily runs while the notify queue is full")
        d.stop()          # STOPPING=1 waits its bound, dropped; exit status 0
    with open(d.log, errors="replace") as f:
        said = [line for line in f if "notify:" in line and "NOTIFY_SOCKET" in line]
    eq(len(said), 1, "log lines about notifications not sent (once): %r" % said)
    check("dropped" in said[0] and "full" in said[0],
          "the log line says the message was dropped on a full queue: %r" % said[0])


if __name__ == "__main__":
    main([test_sequence, test_broken_reload, test_unread_socket_keeps_the_loop])
