#!/usr/bin/env python3
"""Calendars as the operator sees them (issue 42): quarterly and yearly
rollups downstream of a daily fact, repaired by a backfill of the fact and
equal to a recompute from scratch; a Sunday-week retail mart; jobs and
status naming each job's calendar; --from/--to in a zone's local terms;
a misspelt zone refused in one line."""
import os
import subprocess

import harness as h

# Sunday weeks run end to end: lineage, the schedule, the executor's
# bounds and the request's keys take the job's own calendar (config.h
# job_cal), not the grain's UTC calendar.

SEED = """
CREATE TABLE events (dt TEXT, amount REAL);
WITH RECURSIVE d(x) AS (SELECT '2023-01-01' UNION ALL
  SELECT date(x, '+1 day') FROM d WHERE x < '2024-03-31')
INSERT INTO events SELECT x, CAST(strftime('%j', x) AS REAL) + 0.25 FROM d;
CREATE TABLE fct (dt TEXT PRIMARY KEY, revenue REAL);
CREATE TABLE q (q_start TEXT PRIMARY KEY, revenue REAL);
CREATE TABLE y (y_start TEXT PRIMARY KEY, revenue REAL);
CREATE TABLE wk (week_start TEXT PRIMARY KEY, revenue REAL);
"""

JOBS = """
- name: fct
  warehouse: sales
  partition: day
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT :partition, SUM(amount) FROM events
    WHERE dt >= :partition_start AND dt < :partition_end;
- name: quarterly
  warehouse: sales
  partition: quarter
  upstream: [fct]
  sql: |
    DELETE FROM q WHERE q_start = :partition;
    INSERT INTO q SELECT :partition, SUM(revenue) FROM fct
    WHERE dt >= :partition_start AND dt < :partition_end;
- name: yearly
  warehouse: sales
  partition: year
  upstream: [quarterly]
  sql: |
    DELETE FROM y WHERE y_start = :partition;
    INSERT INTO y SELECT :partition, SUM(revenue) FROM q
    WHERE q_start >= :partition_start AND q_start < :partition_end;
"""

SUNDAY_JOB = """
- name: retail_weekly
  warehouse: sales
  partition: week
  week_start: sunday
  upstream: [fct]
  sql: |
    DELETE FROM wk WHERE week_start = :partition;
    INSERT INTO wk SELECT :partition, SUM(revenue) FROM fct
    WHERE dt >= :partition_start AND dt < :partition_end;
"""


def recompute(d, table, key, end):
    """Each row of a rollup as a recompute from the events says it is."""
    for k, got in d.query("SELECT %s, revenue FROM %s ORDER BY 1" % (key, table)):
        truth = d.query("SELECT SUM(amount) FROM events WHERE dt >= ? AND dt < date(?, ?)",
                        (k, k, end))[0][0]
        h.check(abs(got - truth) < 0.005, "%s %s: %.2f, a recompute says %.2f"
                % (table, k, got, truth))


def test_quarter_year_rollups():
    d = h.Daemon(jobs=JOBS, warehouses={"sales": SEED}, settings={"max_backfill": 1000},
                 name="calq")
    d.backfill("fct", "2023-01-01", "2024-03-31")
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "quarterly")),
         ["2023-01-01", "2023-04-01", "2023-07-01", "2023-10-01", "2024-01-01"],
         "quarters built downstream of the fact")
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "yearly")),
         ["2023-01-01", "2024-01-01"], "years built downstream of the quarters")
    recompute(d, "q", "q_start", "+3 months")
    recompute(d, "y", "y_start", "+12 months")
    # the repair: events of one day change; a backfill of the days across
    # the year end rebuilds exactly their quarters and years
    con = d.wh("sales")
    con.execute("UPDATE events SET amount = amount + 1000 WHERE dt = '2023-12-31'")
    con.commit()
    con.close()
    before = len(d.runs())
    d.backfill("fct", "2023-12-31", "2024-01-01")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"]) for r in new if r["job"] != "fct"),
         [("quarterly", "2023-10-01"), ("quarterly", "2024-01-01"),
          ("yearly", "2023-01-01"), ("yearly", "2024-01-01")],
         "the quarters and years a repair across the year end rebuilds")
    recompute(d, "q", "q_start", "+3 months")
    recompute(d, "y", "y_start", "+12 months")
    jobs = {j["name"]: j for j in d.json("jobs")["jobs"]}
    h.eq((jobs["quarterly"]["grain"], jobs["quarterly"]["timezone"],
          jobs["quarterly"]["week_start"]), ("quarter", "UTC", "monday"),
         "jobs --json of the quarterly job")
    h.eq(d.status()["yearly"]["timezone"], "UTC", "status --json timezone")
    d.stop()


