#!/usr/bin/env python3
"""Freshness deadlines and hooks (issue 15, README.md "Freshness and
hooks"), on the real daemon with the test clock.

Every hook here is `sh -c` with the placeholders as its positional
arguments, appending one line "ARGV|JOB|PARTITION|REQUEST|ERROR" (argv
joined by spaces, then the four BACKFILLD_* variables) to a file; a test
waits for the lines it expects (bounded poll, guard timeout) and, to show
that a hook did not fire again, waits for a later event that the daemon
can only produce after it acted on the clock change (test_schedule.tick).
"""
import os
import time

import harness as h
import test_schedule as ts

GUARD = 20.0
POLL = 0.02

HOOK = ('["sh", "-c", "printf \'%%s\\\\n\' \\"$*|$BACKFILLD_JOB|$BACKFILLD_PARTITION|'
        '$BACKFILLD_REQUEST|$BACKFILLD_ERROR\\" >> {dir}/%s", "hook",'
        ' "{job}", "{partition}", "{request}", "{error}"]')


def hook_lines(d, name):
    path = os.path.join(d.dir, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l for l in f.read().splitlines() if l]


def await_lines(d, name, n, what):
    """Wait until file `name` has at least n lines; return them."""
    deadline = time.monotonic() + GUARD
    while True:
        lines = hook_lines(d, name)
        if len(lines) >= n:
            return lines
        if time.monotonic() > deadline:
            h.fail("%s: %d lines in %s after %.0f s (guard), expected %d\n%s"
                   % (what, len(lines), name, GUARD, n, d.log_tail()))
        time.sleep(POLL)


def await_log(d, pattern, what):
    deadline = time.monotonic() + GUARD
    while True:
        got = ts.log_lines(d, pattern)
        if got:
            return got
        if time.monotonic() > deadline:
            h.fail("%s: no log line matching %r after %.0f s (guard)\n%s"
                   % (what, pattern, GUARD, d.log_tail()))
        time.sleep(POLL)


def failing_job(name, extra=""):
    return ("- name: %s\n  partition: day\n  start: 2026-03-03\n  retries: 0\n"
            "  command: [\"sh\", \"-c\", \"echo broken >&2; exit 3\"]\n%s"
            % (name, "".join("  %s\n" % l for l in extra.split("\n") if l)))


def test_on_failure_once_with_values():
    """A partition's last attempt fails: on_failure runs once, with its job,
    partition, request and error in argv and in the environment."""
    d = ts.sched_daemon(failing_job("breaks", "on_failure: " + HOOK % "fail.txt"),
                        "2026-03-04T00:30:00Z", "hk-fail")
    reqs = ts.new_requests(d)
    h.eq([(k, j, p) for k, j, p in reqs], [("schedule", "breaks", ["2026-03-03"])],
         "requests at start")
    rq = [r for r in d.runs(include_boot=True) if r["job"] == "breaks"][0]
    lines = await_lines(d, "fail.txt", 1, "on_failure")
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 done",
              "the hook's end in the log")
    h.eq(len(hook_lines(d, "fail.txt")), 1, "on_failure ran once")
    argv, job, part, req, err = lines[0].split("|")
    h.eq(argv.split(" ")[:3], ["breaks", "2026-03-03", str(rq["request"])],
         "argv {job} {partition} {request}")
    h.eq((job, part, req), ("breaks", "2026-03-03", str(rq["request"])),
         "BACKFILLD_JOB, BACKFILLD_PARTITION, BACKFILLD_REQUEST")
    h.check(err == rq["error"] and "3" in err,
            "BACKFILLD_ERROR %r is the run's error %r" % (err, rq["error"]))
    h.check(argv.endswith(rq["error"]), "argv ends with {error}: %r" % argv)
    # the next day fails too: one more line, for that partition only
    ts.tick(d, "2026-03-05T00:30:00Z")
    ts.new_requests(d)
    lines = await_lines(d, "fail.txt", 2, "on_failure of the next day")
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-04 done", "2nd hook")
    h.eq([l.split("|")[2] for l in hook_lines(d, "fail.txt")],
         ["2026-03-03", "2026-03-04"], "on_failure partitions, once each")
    d.stop()


