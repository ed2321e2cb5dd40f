#!/usr/bin/env python3
"""test_future.py - nothing before its time (docs/commands.md, backfill
and rerun).

A partition whose interval has not closed yet cannot be built:
`backfill` (a range, a dates file) and `rerun` refuse it with one line,
exit 2, naming the first such partition and when it closes, and change
nothing (the state store as it was, nothing ran) - a typo's year
(2027 for 2026), a day of next month, today's open partition, the
current hour of an hourly job, the current week of a weekly one.  A
partition that closed but whose ready_after has not passed may be
built (it is `mark` that waits for the due time); the day before today
is built.  With `build_future: true` (the suite's harness sets it for
every other test, whose clock is before the dates they build) they are
built, and mark still refuses what is not due.
"""
import os
import tempfile

import harness as h
import test_schedule as ts

JOBS = """
- name: fact
  partition: day
  start: 2026-01-01
  catchup: false
  ready_after: 6h
  command: ["sh", "-c", "echo fact {partition} >> %(m)s"]
- name: d
  partition: day
  upstream: [fact]
  command: ["sh", "-c", "echo d {partition} >> %(m)s"]
- name: hourly
  partition: hour
  start: 2026-01-01T00
  catchup: false
  command: ["sh", "-c", "echo hourly {partition} >> %(m)s"]
- name: weekly
  partition: week
  start: 2026-01-05
  catchup: false
  command: ["sh", "-c", "echo weekly {partition} >> %(m)s"]
"""


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split("\n")[:-1]


def test_future():
    mdir = tempfile.mkdtemp(prefix="bfd-future-")
    m = os.path.join(mdir, "ran.txt")
    dates = os.path.join(mdir, "dates.txt")
    with open(dates, "w") as f:
        f.write("2026-02-01\n2026-02-21\n")
    # Saturday 2026-02-21 03:30: fact 2026-02-20 has closed (not yet
    # due: ready_after 6h), 2026-02-21 is open; hour 03 is open
    d = h.Daemon(jobs=JOBS % {"m": m}, name="future", clock="2026-02-21T03:30:00Z",
                 settings={"build_future": "false"})
    d.settle()
    state = d.state_dump()
    ran = lines(m)
    for args, want in (
            (("backfill", "fact", "--from", "2027-02-10", "--to", "2027-02-11"),
             "fact 2027-02-10 has not closed yet: it closes at 2027-02-11T00:00:00.000Z"),
            (("backfill", "fact", "--from", "2026-02-19", "--to", "2026-02-22"),
             "fact 2026-02-21 has not closed yet: it closes at 2026-02-22T00:00:00.000Z"),
            (("backfill", "fact", "--from", "2026-02-21", "--to", "2026-02-21", "--dry-run"),
             "fact 2026-02-21 has not closed yet"),
            (("backfill", "fact", "--dates-file", dates),
             "fact 2026-02-21 has not closed yet"),
            (("rerun", "d", "2026-12-20"),
             "d 2026-12-20 has not closed yet: it closes at 2026-12-21T00:00:00.000Z"),
            (("rerun", "fact", "2026-02-21"), "fact 2026-02-21 has not closed yet"),
            (("rerun", "hourly", "2026-02-21T03"),
             "hourly 2026-02-21T03 has not closed yet: it closes at 2026-02-21T04:00:00.000Z"),
            (("backfill", "hourly", "--from", "2026-02-21", "--to", "2026-02-21"),
             "hourly 2026-02-21T03 has not closed yet"),
            (("rerun", "weekly", "2026-02-16"),
             "weekly 2026-02-16 has not closed yet: it closes at 2026-02-23T00:00:00.000Z"),
    ):
        rc, out, err = d.ctl(*args)
        e = h.one_line_error(rc, out, err, 2, " ".join(args))
        h.check(want in e and "nothing was queued" in e, "%s: %r" % (" ".join(args), e))
    h.eq(d.state_dump(), state, "the store after the refusals")
    h.eq(lines(m), ran, "nothing ran for the refusals")

    # what has closed is built: the day before today (closed, not yet
    # due), the hour before this one, last week
    for args in (("rerun", "fact", "2026-02-20"), ("rerun", "hourly", "2026-02-21T02"),
                 ("rerun", "weekly", "2026-02-09"),
                 ("backfill", "fact", "--from", "2026-02-19", "--to", "2026-02-20")):
        h.eq(d.wait_request(d.enqueue(*args)).get("failed"), "0", " ".join(args))
    got = lines(m)[len(ran):]
    for want in ("fact 2026-02-20", "d 2026-02-20", "hourly 2026-02-21T02", "weekly 2026-02-09",
                 "fact 2026-02-19"):
        h.check(want in got, "%s ran: %r" % (want, got))
    # the clock moves on: the day that was open has closed and is built
    d.set_clock("2026-02-22T00:00:01Z")
    h.eq(d.wait_request(d.enqueue("rerun", "fact", "2026-02-21")).get("failed"), "0",
         "rerun once closed")
    d.stop()


