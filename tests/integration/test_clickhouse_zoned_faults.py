#!/usr/bin/env python3
"""Crashes of the hours of a zone on ClickHouse (docs/clickhouse.md,
"Exactly once" and "Bound values"), on the real server.

A Berlin hourly job publishes each hour as the UTC hour it starts at, and
its marks name that UTC hour (`2026-10-25 01:00:00` for the second 02:00
of the fall-back day); a restart maps them back to the job's keys
(exec_wap.c exec_wap_part_of).  The job and its tables are
test_calendar_bounds.py's (ZONED_CH_JOB, zoned_tables).

- Killed (kill -9) after the REPLACE of one 02:00 hour of 2026-10-25 and
  before its record (BACKFILLD_TEST_CH_STOP=published), the second 02:00
  (+01:00) and, separately, the first (+02:00), raw changed meanwhile:
  the restart publishes the marked stage (the first build's rows, not the
  changed raw), the request records one success of that hour, the other
  02:00 hour keeps its rows and its parts (not published again), and no
  stage row or mark is left.
- Killed after the record and before the release
  (BACKFILLD_TEST_CH_STOP=recorded), a request of one hour (closed at the
  restart) and one of both 02:00 hours (open at the restart, one of them
  recorded): the start's sweep drops the recorded hour's stage and mark,
  it is not run or published again, the other hour runs once.
- Both again on a server whose own zone is America/Chicago.
- Killed in the middle of a backfill of the spring-forward day
  2026-03-29 (no 02:00): after the restart its 23 hours are 23 partitions
  of the table, each equal to a recompute, each succeeded once, nothing
  left in the stage or the marks.

Without clickhouse-server it says SKIP and exits 77, unless
BACKFILLD_REQUIRE_CLICKHOUSE=1 makes that a failure."""
import calendar
import os
import sys
import time

import harness as h
import test_clickhouse as tc
import test_calendar_bounds as tcb

sys.path.insert(0, os.path.join(h.SOURCE_ROOT, "tools"))
from chserver import ChServer  # noqa: E402

JOB = "hits_hourly"
MARKS = "_backfilld_marks_hits_hourly"
STAGE = "_backfilld_stage_hits_hourly"
# Berlin's two 02:00 hours of 2026-10-25: key -> the UTC hour it is published as
FOLD = {"2026-10-25T02+02:00": "2026-10-25 00:00:00",
        "2026-10-25T02+01:00": "2026-10-25 01:00:00"}
TABLE = "SELECT toString(hour), s, e, utc, toString(n), toString(total) FROM hits_hourly"


def part_id(utc):
    """The partition id of UTC hour utc in toStartOfHour (its Unix time)."""
    return str(calendar.timegm(time.strptime(utc, "%Y-%m-%d %H:%M:%S")))


def hour_rows(db, utc):
    return tc.SRV.rows(TABLE + " WHERE hour = toDateTime('%s', 'UTC') ORDER BY hour" % utc, db)


def hour_parts(db, utc):
    """The active parts of UTC hour utc's partition: a REPLACE makes new ones."""
    return tc.SRV.rows("SELECT name FROM system.parts WHERE database = currentDatabase() AND"
                       " table = 'hits_hourly' AND active AND partition_id = '%s' ORDER BY name"
                       % part_id(utc), db)


def recompute(db, utc):
    """(n, total) of UTC hour utc from hits now."""
    return tc.SRV.rows("SELECT toString(count()), toString(sum(v)) FROM hits WHERE"
                       " ts >= toDateTime('%s', 'UTC') AND ts < toDateTime('%s', 'UTC') + 3600"
                       % (utc, utc), db)


def late_hits(db, v):
    """A hit in each 02:00 hour of 2026-10-25 (v its value): both change."""
    for utc in FOLD.values():
        tc.SRV.q("INSERT INTO hits VALUES (toDateTime('%s', 'UTC') + 1800, %d)" % (utc, v), db)


def marks(db):
    return tc.SRV.rows("SELECT partition FROM %s ORDER BY partition" % MARKS, db)


def fall_daemon(name):
    """A daemon of the Berlin hourly job whose 2026-10-25 is built (25
    hours) on a database of its own: (daemon, database)."""
    db = tc.fresh_db(seed=False)
    tcb.zoned_tables(tc.SRV, db)
    d = h.Daemon(config=tc.ch_config(db, tcb.ZONED_CH_JOB), clock=None, name=name)
    d.backfill(JOB, "2026-10-25", "2026-10-25")
    h.eq(len([r for r in d.runs() if r["state"] == "succeeded"]), 25,
         "the fall-back day's hours built")
    return d, db


