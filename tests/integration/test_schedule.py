#!/usr/bin/env python3
"""The schedule (issue 4, "Tests"): due times, watermarks, bounded catchup,
clock jumps, pause and resume, `end`, on the real daemon with a test clock.

Every job here is a command job that appends "JOB PARTITION START END" to
ran.txt, so that "ran exactly these partitions, once each, in this order"
is an exact assertion; the requests the schedule made are read from
`runs --json` and their kind from the state store.

Moving time.  A test rewrites the clock file (Daemon.set_clock: a rename
over it) and the daemon re-runs the schedule from an inotify watch.  The
daemon gives no acknowledgement that it has read a new clock (see
"Missing hook" below), so tick() needs an observable that changes when,
and only when, the daemon has processed the new instant.  That is the
paused hourly job `clock_probe` every daemon here carries: while a job is
paused the schedule leaves its watermark alone, and status reports its
next_due as the end of the hour holding the daemon's `now`, so
next_due == floor_hour(new instant) + 1h says that the clock callback has
run, and it ran the schedule in the same callback (main.c
daemon_clock_cb: clock_reload(), then sched_clock_changed()): every
request that clock change made is committed and visible to the next
backfillctl call.  The wait for that status is a bounded poll (short
interval, guard timeout); the wait for the requests is event-driven
(protocol cmd=wait).  Successive ticks must therefore fall in different
hours; tick() checks that.

Missing hook: nothing in the daemon's interface says "I have acted on
clock instant T" (status --json has no `now`, no log line or sd_notify
message marks a clock change).  With one, tick() would need no probe job
and no poll.
"""
import datetime
import os
import re
import select
import time

import harness as h

GUARD = 20.0     # guard: the daemon must act on a clock change within this
POLL = 0.01

RAN_CMD = ('["sh", "-c", "echo %s {partition} {partition_start} {partition_end}'
           ' >> {dir}/ran.txt"]')


def cmd_job(name, partition, start, extra=""):
    """A command job writing one line to ran.txt per run."""
    text = ("- name: %s\n  partition: %s\n  start: %s\n  concurrency: 1\n"
            "  retries: 0\n  command: %s\n" % (name, partition, start, RAN_CMD % name))
    for line in extra.split("\n"):
        if line.strip():
            text += "  " + line.strip() + "\n"
    return text


# ---------------------------------------------------------------- time

def parse_clock(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)