def test_build_future():
    """build_future: true lets backfill and rerun build a partition that
    has not closed (a forecast's dates to come); mark still waits."""
    mdir = tempfile.mkdtemp(prefix="bfd-future-")
    m = os.path.join(mdir, "ran.txt")
    d = h.Daemon(jobs=JOBS % {"m": m}, name="buildfuture", clock="2026-02-21T03:30:00Z",
                 settings={"build_future": "true"})
    d.settle()
    h.eq(d.wait_request(d.enqueue("rerun", "fact", "2026-02-21")).get("failed"), "0",
         "rerun of the open day")
    h.eq(d.wait_request(d.enqueue("backfill", "fact", "--from", "2027-02-10", "--to",
                                  "2027-02-11")).get("failed"), "0", "a backfill of 2027")
    got = lines(m)
    for want in ("fact 2026-02-21", "d 2026-02-21", "fact 2027-02-10", "fact 2027-02-11"):
        h.check(want in got, "%s ran: %r" % (want, got))
    rc, out, err = d.ctl("mark", "fact", "2026-02-22", "--succeeded", "--reason", "r")
    e = h.one_line_error(rc, out, err, 2, "mark of a day to come")
    h.check("fact 2026-02-22 is not due yet: it comes due at 2026-02-23T06:00:00.000Z" in e, e)
    d.stop()


# A scheduled fact with the marts of issue 41's lesson, each command
# appending "JOB PARTITION START END" to ran.txt (test_schedule's form)
MARTS = ts.cmd_job("fct", "day", "2026-03-25",
                   "ready_after: 3h\ncatchup: true\nmax_catchup: 14") + """
- name: mart_rolling_7d
  partition: day
  upstream: [{job: fct, lookback: 6}]
  retries: 0
  command: %s
- name: weekly
  partition: week
  upstream: [fct]
  retries: 0
  command: %s
""" % (ts.RAN_CMD % "mart_rolling_7d", ts.RAN_CMD % "weekly")


def ran_since(d, n):
    """What ran.txt holds after its first n lines: [(job, partition)]."""
    return [(r[0], r[1]) for r in ts.ran(d)[n:]]


