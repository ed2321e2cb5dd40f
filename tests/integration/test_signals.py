#!/usr/bin/env python3
"""SIGTERM during runs (issue 5, backfilld(8) SIGNALS): the daemon stops taking
runs, waits shutdown_grace for the runs in flight, cancels them, exits 0;
the cancelled partitions are queued again and run at the next start.  A
second SIGTERM cancels at once, without waiting for the grace period.

The runs are command jobs that block: each announces itself on a FIFO (the
test learns that it is running from that event, not from a sleep), then
sleeps 30 s, far longer than the grace.  After the stop a `release` file
makes every later attempt finish at once."""
import os
import select
import signal
import subprocess
import time

import harness as h

SCRIPT = r"""#!/bin/sh
# $1 = the partition.  attempts.log counts executions; landed.txt is the
# effect, written idempotently (a partition lands once however often it runs).
set -e
dir="$(dirname "$0")"
p="$1"
echo "$p" >> "$dir/attempts.log"
if [ ! -e "$dir/release" ]; then
    echo "$p" > "$dir/started.fifo"   # the test reads it: "running"
    if [ -e "$dir/finish_on_release" ]; then
        # wait for the test's go-ahead, then land
        while [ ! -e "$dir/release" ]; do sleep 0.05; done
    else
        exec sleep 30                 # blocks until cancelled
    fi
fi
grep -qx "$p" "$dir/landed.txt" 2>/dev/null || echo "$p" >> "$dir/landed.txt"
"""

JOBS = """
- name: export
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 2
  retries: 0
  command: ["/bin/sh", "{dir}/job.sh", "{partition}"]
"""

FIRST, LAST = "2026-02-01", "2026-02-06"
MARGIN = 8.0   # seconds allowed beyond the grace for the cancel and teardown


def lines(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip()]
    except FileNotFoundError:
        return []


def make(name, grace, finish_on_release=False):
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 4, "shutdown_grace": "%ds" % grace},
                 name=name, start=False)
    with open(os.path.join(d.dir, "job.sh"), "w") as f:
        f.write(SCRIPT)
    os.mkfifo(os.path.join(d.dir, "started.fifo"))
    if finish_on_release:
        open(os.path.join(d.dir, "finish_on_release"), "w").close()
    d.start()
    return d


def wait_started(d, n):
    """Read n partition keys from started.fifo (each a run that began)."""
    path = os.path.join(d.dir, "started.fifo")
    rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    # Our own writer keeps the FIFO from reporting EOF between the jobs'
    # writes (which would make select() spin).
    wfd = os.open(path, os.O_WRONLY)
    got, buf = [], b""
    deadline = time.monotonic() + 60
    try:
        while len(got) < n:
            left = deadline - time.monotonic()
            h.check(left > 0, "only %r of %d runs started within 60 s (guard)\n%s"
                    % (got, n, d.log_tail()))
            with d.draining():
                r, _, _ = select.select([rfd], [], [], left)
            if not r:
                continue
            buf += os.read(rfd, 4096)
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                got.append(line.decode())
    finally:
        os.close(wfd)
        os.close(rfd)
    return got


def state_rows(d, sql, params=()):
    return d.state_rows(sql, params)


def wait_exit(d, timeout, what):
    """Wait for the daemon to exit after a signal sent already; its status."""
    try:
        with d.draining():
            rc = d.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        h.fail("backfilld did not exit %s\n%s" % (what, d.log_tail()))
    d.proc = None
    return rc


def sigterm_and_time(d):
    """SIGTERM; wait for the exit (guard STOP_TIMEOUT); (rc, seconds)."""
    t0 = time.monotonic()
    rc = d.stop(expect_rc=None)
    return rc, time.monotonic() - t0


