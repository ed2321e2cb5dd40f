#!/usr/bin/env python3
"""A blocked downstream partition is owed while the daemon runs (issue 24,
item 3).

The day 2026-03-03 of `fact` fails (due 03-04 00:00, run at 00:30), which
blocks the week 2026-03-02 of `mart` (deadline 1h).  At 01:45 the running
daemon counts the week late and runs on_late once, as a daemon restarted at
the same clock does (docs/configuration.md, "Freshness and hooks").  Once the day is
fixed and rerun, the week is released, rebuilt and no longer late.  On main
the running daemon never counted the blocked week late; only a restart did.
"""
import os

import harness as h
import test_hooks as th
import test_schedule as ts

JOBS = ("- name: fact\n  partition: day\n  start: 2026-03-03\n  retries: 0\n"
        "  command: [\"sh\", \"-c\", \"test -e {dir}/fixed || { echo broken >&2; exit 3; }\"]\n"
        "- name: mart\n  partition: week\n  upstream: [fact]\n  retries: 0\n"
        "  command: [\"true\"]\n  deadline: 1h\n  on_late: " + th.HOOK % "late.txt" + "\n")


def late(d):
    st = ts.job_status(d, "mart")
    return st["late"], st["oldest_late"], st["blocked"]


def test_blocked_week_late_while_running():
    d = ts.sched_daemon(JOBS, "2026-03-04T00:30:00Z", "late-blocked")
    reqs = ts.new_requests(d)
    h.eq([(k, j) for k, j, _ in reqs], [("schedule", "fact")], "the schedule's request")
    h.eq(ts.job_status(d, "fact")["failed"], 1, "the day failed")
    h.eq(late(d), (0, None, 1), "mart before its deadline: blocked, not late")
    req = [r for r in d.runs(include_boot=True) if r["job"] == "fact"][0]["request"]

    ts.tick(d, "2026-03-04T01:45:00Z")
    lines = th.await_lines(d, "late.txt", 1, "on_late of the blocked week")
    h.eq([l.split("|")[1:4] for l in lines], [["mart", "2026-03-02", str(req)]],
         "on_late values (job, partition, request)")
    h.eq(late(d), (1, "2026-03-02", 1), "mart late while the daemon runs")
    running = ts.job_status(d, "mart")

    # a plain restart at the same clock sees the same
    d.stop()
    d.start()
    restarted = ts.job_status(d, "mart")
    h.eq((restarted["late"], restarted["oldest_late"], restarted["blocked"]),
         (running["late"], running["oldest_late"], running["blocked"]),
         "mart after a restart at the same clock")
    th.await_lines(d, "late.txt", 2, "on_late again after the restart (at least once)")

    # fixed and rerun: the week is released, rebuilt, no longer owed
    open(os.path.join(d.dir, "fixed"), "w").close()
    d.ok("rerun", "fact", "2026-03-03", "--wait")
    for rq in sorted({r["request"] for r in d.runs(include_boot=True)}):
        d.wait_request(rq)
    h.eq(late(d), (0, None, 0), "mart once the week is rebuilt")
    d.stop()


if __name__ == "__main__":
    h.main([test_blocked_week_late_while_running])