def test_downstream_not_before_its_time():
    """build_future: false keeps downstream partitions out of a plan until
    their interval has closed (docs/configuration.md, build_future): at
    2026-04-01 03:00 the catchup of fct 03-25..03-31 builds the rolling
    mart's 03-25..03-31 and the week of 03-23, not the mart's 04-01..04-06
    nor the week holding today; then each day's landing runs that day of
    the fact and of the mart, nothing else, and the week of 03-30 is built
    once, after its Sunday 04-05 landed on 04-06 03:00.  --dry-run shows
    the same plan and counts what it leaves out, as the log does; a rerun
    of 03-31 runs it and its mart day; nothing is stale meanwhile, nor
    between a partition's close and the landing that builds it (a week
    on Monday 01:00, its Sunday not yet due)."""
    d = ts.sched_daemon(MARTS, "2026-04-01T03:00:00Z", "futuremarts",
                        settings={"build_future": "false", "max_concurrency": 4})
    h.eq([(k, j) for k, j, _ in ts.new_requests(d)], [("catchup", "fct")],
         "the requests at 04-01 03:00")
    got = ran_since(d, 0)
    want = [("fct", day) for day in h.days("2026-03-25", "2026-03-31")]
    h.eq([r for r in got if r[0] == "fct"], want, "the fact's catchup, in order")
    h.eq(sorted(r for r in got if r[0] != "fct"), sorted([("mart_rolling_7d", day) for day in
                                  h.days("2026-03-25", "2026-03-31")]
                                 + [("weekly", "2026-03-23")]),
         "what the catchup built downstream (not the mart's 04-01..04-06, not"
         " the week of 03-30)")

    # the dry run of a repair of 03-30..31 plans the same: the mart's
    # 03-30..31, not the 6 days after nor the open week, and says so
    args = ("backfill", "fct", "--from", "2026-03-30", "--to", "2026-03-31", "--dry-run")
    plan = d.json(*args, "--json")
    h.eq([(p["job"], p["partition"]) for p in plan["partitions"]],
         [("fct", "2026-03-30"), ("fct", "2026-03-31"),
          ("mart_rolling_7d", "2026-03-30"), ("mart_rolling_7d", "2026-03-31")],
         "the dry run's plan")
    h.eq(plan["not_closed"], 7, "the dry run's not_closed")
    out = d.ok(*args)
    h.check("not closed: 7 downstream partitions left out, their interval has not"
            " closed yet" in out, out)
    h.eq(len(ts.log_lines(d, r"request=\d+ job=fct kind=catchup queued 15 partitions"
                          r" \(8 downstream, 7 downstream not closed yet left out\)")), 1,
         "the catchup's log line")
    h.eq(d.json("stale")["stale"], [], "stale after the catchup")
    # a rerun of 03-31 runs it and its mart day, nothing else
    n = len(ts.ran(d))
    h.eq(d.wait_request(d.enqueue("rerun", "fct", "2026-03-31")).get("failed"), "0",
         "the rerun")
    h.eq(ran_since(d, n), [("fct", "2026-03-31"), ("mart_rolling_7d", "2026-03-31")],
         "what the rerun of 03-31 ran")
    d.seen |= {r["request"] for r in d.runs(include_boot=True)}

    # each day's landing: that day of the fact and of the mart; the week
    # of 03-30..04-05 once its Sunday has landed
    for day in h.days("2026-04-01", "2026-04-05"):
        n = len(ts.ran(d))
        # 01:00: the mart's day (and on 04-06 the week) has closed and
        # was never built, its fact day is not due yet: nothing runs, and
        # nothing is stale (its landing builds it)
        ts.tick(d, ts.sub_days(day, -1) + "T01:00:00Z")
        h.eq(ts.new_requests(d), [], "the requests at 01:00 after %s" % day)
        h.eq(d.json("stale")["stale"], [], "stale before %s landed" % day)
        h.eq(d.status("mart_rolling_7d")["mart_rolling_7d"]["stale"], 0,
             "status's stale count before %s landed" % day)
        ts.tick(d, ts.sub_days(day, -1) + "T03:00:00Z")
        h.eq([(k, j) for k, j, _ in ts.new_requests(d)], [("schedule", "fct")],
             "the requests at %s's landing" % day)
        got = ran_since(d, n)
        h.eq(got[:1], [("fct", day)], "the fact first, at %s's landing" % day)
        want = [("mart_rolling_7d", day)]
        if day == "2026-04-05":
            want.append(("weekly", "2026-03-30"))
        h.eq(sorted(got[1:]), sorted(want), "what %s's landing built downstream" % day)
        h.eq(d.json("stale")["stale"], [], "stale after %s landed" % day)
    d.stop()


if __name__ == "__main__":
    h.main([test_future, test_build_future, test_downstream_not_before_its_time])
