#!/usr/bin/env python3
"""hour -> day (issue 3): an hourly SQL job and a daily rollup downstream of
it.  A backfill of whole days runs every hour of them (with
:partition_start/:partition_end as 'YYYY-MM-DD HH:MM:SS'), then each day once
after its 24 hours; YYYY-MM-DDTHH bounds select exactly those hours."""
import harness as h

SEED = """
CREATE TABLE events (ts TEXT NOT NULL, v INTEGER NOT NULL);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 143)
INSERT INTO events SELECT datetime('2026-02-08 00:00:00', '+' || (i * 20) || ' minutes'), i FROM n;
CREATE TABLE hourly (hour TEXT PRIMARY KEY, n INTEGER, v INTEGER);
CREATE TABLE daily (dt TEXT PRIMARY KEY, n INTEGER, v INTEGER);
INSERT INTO daily VALUES ('2026-02-07', 0, 0), ('2026-02-08', 0, 0), ('2026-02-09', 0, 0);
"""

JOBS = """
- name: events_hourly
  warehouse: wh
  partition: hour
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 3
  sql: |
    DELETE FROM hourly WHERE hour = :partition;
    INSERT INTO hourly (hour, n, v)
    SELECT :partition, COUNT(*), SUM(v) FROM events
    WHERE ts >= :partition_start AND ts < :partition_end;
- name: events_daily
  warehouse: wh
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  upstream: [events_hourly]
  sql: |
    DELETE FROM daily WHERE dt = :partition;
    INSERT INTO daily (dt, n, v)
    SELECT :partition, SUM(n), SUM(v) FROM hourly
    WHERE hour >= :partition_start AND hour < :partition_end;
"""


def test_hour_to_day():
    d = h.Daemon(jobs=JOBS, warehouses={"wh": SEED}, settings={"max_concurrency": 4},
                 clock=None, name="hourly")
    d.backfill("events_hourly", "2026-02-08", "2026-02-09")
    hourly = d.query("SELECT hour, n FROM hourly WHERE hour < '2026-02-10' ORDER BY hour", wh="wh")
    want_hours = ["%sT%02d" % (day, hr) for day in ("2026-02-08", "2026-02-09") for hr in range(24)]
    h.eq([r[0] for r in hourly], want_hours, "hourly partitions written")
    h.eq({r[1] for r in hourly}, {3}, "events per hour (bounds 'YYYY-MM-DD HH:MM:SS')")
    daily = d.query("SELECT dt, n, v FROM daily WHERE dt < '2026-02-10' ORDER BY dt", wh="wh")
    h.eq(daily, [("2026-02-07", 0, 0), ("2026-02-08", 72, sum(range(72))),
                 ("2026-02-09", 72, sum(range(72, 144)))], "daily rollup")

    runs = d.runs()
    h.eq(len(h.by_job(runs, "events_hourly")), 48, "hourly runs")
    days = h.by_job(runs, "events_daily")
    h.eq(sorted(r["partition"] for r in days), ["2026-02-08", "2026-02-09"], "daily runs (once each)")
    for day in days:
        last = max(h.parse_iso(r["finished_at"]) for r in h.by_job(runs, "events_hourly")
                   if r["partition"].startswith(day["partition"] + "T"))
        h.check(h.parse_iso(day["started_at"]) >= last,
                "day %s started before its last hour finished" % day["partition"])

    # Hour bounds: 22:00 on the 8th to 01:00 on the 9th, four hours, two days.
    n0 = len(runs)
    d.backfill("events_hourly", "2026-02-08T22", "2026-02-09T01")
    new = d.runs()[n0:]
    h.eq(sorted((r["job"], r["partition"]) for r in new),
         [("events_daily", "2026-02-08"), ("events_daily", "2026-02-09"),
          ("events_hourly", "2026-02-08T22"), ("events_hourly", "2026-02-08T23"),
          ("events_hourly", "2026-02-09T00"), ("events_hourly", "2026-02-09T01")],
         "runs of a backfill with hour bounds")
    h.eq(d.query("SELECT dt, n, v FROM daily WHERE dt < '2026-02-10' ORDER BY dt", wh="wh"), daily,
         "daily rollup after the rerun (unchanged)")
    d.stop()


if __name__ == "__main__":
    h.main([test_hour_to_day])