def iso_ms(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def floor_hour(dt):
    return dt.replace(minute=0, second=0, microsecond=0)


def probe_job(clock):
    """The paused hourly job whose next_due shows the daemon's clock."""
    return ('- name: clock_probe\n  partition: hour\n  start: %s\n'
            '  command: ["true"]\n' % clock[:13])


def sched_daemon(jobs, clock, name, settings=None):
    """A daemon on the test clock with the clock probe, paused at once
    (its start is the hour holding `clock`: nothing of it is due yet)."""
    d = h.Daemon(jobs=jobs + probe_job(clock), clock=clock, name=name,
                 settings=settings or {"max_concurrency": 4})
    d.ok("pause", "clock_probe")
    d.probe_start = floor_hour(parse_clock(clock))
    d.now = clock
    d.seen = set()
    return d


def tick(d, instant):
    """Move the daemon's clock to `instant` and return once the daemon has
    run its schedule for it (see the module comment)."""
    old, new = parse_clock(d.now), parse_clock(instant)
    h.check(floor_hour(old) != floor_hour(new),
            "test bug: tick %s -> %s stays in one hour; the probe cannot tell" % (d.now, instant))
    want = iso_ms(max(floor_hour(new), d.probe_start) + datetime.timedelta(hours=1))
    d.set_clock(instant)
    deadline = time.monotonic() + GUARD
    while True:
        st = d.status("clock_probe")["clock_probe"]
        if st["next_due"] == want:
            break
        if time.monotonic() > deadline:
            h.fail("the daemon did not act on clock %s within %.0f s (guard): clock_probe"
                   " next_due %r, expected %r\n%s" % (instant, GUARD, st["next_due"], want,
                                                      d.log_tail()))
        time.sleep(POLL)
    d.now = instant


def kinds(d):
    return dict(d.state_rows("SELECT id, kind FROM requests"))


def new_requests(d, wait=True):
    """The requests made since the last call: [(kind, job, [partitions])],
    oldest first; with wait, after each has finished."""
    rs = d.runs(include_boot=True)
    ids = sorted({r["request"] for r in rs} - d.seen)
    if wait:
        for rq in ids:
            d.wait_request(rq)
        rs = d.runs(include_boot=True)
    k = kinds(d)
    out = []
    for rq in ids:
        items = [r for r in rs if r["request"] == rq]
        # the order they ran in is ran.txt's; queued items have no order here
        out.append((k.get(rq), items[0]["job"], sorted(r["partition"] for r in items)))
    d.seen |= set(ids)
    return out


def ran(d, job=None):
    """[(job, partition, start, end)] in the order they ran."""
    path = os.path.join(d.dir, "ran.txt")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [_split_ran(l) for l in f.read().splitlines()]
    return [r for r in rows if job is None or r[0] == job]


def _split_ran(line):
    job, rest = line.split(" ", 1)
    parts = rest.split(" ")
    if len(parts) == 3:               # day, week, month: "P S E"
        return (job, parts[0], parts[1], parts[2])
    # hour: "P YYYY-MM-DD HH:MM:SS YYYY-MM-DD HH:MM:SS"
    return (job, parts[0], parts[1] + " " + parts[2], parts[3] + " " + parts[4])


def ran_parts(d, job):
    return [r[1] for r in ran(d, job)]


def job_status(d, job):
    return d.status(job)[job]


def log_lines(d, pattern):
    with open(d.log, errors="replace") as f:
        return [l.rstrip("\n") for l in f if re.search(pattern, l)]


def sub_days(day, n):
    return (datetime.date.fromisoformat(day) - datetime.timedelta(n)).isoformat()


# ---------------------------------------------------------------- tests

def test_catchup_three_days_then_daily():
    """start 3 days ago: exactly 3 caught up (one catchup request, oldest
    first); then each new day runs once as the clock advances."""
    d = sched_daemon(cmd_job("daily", "day", "2026-03-01", "catchup: true\nmax_catchup: 14"),
                     "2026-03-04T00:30:00Z", "sch-catchup3")
    h.eq(new_requests(d), [("catchup", "daily", h.days("2026-03-01", "2026-03-03"))],
         "requests at the first start")
    h.eq(ran(d, "daily"), [("daily", x, x, (datetime.date.fromisoformat(x) +
                                           datetime.timedelta(1)).isoformat())
                           for x in h.days("2026-03-01", "2026-03-03")],
         "ran.txt after the first start (partition, :partition_start, :partition_end)")
    st = job_status(d, "daily")
    h.eq({k: st[k] for k in ("grain", "paused", "watermark", "next_due", "catchup", "gap",
                             "queued", "running", "succeeded", "failed", "blocked")},
         {"grain": "day", "paused": False, "watermark": "2026-03-03",
          "next_due": "2026-03-05T00:00:00.000Z", "catchup": "ok", "gap": None,
          "queued": 0, "running": 0, "succeeded": 3, "failed": 0, "blocked": 0},
         "status daily after the catchup")

    # Each new day once; clock moves inside a day run nothing.
    expect = h.days("2026-03-01", "2026-03-03")
    for day in h.days("2026-03-04", "2026-03-07"):
        nxt = (datetime.date.fromisoformat(day) + datetime.timedelta(1)).isoformat()
        tick(d, "%sT00:00:00Z" % nxt)        # the instant `day` closes: due (ready_after 0)
        h.eq(new_requests(d), [("schedule", "daily", [day])], "requests when %s came due" % day)
        tick(d, "%sT13:00:00Z" % nxt)        # later the same day: nothing new
        h.eq(new_requests(d), [], "requests later on %s" % nxt)
        expect.append(day)
        h.eq(ran_parts(d, "daily"), expect, "daily partitions run by %s" % nxt)
        st = job_status(d, "daily")
        h.eq((st["watermark"], st["next_due"], st["catchup"]),
             (day, "%sT00:00:00.000Z" % (datetime.date.fromisoformat(nxt) +
                                         datetime.timedelta(1)).isoformat(), "ok"),
             "status daily (watermark, next_due, catchup) on %s" % nxt)

    # A restart with the clock standing still re-runs nothing.
    d.restart()
    h.eq(new_requests(d), [], "requests after a restart at the same instant")
    h.eq(ran_parts(d, "daily"), expect, "daily partitions after the restart")
    h.eq(ran(d, "clock_probe"), [], "the paused probe never ran")
    d.stop()


def test_refused_800_days():
    """start 800 days back, max_catchup 14: nothing of the gap runs, status
    says refused with the gap, one error line names job, count, bound and a
    backfill command that the daemon accepts; another job keeps running,
    and so do the refused job's new days."""
    clock = "2026-03-04T00:30:00Z"
    last_due = "2026-03-03"
    start = sub_days(last_due, 799)           # 800 partitions due
    jobs = (cmd_job("huge", "day", start, "catchup: true\nmax_catchup: 14") +
            cmd_job("small", "day", "2026-03-02", "catchup: true\nmax_catchup: 14"))
    d = sched_daemon(jobs, clock, "sch-refused")
    h.eq(new_requests(d), [("catchup", "small", ["2026-03-02", "2026-03-03"])],
         "requests at the first start (none for huge)")
    h.eq(ran_parts(d, "huge"), [], "huge partitions run")
    st = job_status(d, "huge")
    h.eq({k: st[k] for k in ("catchup", "gap", "queued", "running", "succeeded")},
         {"catchup": "refused", "gap": {"from": start, "to": last_due, "partitions": 800},
          "queued": 0, "running": 0, "succeeded": 0},
         "status huge after the refusal")
    h.eq(st["next_due"], "2026-03-05T00:00:00.000Z", "status huge next_due")
    h.eq(job_status(d, "small")["catchup"], "ok", "status small catchup")

    errs = log_lines(d, r"\berror: .*job=huge")
    h.eq(len(errs), 1, "error lines about huge in the log (%r)" % errs)
    e = errs[0]
    h.check(re.search(r"\b800\b", e), "the error line does not give the count 800: %r" % e)
    h.check(re.search(r"\b14\b", e), "the error line does not give the bound 14: %r" % e)
    m = re.search(r"backfillctl (backfill huge --from \S+ --to [^\s,;)]+)", e)
    h.check(m, "the error line names no backfillctl backfill command: %r" % e)
    # The command it gives must be one the daemon accepts: a bounded piece
    # (max_backfill is 366 by default: the whole gap of 800 is refused).
    args = m.group(1).split()
    state0 = d.state_dump()
    rc, out, err = d.ctl(*(args + ["--dry-run"]))
    h.eq(rc, 0, "exit of the suggested `backfillctl %s --dry-run` (stderr %r)"
         % (" ".join(args), err.strip()))
    h.eq(args[3], start, "the suggested command starts at the gap's first partition")
    h.eq(d.state_dump(), state0, "state store after the dry run")

    # The next day: both jobs run it once; the gap stays unrun.
    tick(d, "2026-03-05T00:30:00Z")
    got = new_requests(d)
    h.eq(sorted(got), [("schedule", "huge", ["2026-03-04"]), ("schedule", "small", ["2026-03-04"])],
         "requests when 2026-03-04 came due")
    h.eq(ran_parts(d, "huge"), ["2026-03-04"], "huge partitions run")
    h.eq(ran_parts(d, "small"), ["2026-03-02", "2026-03-03", "2026-03-04"], "small partitions run")
    h.eq(job_status(d, "huge")["watermark"], "2026-03-04", "huge watermark")
    h.eq(len(log_lines(d, r"\berror: .*job=huge")), 1, "error lines about huge after a day")
    d.stop()


def test_catchup_off():
    """catchup: false skips the older part of a gap and runs its newest due
    partition (one schedule request); the watermark moves to it; the next
    new day runs."""
    d = sched_daemon(cmd_job("nocatch", "day", "2026-03-01", "catchup: false"),
                     "2026-03-06T00:30:00Z", "sch-off")
    h.eq(new_requests(d), [("schedule", "nocatch", ["2026-03-05"])],
         "requests at the first start (03-01..05 due: the newest runs)")
    h.eq(ran_parts(d, "nocatch"), ["2026-03-05"], "partitions run at the first start")
    st = job_status(d, "nocatch")
    h.eq((st["watermark"], st["next_due"], st["catchup"], st["gap"]),
         ("2026-03-05", "2026-03-07T00:00:00.000Z", "off", None),
         "status nocatch (watermark, next_due, catchup, gap)")
    h.eq(log_lines(d, r"\berror: "), [], "error lines in the log")

    tick(d, "2026-03-07T00:30:00Z")
    h.eq(new_requests(d), [("schedule", "nocatch", ["2026-03-06"])], "requests on 2026-03-07")
    # a forward jump of 3 days: a gap, its newest partition runs
    tick(d, "2026-03-10T00:30:00Z")
    h.eq(new_requests(d), [("schedule", "nocatch", ["2026-03-09"])],
         "requests after a 3-day jump")
    tick(d, "2026-03-11T00:30:00Z")
    h.eq(new_requests(d), [("schedule", "nocatch", ["2026-03-10"])], "requests on 2026-03-11")
    h.eq(ran_parts(d, "nocatch"), ["2026-03-05", "2026-03-06", "2026-03-09", "2026-03-10"],
         "partitions run")
    st = job_status(d, "nocatch")
    h.eq((st["watermark"], st["catchup"]), ("2026-03-10", "off"), "status nocatch at the end")
    d.stop()


def test_catchup_off_eight_days_down():
    """catchup: false, stopped for eight days: at start exactly the newest
    due partition runs, as one schedule request; the seven before it are
    skipped (and said so in the log), whatever max_catchup says."""
    d = sched_daemon(cmd_job("off8", "day", "2026-03-01", "catchup: false\nmax_catchup: 3"),
                     "2026-03-02T00:30:00Z", "sch-off8")
    h.eq(new_requests(d), [("schedule", "off8", ["2026-03-01"])], "requests at the first start")
    d.stop()
    d.set_clock("2026-03-10T00:30:00Z")      # down eight days: 03-02..03-09 due
    d.now = "2026-03-10T00:30:00Z"
    d.start()
    h.eq(new_requests(d), [("schedule", "off8", ["2026-03-09"])],
         "requests after eight days down")
    h.eq(ran_parts(d, "off8"), ["2026-03-01", "2026-03-09"], "partitions run")
    st = job_status(d, "off8")
    h.eq((st["watermark"], st["catchup"], st["gap"], st["next_due"]),
         ("2026-03-09", "off", None, "2026-03-11T00:00:00.000Z"),
         "status off8 after eight days down")
    skipped = log_lines(d, r"job=off8 catchup is off: skipped 7 missed partitions"
                        r" 2026-03-02\.\.2026-03-08")
    h.eq(len(skipped), 1, "log lines about the skipped partitions")
    h.eq(log_lines(d, r"\berror: "), [], "error lines in the log")
    tick(d, "2026-03-11T00:30:00Z")
    h.eq(new_requests(d), [("schedule", "off8", ["2026-03-10"])], "requests on 2026-03-11")
    d.stop()


def test_down_five_days():
    """Stopped, clock +5 days, started: 5 days caught up within the bound;
    the same gap with max_catchup 3 is refused."""
    jobs = (cmd_job("wide", "day", "2026-03-01", "catchup: true\nmax_catchup: 14") +
            cmd_job("narrow", "day", "2026-03-01", "catchup: true\nmax_catchup: 3"))
    d = sched_daemon(jobs, "2026-03-03T00:30:00Z", "sch-down")
    h.eq(sorted(new_requests(d)), [("catchup", "narrow", ["2026-03-01", "2026-03-02"]),
                                  ("catchup", "wide", ["2026-03-01", "2026-03-02"])],
         "requests at the first start")
    d.stop()
    d.set_clock("2026-03-08T00:30:00Z")      # down from 03-03 to 03-08
    d.now = "2026-03-08T00:30:00Z"
    d.start()                                # the schedule runs before READY=1
    h.eq(new_requests(d), [("catchup", "wide", h.days("2026-03-03", "2026-03-07"))],
         "requests after 5 days down")
    h.eq(ran_parts(d, "wide"), h.days("2026-03-01", "2026-03-07"), "wide partitions run")
    h.eq(ran_parts(d, "narrow"), ["2026-03-01", "2026-03-02"], "narrow partitions run")
    st = job_status(d, "narrow")
    h.eq((st["catchup"], st["gap"]),
         ("refused", {"from": "2026-03-03", "to": "2026-03-07", "partitions": 5}),
         "status narrow after 5 days down")
    errs = log_lines(d, r"\berror: .*job=narrow")
    h.eq(len(errs), 1, "error lines about narrow (%r)" % errs)
    h.check(re.search(r"\b5\b", errs[0]) and re.search(r"\b3\b", errs[0]),
            "the error line does not give count 5 and bound 3: %r" % errs[0])
    st = job_status(d, "wide")
    h.eq((st["watermark"], st["catchup"], st["gap"]), ("2026-03-07", "ok", None),
         "status wide after 5 days down")
    # status reads, never writes: asking twice changes nothing in the store
    before = d.state_dump()
    job_status(d, "narrow")
    h.eq(d.state_dump(), before, "state store after status")
    # the operator backfills the refused gap in two pieces: once its last
    # partition lands the gap is filled and catchup is on again, without
    # anyone asking for status in between
    d.ok("backfill", "narrow", "--from", "2026-03-03", "--to", "2026-03-05", "--wait")
    st = job_status(d, "narrow")
    h.eq((st["catchup"], st["gap"]["partitions"]), ("refused", 5),
         "status narrow with part of the gap backfilled")
    d.ok("backfill", "narrow", "--from", "2026-03-06", "--to", "2026-03-07", "--wait")
    filled = log_lines(d, r"job=narrow the refused catchup gap 2026-03-03..2026-03-07 is filled")
    h.eq(len(filled), 1, "the log line saying the gap is filled (%r)" % filled)
    st = job_status(d, "narrow")
    h.eq((st["catchup"], st["gap"]), ("ok", None), "status narrow once the gap is backfilled")
    d.stop()


def test_clock_jumps():
    """Forward 2 days: a gap of 2, caught up within max_catchup and refused
    above it; back 1 hour, and forward again to where it was: nothing
    re-runs."""
    jobs = (cmd_job("jumpy", "day", "2026-03-01", "catchup: true\nmax_catchup: 5") +
            cmd_job("tight", "day", "2026-03-01", "catchup: true\nmax_catchup: 1"))
    d = sched_daemon(jobs, "2026-03-02T00:30:00Z", "sch-jump")
    h.eq(sorted(new_requests(d)), [("schedule", "jumpy", ["2026-03-01"]),
                                  ("schedule", "tight", ["2026-03-01"])],
         "requests at the first start (one partition due: not a gap)")
    tick(d, "2026-03-04T00:30:00Z")          # NTP step: +2 days
    h.eq(new_requests(d), [("catchup", "jumpy", ["2026-03-02", "2026-03-03"])],
         "requests after the 2-day jump")
    st = job_status(d, "tight")
    h.eq((st["catchup"], st["gap"], st["watermark"]),
         ("refused", {"from": "2026-03-02", "to": "2026-03-03", "partitions": 2}, "2026-03-03"),
         "status tight after the 2-day jump (max_catchup 1)")
    h.eq(len(log_lines(d, r"\berror: .*job=tight")), 1, "error lines about tight")
    state0 = d.state_dump()["manifest"]

    tick(d, "2026-03-03T23:30:00Z")          # back 1 hour
    h.eq(new_requests(d), [], "requests after the clock went back 1 hour")
    tick(d, "2026-03-04T00:30:00Z")          # forward to where it was
    h.eq(new_requests(d), [], "requests after the clock came back")
    h.eq(d.state_dump()["manifest"], state0, "manifest after back and forth")
    st = job_status(d, "jumpy")
    h.eq((st["watermark"], st["next_due"]), ("2026-03-03", "2026-03-05T00:00:00.000Z"),
         "status jumpy (watermark, next_due) after back and forth")
    tick(d, "2026-03-05T00:30:00Z")
    h.eq(sorted(new_requests(d)), [("schedule", "jumpy", ["2026-03-04"]),
                                  ("schedule", "tight", ["2026-03-04"])],
         "requests on 2026-03-05")
    h.eq(ran_parts(d, "jumpy"), h.days("2026-03-01", "2026-03-04"), "jumpy partitions run")
    h.eq(ran_parts(d, "tight"), ["2026-03-01", "2026-03-04"], "tight partitions run")
    d.stop()


def test_hourly_across_midnight():
    """Hourly partitions with ready_after 30m across a day boundary: each
    hour runs once, 30 minutes after it closes, with its hour bounds."""
    d = sched_daemon(cmd_job("hourly", "hour", "2026-03-01T22", "ready_after: 30m\ncatchup: true"),
                     "2026-03-01T22:40:00Z", "sch-hourly")
    h.eq(new_requests(d), [], "requests at 22:40 (hour 22 still open)")
    h.eq(job_status(d, "hourly")["next_due"], "2026-03-01T23:30:00.000Z", "next_due at 22:40")
    tick(d, "2026-03-01T23:20:00Z")
    h.eq(new_requests(d), [], "requests at 23:20 (hour 22 closed, not ready until 23:30)")
    tick(d, "2026-03-02T00:10:00Z")
    h.eq(new_requests(d), [("schedule", "hourly", ["2026-03-01T22"])], "requests at 00:10")
    h.eq(job_status(d, "hourly")["next_due"], "2026-03-02T00:30:00.000Z", "next_due at 00:10")
    tick(d, "2026-03-02T01:05:00Z")
    h.eq(new_requests(d), [("schedule", "hourly", ["2026-03-01T23"])], "requests at 01:05")
    tick(d, "2026-03-02T02:00:00Z")
    h.eq(new_requests(d), [("schedule", "hourly", ["2026-03-02T00"])], "requests at 02:00")
    h.eq(ran(d, "hourly"), [
        ("hourly", "2026-03-01T22", "2026-03-01 22:00:00", "2026-03-01 23:00:00"),
        ("hourly", "2026-03-01T23", "2026-03-01 23:00:00", "2026-03-02 00:00:00"),
        ("hourly", "2026-03-02T00", "2026-03-02 00:00:00", "2026-03-02 01:00:00"),
    ], "hourly runs (partition, :partition_start, :partition_end)")
    st = job_status(d, "hourly")
    h.eq((st["watermark"], st["next_due"]), ("2026-03-02T00", "2026-03-02T02:30:00.000Z"),
         "status hourly at 02:00")
    d.stop()


def test_monthly_leap_february():
    """Monthly partitions with ready_after 2h over 2028-02 (29 days): the
    February partition is due at 2028-03-01T02:00, not a day earlier."""
    d = sched_daemon(cmd_job("monthly", "month", "2028-01-01", "ready_after: 2h\ncatchup: true"),
                     "2028-02-01T01:00:00Z", "sch-month")
    h.eq(new_requests(d), [], "requests at 2028-02-01T01:00 (January not ready)")
    h.eq(job_status(d, "monthly")["next_due"], "2028-02-01T02:00:00.000Z", "next_due of January")
    tick(d, "2028-02-01T02:00:00Z")
    h.eq(new_requests(d), [("schedule", "monthly", ["2028-01-01"])], "requests at 2028-02-01T02:00")
    h.eq(job_status(d, "monthly")["next_due"], "2028-03-01T02:00:00.000Z", "next_due of February")
    tick(d, "2028-02-29T03:00:00Z")          # 28 days after 02-01 + 2h: a 28-day February would be due
    h.eq(new_requests(d), [], "requests on 2028-02-29 (February still open)")
    tick(d, "2028-03-01T01:00:00Z")
    h.eq(new_requests(d), [], "requests at 2028-03-01T01:00 (February closed, not ready)")
    tick(d, "2028-03-01T02:00:00Z")
    h.eq(new_requests(d), [("schedule", "monthly", ["2028-02-01"])], "requests at 2028-03-01T02:00")
    h.eq(ran(d, "monthly"), [("monthly", "2028-01-01", "2028-01-01", "2028-02-01"),
                             ("monthly", "2028-02-01", "2028-02-01", "2028-03-01")],
         "monthly runs (partition, :partition_start, :partition_end)")
    st = job_status(d, "monthly")
    h.eq((st["grain"], st["watermark"], st["next_due"]),
         ("month", "2028-02-01", "2028-04-01T02:00:00.000Z"), "status monthly")
    d.stop()


def _read_fifo_guarded(path, what, d):
    """Block until a run writes to the FIFO (a guard timeout aside)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with d.draining():
            r, _, _ = select.select([fd], [], [], 60)
        h.check(r, "%s within 60 s (guard)\n%s" % (what, d.log_tail()))
        return os.read(fd, 100).decode()
    finally:
        os.close(fd)


def test_pause_during_catchup():
    """A catchup of 4 with a run in flight: pause lets it finish and starts
    nothing more; days that come due while paused are not materialised;
    resume runs the rest and what came due meanwhile (catchup off too)."""
    gate_cmd = ('["sh", "-c", "if [ {partition} = 2026-03-01 ]; then echo go >'
                ' {dir}/started.fifo; read x < {dir}/gate.fifo; fi;'
                ' echo slow {partition} {partition_start} {partition_end} >> {dir}/ran.txt"]')
    jobs = ("- name: slow\n  partition: day\n  start: 2026-03-01\n  catchup: true\n"
            "  max_catchup: 10\n  concurrency: 1\n  retries: 0\n  command: %s\n" % gate_cmd +
            cmd_job("offjob", "day", "2026-03-01", "catchup: false"))
    d = sched_daemon(jobs, "2026-03-01T00:30:00Z", "sch-pause")
    os.mkfifo(os.path.join(d.dir, "started.fifo"))
    os.mkfifo(os.path.join(d.dir, "gate.fifo"))
    h.eq(new_requests(d), [], "requests at the first start")

    tick(d, "2026-03-05T00:30:00Z")
    _read_fifo_guarded(os.path.join(d.dir, "started.fifo"),
                       "slow 2026-03-01 did not start", d)
    got = new_requests(d, wait=False)
    h.eq(got, [("catchup", "slow", h.days("2026-03-01", "2026-03-04")),
               ("schedule", "offjob", ["2026-03-04"])],
         "requests after 4 days came due (slow; offjob skips its gap but its"
         " newest day)")
    rq = max(d.seen)
    d.ok("pause", "slow")
    d.ok("pause", "offjob")
    st = job_status(d, "slow")
    h.eq((st["paused"], st["running"], st["queued"]), (True, 1, 3), "slow paused, one in flight")

    with open(os.path.join(d.dir, "gate.fifo"), "w") as g:   # let the run finish
        g.write("go\n")
    deadline = time.monotonic() + GUARD
    while True:
        states = [r["state"] for r in d.runs("--request", rq, include_boot=True)]
        if states.count("succeeded") == 1:
            break
        h.check(time.monotonic() < deadline, "the run in flight did not finish (guard): %r" % states)
        time.sleep(POLL)
    d.status()   # one more round trip: any dispatch after that run is done
    st = job_status(d, "slow")
    h.eq((st["running"], st["queued"], st["succeeded"]), (0, 3, 1),
         "slow while paused after its run finished (running, queued, succeeded)")
    h.eq(ran_parts(d, "slow"), ["2026-03-01"], "slow partitions run while paused")

    tick(d, "2026-03-07T00:30:00Z")          # 03-05 and 03-06 come due while paused
    h.eq(new_requests(d, wait=False), [], "requests while paused")
    for job in ("slow", "offjob"):
        st = job_status(d, job)
        h.eq((st["paused"], st["watermark"]), (True, {"slow": "2026-03-04",
                                                      "offjob": "2026-03-04"}[job]),
             "status %s while paused (paused, watermark)" % job)
    h.eq(ran_parts(d, "slow"), ["2026-03-01"], "slow partitions run while paused")

    d.ok("resume", "slow")                   # the schedule runs before resume answers
    d.ok("resume", "offjob")
    got = new_requests(d)
    d.wait_request(rq)
    h.eq(got, [("catchup", "slow", ["2026-03-05", "2026-03-06"]),
               ("catchup", "offjob", ["2026-03-05", "2026-03-06"])],
         "requests on resume (paused time is not missed time, whatever catchup says)")
    h.eq(ran_parts(d, "slow"), h.days("2026-03-01", "2026-03-06"), "slow partitions run")
    h.eq(ran_parts(d, "offjob"), ["2026-03-04", "2026-03-05", "2026-03-06"],
         "offjob partitions run")
    for job in ("slow", "offjob"):
        st = job_status(d, job)
        h.eq((st["paused"], st["watermark"], st["queued"], st["running"]),
             (False, "2026-03-06", 0, 0), "status %s after resume" % job)
    d.stop()


def test_end_reached():
    """No partition after `end`: the last one runs once, next_due is null,
    and later clocks run nothing."""
    d = sched_daemon(cmd_job("bounded", "day", "2026-03-01", "end: 2026-03-03\ncatchup: true"),
                     "2026-03-03T12:00:00Z", "sch-end")
    h.eq(new_requests(d), [("catchup", "bounded", ["2026-03-01", "2026-03-02"])],
         "requests at the first start")
    h.eq(job_status(d, "bounded")["next_due"], "2026-03-04T00:00:00.000Z", "next_due before end")
    tick(d, "2026-03-04T00:30:00Z")
    h.eq(new_requests(d), [("schedule", "bounded", ["2026-03-03"])], "requests when end came due")
    st = job_status(d, "bounded")
    h.eq((st["watermark"], st["next_due"], st["catchup"], st["gap"]),
         ("2026-03-03", None, "ok", None), "status bounded at its end")
    tick(d, "2026-03-20T00:30:00Z")
    h.eq(new_requests(d), [], "requests 16 days past end")
    d.restart()
    h.eq(new_requests(d), [], "requests after a restart past end")
    st = job_status(d, "bounded")
    h.eq((st["watermark"], st["next_due"], st["catchup"]), ("2026-03-03", None, "ok"),
         "status bounded past its end")
    h.eq(ran_parts(d, "bounded"), h.days("2026-03-01", "2026-03-03"), "bounded partitions run")
    d.stop()


if __name__ == "__main__":
    h.main([
        test_catchup_three_days_then_daily,
        test_refused_800_days,
        test_catchup_off,
        test_catchup_off_eight_days_down,
        test_down_five_days,
        test_clock_jumps,
        test_hourly_across_midnight,
        test_monthly_leap_february,
        test_pause_during_catchup,
        test_end_reached,
    ])