def test_late_counted_and_on_late_once():
    """deadline 2h: the failed partition of 03-03 (due 03-04 00:00) is not
    late at 01:30, late at 02:30 (status counts it, names it; on_late runs
    once), and on_late does not run again as the clock moves on."""
    d = ts.sched_daemon(failing_job("slow", "deadline: 2h\non_late: " + HOOK % "late.txt"),
                        "2026-03-04T00:30:00Z", "hk-late")
    ts.new_requests(d)
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"], st["failed"]), (0, None, 1),
         "status before the deadline")
    ts.tick(d, "2026-03-04T01:30:00Z")
    h.eq(ts.job_status(d, "slow")["late"], 0, "late at 01:30 (deadline 02:00)")
    ts.tick(d, "2026-03-04T02:30:00Z")
    lines = await_lines(d, "late.txt", 1, "on_late")
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"]), (1, "2026-03-03"), "status after the deadline")
    text = d.ok("status")
    h.check("late slow: 1 partition past the deadline of 7200s, oldest 2026-03-03" in text,
            "status text names the late partition:\n" + text)
    argv, job, part, req, err = lines[0].split("|")
    h.eq((job, part), ("slow", "2026-03-03"), "on_late values")
    h.check(argv.startswith("slow 2026-03-03 "), "on_late argv: %r" % argv)
    h.eq(err, "not landed 7200s after it was due", "on_late's {error} (README: Ns)")
    h.check(argv.endswith(" not landed 7200s after it was due"), "on_late's {error} in argv")
    # later clock moves: no second on_late for 03-03; 03-04 becomes late once
    ts.tick(d, "2026-03-04T05:30:00Z")
    ts.tick(d, "2026-03-05T00:30:00Z")
    ts.new_requests(d)
    ts.tick(d, "2026-03-05T03:30:00Z")
    await_lines(d, "late.txt", 2, "on_late for 2026-03-04")
    ts.tick(d, "2026-03-05T06:30:00Z")
    h.eq([l.split("|")[2] for l in hook_lines(d, "late.txt")],
         ["2026-03-03", "2026-03-04"], "on_late partitions, once each")
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"]), (2, "2026-03-03"), "two late, oldest named")
    # a restart: the failed partitions are owed still (read back from
    # partition_latest), late at once; on_late runs again for them (the
    # record of hooks run is in memory: at least once, see README)
    d.stop()
    d.start()
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"]), (2, "2026-03-03"), "late after a restart")
    await_lines(d, "late.txt", 4, "on_late again after the restart")
    d.stop()


def test_downstream_late_after_inputs_landed():
    """A downstream job's deadline runs from the landing of its input: the
    week of 03-03 (its input landed at 00:30) is late after 01:30."""
    jobs = ("- name: fact\n  partition: day\n  start: 2026-03-03\n  command: [\"true\"]\n"
            "- name: mart\n  partition: week\n  upstream: [fact]\n  retries: 0\n"
            "  command: [\"false\"]\n  deadline: 1h\n  on_late: " + HOOK % "late.txt" + "\n")
    d = ts.sched_daemon(jobs, "2026-03-04T00:30:00Z", "hk-down")
    ts.new_requests(d)
    h.eq(ts.job_status(d, "mart")["late"], 0, "mart late before its deadline")
    ts.tick(d, "2026-03-04T01:45:00Z")
    lines = await_lines(d, "late.txt", 1, "on_late of the week")
    h.eq(lines[0].split("|")[1:3], ["mart", "2026-03-02"], "on_late values")
    st = ts.job_status(d, "mart")
    h.eq((st["late"], st["oldest_late"]), (1, "2026-03-02"), "mart late")
    d.stop()


def test_on_refused():
    """Catchup refused (40 days missed, max_catchup 5): on_refused runs once
    with the gap as {partition} and the reason as {error}."""
    job = ("- name: big\n  partition: day\n  start: 2026-01-01\n  max_catchup: 5\n"
           "  command: [\"true\"]\n  on_refused: " + HOOK % "refused.txt" + "\n")
    d = ts.sched_daemon(job, "2026-02-10T00:30:00Z", "hk-refused")
    lines = await_lines(d, "refused.txt", 1, "on_refused")
    await_log(d, r"hook=on_refused job=big partition=2026-01-01\.\.2026-02-09 done", "its end")
    argv, job, part, req, err = lines[0].split("|")
    h.eq((job, part, req), ("big", "2026-01-01..2026-02-09", ""), "on_refused values")
    h.eq(err, "catchup refused: 40 partitions missed, above max_catchup 5", "{error}")
    h.eq(ts.job_status(d, "big")["catchup"], "refused", "status")
    ts.tick(d, "2026-02-11T00:30:00Z")
    h.eq(len(hook_lines(d, "refused.txt")), 1, "on_refused once")
    d.stop()


def test_slow_hook_does_not_delay_status():
    """A hook that takes 5 s: status answers while it runs."""
    hook = ('["sh", "-c", "echo started >> {dir}/slow.txt; sleep 5;'
            ' echo done >> {dir}/slow.txt"]')
    d = ts.sched_daemon(failing_job("breaks", "on_failure: " + hook),
                        "2026-03-04T00:30:00Z", "hk-slow")
    await_lines(d, "slow.txt", 1, "the slow hook's start")
    t0 = time.monotonic()
    d.status()
    took = time.monotonic() - t0
    h.eq(hook_lines(d, "slow.txt"), ["started"], "the hook still runs after status")
    h.check(took < 2.0, "status took %.2f s while the hook ran" % took)
    await_lines(d, "slow.txt", 2, "the slow hook's end")
    d.stop()


def test_hook_timeout_kills():
    """hook_timeout 1s: a hook that hangs is killed and logged, not retried."""
    hook = '["sh", "-c", "echo started >> {dir}/hang.txt; exec sleep 60"]'
    d = ts.sched_daemon(failing_job("breaks", "on_failure: " + hook),
                        "2026-03-04T00:30:00Z", "hk-hang",
                        settings={"max_concurrency": 4, "hook_timeout": "1s"})
    await_lines(d, "hang.txt", 1, "the hanging hook's start")
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 killed after its"
              r" hook_timeout", "the timeout")
    h.eq(hook_lines(d, "hang.txt"), ["started"], "not retried")
    d.stop()


if __name__ == "__main__":
    h.main([
        test_on_failure_once_with_values,
        test_late_counted_and_on_late_once,
        test_downstream_late_after_inputs_landed,
        test_on_refused,
        test_slow_hook_does_not_delay_status,
        test_hook_timeout_kills,
    ])
