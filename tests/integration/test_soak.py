#!/usr/bin/env python3
"""test_soak.py - what accumulates stays bounded while the schedule runs.

Sixty simulated days of ten hourly jobs on the test clock, a day per step
(each step a catchup of 24 partitions per job, 14,400 runs in all).  At
every step: the state store's WAL stays below its bound.  Between the
first steps and the last: `status` costs the same (the loop thread's CPU
time per answer at the end is at most twice the one at the start, plus
50 us of slack; CPU time rather than wall time, which moves with whatever
else the machine does), the daemon's descriptors do not
grow, its resident memory grows by at most a few MiB.  At the end: every
partition of every job ran exactly once (the job SQL appends a row per
run, so a partition run twice shows as two rows), and status counts them.
The warehouse's backfilld_commits holds a row per run of the jobs kept a
year, and of h0 (keep_runs: 10d) only the last ten days and a step: each
run deletes its job's rows older than keep_runs.

The wait for each step is a bounded poll of status (every job's watermark
at the new hour and nothing queued or running), as in test_schedule.py:
the daemon acknowledges no clock change otherwise.
"""

import datetime
import os
import time

import harness as h

JOBS = 10
DAYS = 60
WARM = 15                      # the day the first figures are taken
KEEP_DAYS = 10                 # h0's keep_runs
WAL_BOUND = 24 * 1024 * 1024   # the store's bound is 16 MiB plus a commit's worth
GUARD = 120.0                  # guard: a day's runs must be done within this
START = datetime.datetime(2026, 1, 1)


def jobs_yaml():
    out = []
    for i in range(JOBS):
        out.append("- name: h%d\n  warehouse: wh\n  partition: hour\n"
                   "  start: 2026-01-01\n  catchup: true\n  max_catchup: 48\n"
                   "  sql: INSERT INTO ran (job, k) VALUES ('h%d', :partition)\n"
                   % (i, i))
        if i == 0:
            out.append("  keep_runs: %dd\n" % KEEP_DAYS)
    return "".join(out)


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    h.fail("no VmRSS for pid %d" % pid)


def sanitized(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def fds(pid):
    """The daemon's descriptors: the least of a few counts 20 ms apart, so
    that the daemon side of a client connection just closed (it sees the
    close a moment later) is not counted; a leak shows in every count."""
    counts = []
    for _ in range(5):
        counts.append(len(os.listdir("/proc/%d/fd" % pid)))
        time.sleep(0.02)
    return min(counts)


def main_thread_cpu_ns(pid):
    """CPU time the daemon's loop thread has used (schedstat, in ns)."""
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        return int(f.read().split()[0])


def status_cost(d, n=40):
    """What one status answer costs the daemon's loop thread, in
    microseconds of CPU (the mean over n answers over the raw protocol):
    unlike a wall-clock time, it does not move with the machine's load."""
    d.drain_notifications()
    pid = d.proc.pid
    before = main_thread_cpu_ns(pid)
    for _ in range(n):
        _, resp = d._request({"cmd": "status", "json": "1"}, h.CTL_TIMEOUT)
        h.eq(resp.get("status"), "0", "status answer")
    return (main_thread_cpu_ns(pid) - before) / n / 1000.0


def figures(d, pid):
    """(status cost, descriptors, VmRSS): descriptors and memory first,
    before the status calls' connections (whose daemon side closes a
    moment after the client's) come and go."""
    n, rss = fds(pid), vm_rss_kib(pid)
    return status_cost(d), n, rss


def wait_day(d, when):
    """Poll status until every job's watermark is the hour before `when`
    and nothing is queued or running."""
    want = (when - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H")
    deadline = time.monotonic() + GUARD
    while True:
        st = d.json("status")
        if (st["queued"] == 0 and st["running"] == 0 and
                all(j["watermark"] == want for j in st["jobs"])):
            return st
        if time.monotonic() > deadline:
            h.fail("the runs due by %s were not done within %.0f s (guard): %r"
                   % (when, GUARD, [(j["name"], j["watermark"]) for j in st["jobs"]]))
        time.sleep(0.02)


def test_sixty_days_stay_bounded():
    d = h.Daemon(jobs=jobs_yaml(), warehouses={"wh": "CREATE TABLE ran (job TEXT, k TEXT);"},
                 settings={"max_concurrency": 4}, clock="2026-01-01T00:00:00Z",
                 name="soak")
    # SQLite's WAL must stay bounded; the rest holds on either store
    wal = d.state_db + "-wal" if h.STATE == "sqlite" else None
    pid = d.proc.pid
    first = None
    max_wal = 0
    for day in range(1, DAYS + 1):
        when = START + datetime.timedelta(days=day)
        d.set_clock(when.strftime("%Y-%m-%dT%H:%M:%SZ"))
        wait_day(d, when)
        if wal is not None and os.path.exists(wal):
            size = os.path.getsize(wal)
            max_wal = max(max_wal, size)
            h.check(size <= WAL_BOUND, "day %d: the WAL is %d bytes, above %d"
                    % (day, size, WAL_BOUND))
        if day > KEEP_DAYS:
            n = commits_of(d, "h0")
            h.check(n <= (KEEP_DAYS + 1) * 24, "day %d: backfilld_commits holds %d rows of"
                    " h0, above %d (keep_runs %dd)" % (day, n, (KEEP_DAYS + 1) * 24, KEEP_DAYS))
        if day == WARM:   # after warm-up: caches, pools and lazily opened connections at their size
            first = figures(d, pid)
    last = figures(d, pid)
    print("status %.0f us -> %.0f us of CPU, fds %d -> %d, rss %d -> %d KiB, max WAL %d bytes"
          % (first[0], last[0], first[1], last[1], first[2], last[2], max_wal))
    h.check(last[0] <= 2 * first[0] + 50,
            "status cost %.0f us of CPU at day %d, %.0f us at day %d" % (last[0], DAYS, first[0], WARM))
    h.check(last[1] <= first[1], "descriptors grew from %d to %d" % (first[1], last[1]))
    if sanitized(pid):
        print("(AddressSanitizer keeps freed memory in quarantine: the RSS bound is not checked)")
    else:
        h.check(last[2] - first[2] <= 8 * 1024,
                "resident memory grew from %d to %d KiB" % (first[2], last[2]))
    # every partition of every job ran exactly once
    rows = d.query("SELECT job, k, COUNT(*) FROM ran GROUP BY job, k", wh="wh")
    h.eq(len(rows), JOBS * DAYS * 24, "partitions that ran")
    twice = [r for r in rows if r[2] != 1]
    h.check(not twice, "partitions that ran more than once: %r" % twice[:5])
    st = d.json("status")
    h.eq(sorted(j["succeeded"] for j in st["jobs"]), [DAYS * 24] * JOBS,
         "succeeded counts in status")
    h.eq(st["runs_kept"], JOBS * DAYS * 24, "runs_kept in status")
    h.eq(commits_of(d, "h1"), DAYS * 24, "backfilld_commits rows of h1 (kept a year)")
    h.eq(commits_of(d, "h0"), (KEEP_DAYS + 1) * 24, "backfilld_commits rows of h0 at the end")
    d.stop()


def commits_of(d, job):
    return d.query("SELECT count(*) FROM backfilld_commits WHERE job = ?", (job,),
                   wh="wh")[0][0]


if __name__ == "__main__":
    h.main([test_sixty_days_stay_bounded])