def test_sunday_week_mart():
    # the clock a day after the second week closed: the report's window
    # (the newest 53 weeks due) holds both
    d = h.Daemon(jobs=JOBS + SUNDAY_JOB, warehouses={"sales": SEED},
                 settings={"max_backfill": 1000}, name="calw",
                 clock="2024-04-08T00:00:00Z")
    # two whole Sunday weeks, Sunday 03-24 to Saturday 04-06 (Monday
    # weeks would be 03-18, 03-25 and 04-01)
    d.backfill("fct", "2024-03-24", "2024-04-06")
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "retail_weekly")),
         ["2024-03-24", "2024-03-31"], "the Sunday weeks of 03-24..04-06")
    recompute(d, "wk", "week_start", "+7 days")
    out = d.ok("jobs")
    h.check("week (sunday)" in out, "jobs shows the Sunday week: %r" % out)
    # the map and the report draw Sunday weeks under their own keys
    m = d.json("map", "retail_weekly", "--from", "2024-03-24", "--to", "2024-04-06", "--json")
    h.eq((m["from"], m["to"], [(r["from"], r["to"], r["state"]) for r in m["ranges"]]),
         ("2024-03-24", "2024-03-31", [("2024-03-24", "2024-03-31", "succeeded")]),
         "map --json of the Sunday weeks")
    h.check("weeks (by Sunday)" in d.ok("map", "retail_weekly"), "map says Sunday weeks")
    page = os.path.join(d.dir, "page.html")
    d.ok("report", "--html", page)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    for k in ("2024-03-24", "2024-03-31"):
        h.check('data-job="retail_weekly" data-partition="%s" data-state="succeeded"' % k
                in html, "the report's cell of the Sunday week %s" % k)
    h.check("retail_weekly <small>(week, Sunday weeks" in html,
            "the report names the Sunday weeks")
    d.stop()