def restart_stopping_at(d, point):
    """Restart d so that it stops itself at point (BACKFILLD_TEST_CH_STOP)."""
    d.stop()
    d.extra_env["BACKFILLD_TEST_CH_STOP"] = point
    d.start()


def restart_after_kill(d):
    d.kill9()
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    d.restart()


def published_crash(key):
    """kill -9 between the REPLACE of the 02:00 hour `key` and its record."""
    utc = FOLD[key]
    other = [u for k, u in FOLD.items() if k != key][0]
    d, db = fall_daemon("chzfpub")
    other_rows, other_parts = hour_rows(db, other), hour_parts(db, other)
    late_hits(db, 1000)
    restart_stopping_at(d, "published")
    req = d.enqueue("backfill", JOB, "--from", key, "--to", key)
    tc.wait_stopped(d, "the publish of %s" % key)
    first = hour_rows(db, utc)
    h.eq([r[4:] for r in first], recompute(db, utc),
         "%s after its first publish: the hits with the late one" % key)
    h.eq(marks(db), [(utc,)], "the mark of %s while unrecorded: its UTC hour" % key)
    h.eq(tc.SRV.rows(TABLE.replace("hits_hourly", STAGE), db), first,
         "the stage kept for %s: what was published" % key)
    d.kill9()
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    late_hits(db, 50000)  # a rebuild would publish other rows
    h.check(recompute(db, utc) != [r[4:] for r in first], "the hits should have changed")
    d.restart()
    d.wait_request(req)
    runs = [r for r in d.runs() if r["request"] == req]
    h.eq(sorted({r["partition"] for r in runs}), [key], "the partitions the request ran")
    h.eq([r["state"] for r in runs if r["state"] == "succeeded"], ["succeeded"],
         "one success of %s after the restart: %r" % (key, runs))
    h.eq(hour_rows(db, utc), first,
         "%s after the restart: the marked stage published again, not the changed hits" % key)
    h.eq((hour_rows(db, other), hour_parts(db, other)), (other_rows, other_parts),
         "the other 02:00 hour (%s UTC): its rows and parts untouched" % other)
    h.eq(len([r for r in d.runs() if r["state"] == "succeeded"]), 26,
         "successes: the day's 25 and this one")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    h.eq(tc.marks_left(db), {}, "marks left")
    d.stop()


def test_published_second_fold_hour():
    published_crash("2026-10-25T02+01:00")


def test_published_first_fold_hour():
    published_crash("2026-10-25T02+02:00")


def recorded_crash(frm, to, keys, name):
    """kill -9 between the record of the first hour of a backfill frm..to
    (the 02:00 hours keys) and the release of its stage."""
    d, db = fall_daemon(name)
    before = {u: (hour_rows(db, u), hour_parts(db, u)) for u in FOLD.values()}
    late_hits(db, 1000)
    restart_stopping_at(d, "recorded")
    req = d.enqueue("backfill", JOB, "--from", frm, "--to", to)
    tc.wait_stopped(d, "the release")
    m = marks(db)
    h.eq(len(m), 1, "marks when stopped before the release: the recorded hour's (%r)" % m)
    utc = m[0][0]
    key = [k for k, u in FOLD.items() if u == utc]
    h.eq(len(key), 1, "the mark %r names one of the 02:00 hours" % utc)
    key = key[0]
    h.check(tc.stage_leftovers(db, settle=False) != {}, "the stage should be kept until released")
    done = (hour_rows(db, utc), hour_parts(db, utc))
    h.eq([r[4:] for r in done[0]], recompute(db, utc), "%s published before the kill" % key)
    h.check(key in keys, "the mark %r names a partition of the request" % utc)
    others = [k for k in keys if k != key]
    restart_after_kill(d)
    d.wait_request(req)
    h.eq(tc.stage_leftovers(db), {}, "stage rows left after the restart")
    h.eq(tc.marks_left(db), {}, "marks left after the restart")
    runs = [r for r in d.runs() if r["request"] == req]
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"),
         sorted([key] + others), "one success a partition of the request: %r" % runs)
    h.eq([r["state"] for r in runs if r["partition"] == key], ["succeeded"],
         "the runs of %s, recorded before the kill: not run again" % key)
    h.eq((hour_rows(db, utc), hour_parts(db, utc)), done,
         "%s after the restart: its rows and parts, not published again" % key)
    for k in FOLD:
        u = FOLD[k]
        if k in others:
            h.eq([r[4:] for r in hour_rows(db, u)], recompute(db, u), "%s built once" % k)
        elif k != key:
            h.eq((hour_rows(db, u), hour_parts(db, u)), before[u], "%s untouched" % k)
    d.stop()


