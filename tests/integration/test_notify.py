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
"""

import os
import re
import select
import signal
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


def wait_any(d, deadline, what):
    """Receive one more datagram into d.notifications; fail when the daemon
    exits first or the guard runs out."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            fail("no %s from backfilld within %.0f s (guard); notifications:\n%s\n%s"
                 % (what, GUARD, "\n".join(repr(m) for m in d.notifications),
                    d.log_tail()))
        r, _, _ = select.select([d.notify], [], [], min(left, 0.5))
        if r:
            d.notifications.append(d.notify.recv(65536).decode("utf-8", "replace"))
            return
        if d.proc.poll() is not None:
            rc = d.proc.returncode
            d.proc = None
            fail("backfilld exited with status %s before %s\n%s"
                 % (rc, what, d.log_tail()))


def wait_for(d, start, pred, what):
    """Index in d.notifications of the first datagram from `start` on for
    which pred(datagram) holds, receiving more as needed."""
    deadline = time.monotonic() + GUARD
    i = start
    while True:
        while i < len(d.notifications):
            if pred(d.notifications[i]):
                return i
            i += 1
        wait_any(d, deadline, what)


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


if __name__ == "__main__":
    main([test_sequence, test_broken_reload])