def test_operator_keys():
    """backfill, rerun, mark, logs and stale speak the job's calendar:
    dates resolve to the quarter, year or Sunday week holding them, and a
    key that is not a partition's first day is refused naming the right
    one, changing nothing."""
    d = h.Daemon(jobs=JOBS + SUNDAY_JOB, warehouses={"sales": SEED},
                 settings={"max_backfill": 1000}, name="calk")

    def keys(job, frm, to):
        plan = d.json("backfill", job, "--from", frm, "--to", to, "--dry-run", "--json")
        return [x["partition"] for x in plan["partitions"] if x["job"] == job]
    h.eq(keys("quarterly", "2023-02-03", "2023-05-01"), ["2023-01-01", "2023-04-01"],
         "--from/--to of a quarterly job: the quarters holding the dates")
    h.eq(keys("yearly", "2023-06-30", "2024-01-01"), ["2023-01-01", "2024-01-01"],
         "--from/--to of a yearly job: the years holding the dates")
    h.eq(keys("retail_weekly", "2024-03-25", "2024-04-02"), ["2024-03-24", "2024-03-31"],
         "--from/--to of a Sunday-week job: the Sunday weeks holding the dates")
    before = len(d.runs())
    for args, right in [
            (("rerun", "quarterly", "2023-02-03"),
             "2023-02-03 is not a quarter key: quarters are keyed by their first day, 2023-01-01"),
            (("rerun", "yearly", "2023-04-01"),
             "2023-04-01 is not a year key: years are keyed by their first day, 2023-01-01"),
            (("rerun", "retail_weekly", "2024-03-25"),
             "2024-03-25 is not a week key: weeks are keyed by their Sunday, 2024-03-24"),
            (("mark", "retail_weekly", "2024-03-25", "--succeeded", "--reason", "x"),
             "weeks are keyed by their Sunday, 2024-03-24"),
            (("logs", "retail_weekly", "2024-03-25"),
             "weeks are keyed by their Sunday, 2024-03-24")]:
        rc, _, err = d.ctl(*args)
        h.eq(rc, 2, "exit of %r (stderr %r)" % (args, err))
        h.check(right in err and len(err.strip().splitlines()) == 1,
                "%r names the right key in one line: %r" % (args, err))
    h.eq(len(d.runs()), before, "the refusals queued and marked nothing")
    d.ok("mark", "retail_weekly", "2024-03-24", "--succeeded", "--reason", "by hand")
    h.eq([r["partition"] for r in h.by_job(d.runs(), "retail_weekly")], ["2024-03-24"],
         "a Sunday week marked under its own key")
    # a day of the week rebuilt alone: its Sunday week is stale, by its key
    d.backfill("fct", "2024-03-26", "2024-03-26", "--no-downstream")
    stale = [x for x in d.json("stale", "--json")["stale"] if x["job"] == "retail_weekly"]
    h.eq([x["partition"] for x in stale], ["2024-03-24"],
         "stale names the Sunday week holding the rebuilt day")
    h.eq([x["partition"] for x in stale[0]["newer_inputs"]], ["2024-03-26"],
         "its newer input")
    d.stop()


def test_timezone_misspelt():
    """A misspelt zone: one line at its position, the closest name."""
    backfilld, _ = h.binaries()
    folder = h.suite_mkdtemp("calgate2")
    conf = os.path.join(folder, "c.yaml")
    with open(conf, "w") as f:
        f.write("jobs:\n  - {name: d, partition: day, timezone: Europe/Berln, command: [x]}\n")
    p = subprocess.run([backfilld, "--check-config", "-c", conf],
                       capture_output=True, text=True)
    h.eq(p.returncode, 2, "exit of a misspelt zone (stderr %r)" % p.stderr)
    h.check(p.stderr.strip().endswith(
        "2:41: job \"d\": timezone: unknown time zone \"Europe/Berln\"; did you mean \"Europe/Berlin\"?"),
        "the refusal names the position and the zone: %r" % p.stderr)
    h.eq(len(p.stderr.strip().splitlines()), 1, "one line")


def test_local_from_to():
    d = h.Daemon(jobs="""
- name: chi
  partition: hour
  timezone: America/Chicago
  command: [/bin/true]
""", name="calz")
    out = d.ok("backfill", "chi", "--from", "2021-11-07T01", "--to", "2021-11-07T01",
               "--dry-run", "--json")
    h.check("2021-11-07T01-05:00" in out and "2021-11-07T01-06:00" in out,
            "a fold hour without offset is both hours: %r" % out)
    rc, _, err = d.ctl("backfill", "chi", "--from", "2021-03-14T02", "--to", "2021-03-14T02")
    h.eq(rc, 2, "a skipped hour's exit")
    h.check("did not happen in America/Chicago" in err, "the refusal names the change: %r" % err)
    d.stop()


# Berlin's fall-back hours of 2026-10-25 in time (02+02:00 sorts after
# 02+01:00 as text)
FOLD = ["2026-10-25T01+02:00", "2026-10-25T02+02:00", "2026-10-25T02+01:00",
        "2026-10-25T03+01:00"]