def test_recorded_one_hour():
    """A request of the second 02:00 hour alone, closed at the restart."""
    key = "2026-10-25T02+01:00"
    recorded_crash(key, key, [key], "chzfrec")


def test_recorded_open_request():
    """A request of both 02:00 hours (`--from 2026-10-25T02`), open at the
    restart with one of them recorded: the sweep drops that hour's mark
    (its request recorded it succeeded) and the other runs."""
    recorded_crash("2026-10-25T02", "2026-10-25T02", sorted(FOLD), "chzfrecopen")


def test_server_zone():
    """The crash after the REPLACE of the second 02:00 hour and the one
    after the record of a request of both, on a server whose own zone is
    America/Chicago: the marks and partitions name UTC hours whatever the
    server's zone (the column a DateTime('UTC'))."""
    chi = ChServer(prefix="server-chi-", parent=h.suite_mkdtemp("chchi"), own_parent=True,
                   extra="<timezone>America/Chicago</timezone>")
    h.register_server(chi)
    srv = tc.SRV
    try:
        h.eq(chi.rows("SELECT timezone()"), [("America/Chicago",)], "the second server's zone")
        tc.SRV = chi  # the helpers speak to tc.SRV
        published_crash("2026-10-25T02+01:00")
        recorded_crash("2026-10-25T02", "2026-10-25T02", sorted(FOLD), "chzfrecchi")
    finally:
        tc.SRV = srv
        chi.close()


def test_spring_forward_kill9_mid_backfill():
    db = tc.fresh_db(seed=False)
    tcb.zoned_tables(tc.SRV, db)
    # a slower SELECT (0.3 s), two at once: the kill comes mid-way
    jobs = tcb.ZONED_CH_JOB.replace("count() AS n", "count() + sleepEachRow(0.3) AS n") \
        .replace("  timezone:", "  concurrency: 2\n  timezone:")
    h.check(jobs.count("sleepEachRow") == 1 and jobs.count("concurrency") == 1,
            "the job's slower variant")
    d = h.Daemon(config=tc.ch_config(db, jobs), clock=None, name="chzfspring")
    req = d.enqueue("backfill", JOB, "--from", "2026-03-29", "--to", "2026-03-29")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [r for r in d.runs() if r["state"] == "succeeded"]
        if len(done) >= 8:
            break
        time.sleep(0.05)
    h.check(0 < len(done) < 23, "the kill should come mid-backfill (%d done)" % len(done))
    d.kill9()
    d.restart()
    d.wait_request(req)
    runs = [r for r in d.runs() if r["request"] == req]
    keys = [x[0] for x in tcb.SPRING]
    h.eq(len(keys), 23, "Berlin's 2026-03-29 has 23 hours")
    h.check(not any(k.startswith("2026-03-29T02") for k in keys), "no 02:00 key: %r" % keys)
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"), sorted(keys),
         "one success a partition after the kill and the restart: %r" % runs)
    table = ("SELECT toString(hour), s, e, utc, toString(n), toString(total) FROM hits_hourly"
             " ORDER BY hour")
    hits = tc.SRV.rows("SELECT toString(toStartOfHour(ts)) AS hr, toString(count()),"
                       " toString(sum(v)) FROM hits WHERE ts >= toDateTime('2026-03-28 23:00:00',"
                       " 'UTC') AND ts < toDateTime('2026-03-29 22:00:00', 'UTC') GROUP BY hr"
                       " ORDER BY hr", db)
    want = [(x[3], x[1], x[2], x[3] + "/" + x[4], n, total)
            for x, (hr, n, total) in zip(tcb.SPRING, hits)]
    h.eq([x[3] for x in tcb.SPRING], [r[0] for r in hits], "the recompute's hours")
    h.eq(tc.SRV.rows(table, db), want, "each hour against a recompute, with its bounds")
    h.eq(tc.SRV.rows("SELECT count(DISTINCT partition_id) FROM system.parts WHERE"
                     " database = currentDatabase() AND table = 'hits_hourly' AND active", db),
         [("23",)], "23 partitions of the live table")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left")
    h.eq(tc.marks_left(db), {}, "marks left")
    d.stop()


def main():
    tc.start_server()
    tests = [test_published_second_fold_hour, test_published_first_fold_hour,
             test_recorded_one_hour, test_recorded_open_request,
             test_server_zone, test_spring_forward_kill9_mid_backfill]
    # BACKFILLD_TEST_ONLY=name,name: those alone (while working on them)
    only = os.environ.get("BACKFILLD_TEST_ONLY")
    if only:
        tests = [t for t in tests if t.__name__ in only.split(",")]
    h.main(tests)


if __name__ == "__main__":
    main()