def check_stopped_state(d, running):
    """The state store after the stop: the interrupted partitions queued,
    their attempts cancelled, nothing left running."""
    rows = state_rows(d, "SELECT partition_key, state FROM manifest WHERE job = 'export'")
    st = dict(rows)
    for p in running:
        h.eq(st.get(p), "queued", "manifest state of %s (running at SIGTERM) after the stop" % p)
    h.eq(sorted(p for p, s in rows if s == "running"), [], "manifest rows left running")
    runs = state_rows(d, "SELECT partition_key, state FROM runs WHERE job = 'export'")
    h.eq(sorted(p for p, s in runs if s == "cancelled"), sorted(running),
         "runs recorded as cancelled by the stop")
    h.eq(sorted(p for p, s in runs if s == "running"), [], "runs left running")
    h.eq([p for p, s in runs if s == "succeeded"], [], "runs that succeeded before the release")


def check_rerun(d, req, running):
    """After the restart: the request completes; every partition lands
    exactly once; the interrupted ones show a cancelled attempt and a later
    succeeded one."""
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    want = h.days(FIRST, LAST)
    h.eq(sorted(lines(os.path.join(d.dir, "landed.txt"))), want,
         "partitions landed (each exactly once)")
    runs = d.runs()
    for p in want:
        mine = [r for r in runs if r["partition"] == p]
        ok = [r for r in mine if r["state"] == "succeeded"]
        h.eq(len(ok), 1, "succeeded runs of %s" % p)
        cancelled = [r for r in mine if r["state"] == "cancelled"]
        if p in running:
            h.eq(len(cancelled), 1, "cancelled runs of %s (running at SIGTERM)" % p)
            h.check(cancelled[0]["id"] < ok[0]["id"],
                    "%s: the cancelled attempt (run %s) comes before the succeeded one (run %s)"
                    % (p, cancelled[0]["id"], ok[0]["id"]))
            h.check(cancelled[0]["finished_at"] is not None,
                    "%s: the cancelled run has no finished_at: %r" % (p, cancelled[0]))
        else:
            h.eq(cancelled, [], "cancelled runs of %s (not started before SIGTERM)" % p)
        h.eq([r for r in mine if r["state"] == "failed"], [], "failed runs of %s" % p)
    h.eq([r for r in runs if r["state"] in ("running", "queued")], [],
         "runs left running or queued after the request finished")
    st = d.status()["export"]
    h.eq((st["queued"], st["running"], st["failed"]), (0, 0, 0), "status after the restart")


def test_sigterm_grace_then_cancel():
    grace = 1
    d = make("sigterm", grace)
    req = d.enqueue("backfill", "export", "--from", FIRST, "--to", LAST)
    running = sorted(wait_started(d, 2))
    h.eq(running, ["2026-02-01", "2026-02-02"], "runs in flight (concurrency 2, oldest first)")

    rc, took = sigterm_and_time(d)
    h.eq(rc, 0, "backfilld exit status after SIGTERM with runs in flight")
    h.check(took >= grace - 0.2,
            "backfilld exited %.2f s after SIGTERM, before the %d s grace: it did not wait "
            "for the runs in flight" % (took, grace))
    h.check(took <= grace + MARGIN,
            "backfilld took %.1f s to exit after SIGTERM (grace %d s + %.0f s margin)"
            % (took, grace, MARGIN))
    with open(d.log) as f:
        log = f.read()
    h.check("shutdown grace over" in log and "cancelling 2 runs" in log,
            "no log line about cancelling the 2 runs in flight:\n" + d.log_tail())
    h.check(any(n.startswith("STOPPING=1") or "\nSTOPPING=1" in n for n in d.notifications),
            "no STOPPING=1 notification during the stop: %r" % d.notifications)
    check_stopped_state(d, running)
    for p in running:
        h.eq(lines(os.path.join(d.dir, "attempts.log")).count(p), 1,
             "executions of %s before the stop" % p)

    open(os.path.join(d.dir, "release"), "w").close()
    d.start()
    check_rerun(d, req, running)
    attempts = lines(os.path.join(d.dir, "attempts.log"))
    for p in h.days(FIRST, LAST):
        h.eq(attempts.count(p), 2 if p in running else 1, "executions of %s" % p)
    d.stop()