def test_fold_in_time_order():
    """--built-by and --changed over the hours of a DST fold plan and run
    them in time order, not in the keys' text order."""
    jobs = """
- name: bh
  partition: hour
  timezone: Europe/Berlin
  command: [/bin/true, "{partition}"]
"""
    d = h.Daemon(jobs=jobs, name="calfold")
    d.backfill("bh", "2026-10-25T01", "2026-10-25T03")
    first = d.runs()
    h.eq([r["partition"] for r in first], FOLD, "the first build, in time")
    v1 = first[0]["code_version"]
    d.write_config(d.config_text.replace('"{partition}"]', '"{partition}", v2]'))
    d.ok("reload")
    for sel in (["--built-by", v1], ["--changed"],
                ["--changed", "--from", "2026-10-25T01", "--to", "2026-10-25T03"]):
        dry = d.json("backfill", "bh", *sel, "--dry-run")
        h.eq([p["partition"] for p in dry["partitions"]], FOLD,
             "backfill %s --dry-run: its plan in time" % " ".join(sel))
    d.ok("backfill", "bh", "--changed", "--wait")
    h.eq([r["partition"] for r in d.runs()[len(first):]], FOLD,
         "the runs of --changed, in time")
    d.stop()


ZONE_JOBS = """
- name: berlin
  partition: day
  timezone: Europe/Berlin
  command: [/bin/true]
- name: retail
  partition: week
  week_start: sunday
  command: [/bin/true]
- name: fresh
  partition: day
  timezone: Asia/Kolkata
  command: [/bin/true]
"""


def calendars(d):
    return dict(d.state_rows("SELECT job, calendar FROM jobs WHERE calendar IS NOT NULL"))


def test_zone_change_refused():
    """A job's timezone: or week_start: changed while it has built
    partitions would give its keys other intervals: the reload (and a start)
    is refused in one line and nothing changes; a job with none built may
    change its zone.  On both state stores (jobs.calendar)."""
    d = h.Daemon(jobs=ZONE_JOBS, name="calchange")
    d.backfill("berlin", "2025-10-26", "2025-10-26")
    d.backfill("retail", "2025-10-26", "2025-10-26")
    h.eq(calendars(d), {"berlin": "Europe/Berlin", "retail": "UTC sunday",
                        "fresh": "Asia/Kolkata"}, "the calendars the store records")
    first = d.config_text
    cases = [(first.replace("timezone: Europe/Berlin", "timezone: UTC"),
              'job "berlin": its built partitions are keyed in timezone: Europe/Berlin;'
              ' timezone: UTC would give those keys other intervals: write timezone:'
              ' Europe/Berlin again, or define a new job (another name and table) in the'
              ' new calendar'),
             ("".join(l for l in first.splitlines(True) if "week_start:" not in l),
              'job "retail": its built partitions are keyed in timezone: UTC, week_start:'
              ' sunday; timezone: UTC, week_start: monday would give those keys other'
              ' intervals: write timezone: UTC, week_start: sunday again, or define a new'
              ' job (another name and table) in the new calendar')]
    for text, want in cases:
        d.write_config(text)
        rc, out, err = d.ctl("reload")
        e = h.one_line_error(rc, out, err, 2, "a reload changing a built job's calendar")
        h.check(e.endswith(want), "the refusal: %r" % e)
        jobs = {j["name"]: j for j in d.json("jobs")["jobs"]}
        h.eq((jobs["berlin"]["timezone"], jobs["retail"]["week_start"]),
             ("Europe/Berlin", "sunday"), "the running calendars after the refusal")
        h.eq(calendars(d)["berlin"], "Europe/Berlin", "the store after the refusal")
    # a start with a changed zone: refused the same way
    d.stop()
    d.write_config(cases[0][0])
    r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                       timeout=60, cwd=d.dir, env=d.env())
    h.eq(r.returncode, 2, "a start changing a built job's zone: %s" % r.stderr)
    h.check(cases[0][1] in r.stderr, "the start's refusal: %r" % r.stderr)
    # the job never built may change its zone; back to UTC is NULL
    d.write_config(first.replace("timezone: Asia/Kolkata", "timezone: UTC"))
    d.start()
    h.eq(calendars(d), {"berlin": "Europe/Berlin", "retail": "UTC sunday"},
         "the unbuilt job's new zone (UTC) recorded")
    d.stop()


if __name__ == "__main__":
    h.main([test_quarter_year_rollups, test_sunday_week_mart, test_operator_keys,
            test_timezone_misspelt, test_local_from_to,
            test_zone_change_refused, test_fold_in_time_order])