def test_second_sigterm_cancels_at_once():
    grace = 120   # far above what the test allows: only the second signal can end it
    d = make("sigterm2", grace)
    req = d.enqueue("backfill", "export", "--from", FIRST, "--to", LAST)
    running = sorted(wait_started(d, 2))

    t0 = time.monotonic()
    d.signal(signal.SIGTERM)
    # The first SIGTERM is handled once the daemon says STOPPING=1 (an event).
    d.wait_notification("STOPPING=1", 30, what="STOPPING=1 after the first SIGTERM")
    h.check(d.alive(), "backfilld exited after the first SIGTERM although runs were "
            "in flight and the grace is %d s\n%s" % (grace, d.log_tail()))
    rc, took = sigterm_and_time(d)   # the second SIGTERM
    took_all = time.monotonic() - t0
    h.eq(rc, 0, "backfilld exit status after the second SIGTERM")
    h.check(took <= MARGIN,
            "backfilld took %.1f s to exit after the second SIGTERM (grace %d s): the "
            "second signal did not cancel at once" % (took, grace))
    h.check(took_all < grace, "the stop took the whole grace (%.1f s)" % took_all)
    check_stopped_state(d, running)

    open(os.path.join(d.dir, "release"), "w").close()
    d.start()
    check_rerun(d, req, running)
    d.stop()


def test_sigterm_waits_for_runs_in_flight():
    """Runs that finish within the grace period complete and are recorded as
    succeeded; the partitions not started yet stay queued (no new runs once
    stopping) and run at the next start."""
    grace = 120
    d = make("sigwait", grace, finish_on_release=True)
    req = d.enqueue("backfill", "export", "--from", FIRST, "--to", LAST)
    running = sorted(wait_started(d, 2))
    t0 = time.monotonic()
    d.signal(signal.SIGTERM)
    d.wait_notification("STOPPING=1", 30, what="STOPPING=1 after SIGTERM")
    h.check(d.alive(), "backfilld exited at SIGTERM without waiting for its 2 runs "
            "in flight (grace %d s)\n%s" % (grace, d.log_tail()))
    open(os.path.join(d.dir, "release"), "w").close()   # the runs in flight finish
    rc = wait_exit(d, MARGIN + 10, "once its runs in flight finished")
    h.eq(rc, 0, "backfilld exit status after SIGTERM")
    h.check(time.monotonic() - t0 < grace, "the stop waited for the whole grace period")
    h.eq(sorted(lines(os.path.join(d.dir, "landed.txt"))), running,
         "partitions landed during the stop: exactly the runs in flight")
    h.eq(sorted(lines(os.path.join(d.dir, "attempts.log"))), running,
         "partitions started: no new run once stopping")
    st = dict(state_rows(d, "SELECT partition_key, state FROM manifest WHERE job = 'export'"))
    want = h.days(FIRST, LAST)
    h.eq(st, {p: ("succeeded" if p in running else "queued") for p in want},
         "manifest after the stop")
    runs = state_rows(d, "SELECT partition_key, state FROM runs WHERE job = 'export'")
    h.eq(sorted(runs), [(p, "succeeded") for p in running], "runs after the stop")

    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    h.eq(sorted(lines(os.path.join(d.dir, "landed.txt"))), want, "partitions landed")
    h.eq(sorted(lines(os.path.join(d.dir, "attempts.log"))), want,
         "executions: each partition once")
    rs = d.runs()
    for p in want:
        h.eq([r["state"] for r in rs if r["partition"] == p], ["succeeded"], "runs of %s" % p)
    d.stop()


def test_sigint_like_sigterm():
    """SIGINT (Ctrl-C in a terminal) stops the daemon the same way."""
    d = make("sigint", 1)
    req = d.enqueue("backfill", "export", "--from", FIRST, "--to", LAST)
    running = sorted(wait_started(d, 2))
    d.signal(signal.SIGINT)
    rc = wait_exit(d, 1 + MARGIN, "within %.0f s of SIGINT" % (1 + MARGIN))
    h.eq(rc, 0, "backfilld exit status after SIGINT")
    check_stopped_state(d, running)
    open(os.path.join(d.dir, "release"), "w").close()
    d.start()
    check_rerun(d, req, running)
    d.stop()


if __name__ == "__main__":
    h.main([test_sigterm_grace_then_cancel, test_second_sigterm_cancels_at_once,
            test_sigterm_waits_for_runs_in_flight, test_sigint_like_sigterm])
