#!/usr/bin/env python3
"""The UTC bounds of a partition (issue 42; docs/configuration.md,
"Placeholders"): :partition_start_utc and :partition_end_utc beside the
local :partition_start and :partition_end, on every driver, in a
command's placeholders and environment and in the batch manifest.

- UTC jobs, now: a query on SQLite (text), PostgreSQL (timestamptz,
  whatever the session's TimeZone) and ClickHouse (DateTime('UTC'))
  receives the same instants as the local bounds; a command gets
  {partition_start_utc}/{partition_end_utc} and BACKFILLD_PARTITION_*_UTC
  (a stale one in the daemon's environment replaced); a batch's manifest
  has the two columns appended and its span the batch's first and last
  instants.
- Zoned jobs: a backfill of Berlin's 25-hour 2023-10-29 on each driver and
  of its two 02:00 hours on SQLite and PostgreSQL, with the bounds each
  query receives; a
  Berlin hourly job on ClickHouse over both DST days of 2026 (23 and 25
  hours, each published as its UTC hour, equal to a recompute); the hours
  of a zone with a half-hour offset on ClickHouse refused by the
  configuration in one line.

PostgreSQL and ClickHouse parts run where their servers are installed
(they say SKIP otherwise, unless BACKFILLD_REQUIRE_POSTGRES=1 /
BACKFILLD_REQUIRE_CLICKHOUSE=1 make that a failure)."""
import os
import subprocess

import harness as h

SEEN = "CREATE TABLE seen (job TEXT, k TEXT, s TEXT, e TEXT, su TEXT, eu TEXT);"

SQLITE_JOBS = """
- name: daily
  warehouse: sales
  partition: day
  sql: INSERT INTO seen VALUES ('daily', :partition, :partition_start, :partition_end, :partition_start_utc, :partition_end_utc)
- name: hourly
  warehouse: sales
  partition: hour
  sql: INSERT INTO seen VALUES ('hourly', :partition, :partition_start, :partition_end, :partition_start_utc, :partition_end_utc)
- name: monthly
  warehouse: sales
  partition: month
  sql: INSERT INTO seen VALUES ('monthly', :partition, :partition_start, :partition_end, :partition_start_utc, :partition_end_utc)
"""

# the manifest's five columns, then the batch's span
BATCH_JOB = """
- name: batched
  warehouse: sales
  partition: day
  batch: true
  sql: |
    INSERT INTO seen SELECT 'row', partition_key, partition_start, partition_end, partition_start_utc, partition_end_utc FROM backfill_manifest;
    INSERT INTO seen VALUES ('span', NULL, :partition_start, :partition_end, :partition_start_utc, :partition_end_utc)
"""


def day_row(job, d, n):
    return (job, d, d, n, d + " 00:00:00", n + " 00:00:00")


def skip_part(what, why):
    """A part of this file that cannot run here: said, not failed."""
    print("SKIP %s: %s" % (what, why), flush=True)


def test_sqlite_utc_bounds():
    d = h.Daemon(jobs=SQLITE_JOBS, warehouses={"sales": SEEN}, clock=None, name="calbounds")
    d.backfill("daily", "2026-02-08", "2026-02-09")
    d.backfill("hourly", "2026-02-08T23", "2026-02-08T23")
    d.backfill("monthly", "2024-02-01", "2024-02-01")
    h.eq(d.query("SELECT * FROM seen ORDER BY job, k"),
         [day_row("daily", "2026-02-08", "2026-02-09"),
          day_row("daily", "2026-02-09", "2026-02-10"),
          ("hourly", "2026-02-08T23", "2026-02-08 23:00:00", "2026-02-09 00:00:00",
           "2026-02-08 23:00:00", "2026-02-09 00:00:00"),
          ("monthly", "2024-02-01", "2024-02-01", "2024-03-01",
           "2024-02-01 00:00:00", "2024-03-01 00:00:00")],
         "what the queries of UTC jobs received")
    h.eq(d.query("SELECT DISTINCT typeof(su), typeof(eu) FROM seen"), [("text", "text")],
         "SQLite binds the UTC bounds as text")
    d.stop()


def test_sqlite_batch_manifest():
    d = h.Daemon(jobs=BATCH_JOB, warehouses={"sales": SEEN}, clock=None, name="calbatch")
    d.backfill("batched", "2026-02-08", "2026-02-10")
    h.eq(d.query("SELECT * FROM seen ORDER BY job, k"),
         [day_row("row", "2026-02-08", "2026-02-09"),
          day_row("row", "2026-02-09", "2026-02-10"),
          day_row("row", "2026-02-10", "2026-02-11"),
          ("span", None, "2026-02-08", "2026-02-11", "2026-02-08 00:00:00",
           "2026-02-11 00:00:00")],
         "the manifest's rows (five columns) and the batch's span")
    d.stop()


def test_command_utc_bounds():
    out = "{dir}/out.{partition}"
    jobs = """
- name: export
  partition: day
  command: ["/bin/sh", "-c", "echo \\"$0|$1|$BACKFILLD_PARTITION_START_UTC|$BACKFILLD_PARTITION_END_UTC\\" > %s", "{partition_start_utc}", "{partition_end_utc}"]
""" % out
    d = h.Daemon(jobs=jobs, clock=None, name="calcmd",
                 env={"BACKFILLD_PARTITION_START_UTC": "stale"})
    d.backfill("export", "2026-02-08", "2026-02-08")
    with open(os.path.join(d.dir, "out.2026-02-08")) as f:
        got = f.read()
    h.eq(got, "2026-02-08 00:00:00|2026-02-09 00:00:00|2026-02-08 00:00:00|"
         "2026-02-09 00:00:00\n", "the command's argv and environment")
    d.stop()


# ---------------------------------------------------------------- PostgreSQL

def pg_cluster():
    """The suite's throwaway PostgreSQL cluster, or None (said) without one."""
    import test_postgres as tp
    try:
        return tp, tp.cluster()
    except SystemExit as e:
        if e.code != h.SKIP:
            raise
        return tp, None


PG_JOBS = """
- name: daily
  warehouse: sales
  partition: day
  sql: INSERT INTO seen SELECT 'daily', :partition, :partition_start, :partition_end, pg_typeof(:partition_start_utc)::text, to_char(:partition_start_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '/' || to_char(:partition_end_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
- name: batched
  warehouse: sales
  partition: day
  batch: true
  sql: |
    INSERT INTO seen SELECT 'row', partition_key, partition_start, partition_end, pg_typeof(partition_start_utc)::text, to_char(partition_start_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '/' || to_char(partition_end_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM backfill_manifest;
    INSERT INTO seen SELECT 'span', NULL, :partition_start, :partition_end, pg_typeof(:partition_end_utc)::text, to_char(:partition_start_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '/' || to_char(:partition_end_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
"""

PG_SEEN = "CREATE TABLE seen (job text, k text, s text, e text, t text, utc text)"


def test_postgres_utc_bounds():
    tp, c = pg_cluster()
    if c is None:
        return skip_part("test_postgres_utc_bounds", "no PostgreSQL server")
    c.fresh_db()
    c.as_etl(PG_SEEN)
    # the session's zone is not UTC: the UTC bounds must not move
    c.psql("ALTER DATABASE etl SET timezone TO 'America/New_York'", db="postgres")
    d = tp.pg_daemon(PG_JOBS, tp.pg_warehouse(), clock=None, name="pgcal")
    d.backfill("daily", "2026-02-08", "2026-02-08")
    d.backfill("batched", "2026-02-09", "2026-02-10")
    tz = "timestamp with time zone"
    h.eq(c.psql("SELECT job, coalesce(k, '-'), s, e, t, utc FROM seen ORDER BY job, k"),
         [("daily", "2026-02-08", "2026-02-08", "2026-02-09", tz,
           "2026-02-08 00:00:00/2026-02-09 00:00:00"),
          ("row", "2026-02-09", "2026-02-09", "2026-02-10", tz,
           "2026-02-09 00:00:00/2026-02-10 00:00:00"),
          ("row", "2026-02-10", "2026-02-10", "2026-02-11", tz,
           "2026-02-10 00:00:00/2026-02-11 00:00:00"),
          ("span", "-", "2026-02-09", "2026-02-11", tz,
           "2026-02-09 00:00:00/2026-02-11 00:00:00")],
         "what PostgreSQL queries received (a session in America/New_York)")
    d.stop()


# ---------------------------------------------------------------- ClickHouse

CH = {}


def ch_server():
    """The suite's throwaway clickhouse-server, or None (said) without one."""
    import test_clickhouse as tc
    if "srv" in CH:
        return tc, CH["srv"]
    CH["srv"] = None
    try:
        CH["srv"] = tc.start_server()
    except SystemExit as e:
        # its skip() said why; a failure of this test where the server is
        # required, else the caller's skip_part
        if e.code != h.SKIP:
            h.fail("ClickHouse is required (BACKFILLD_REQUIRE_CLICKHOUSE=1)")
    return tc, CH["srv"]


CH_JOB = """
- name: bounds
  warehouse: sales
  partition: %s
  table: bounds
  partition_column: p
  sql: SELECT :partition AS p, toString(:partition_start) AS s, toString(:partition_end) AS e, toTypeName(:partition_start_utc) AS t, toString(:partition_start_utc) || '/' || toString(:partition_end_utc) AS utc
"""


# toTypeName of a UTC bound, as the server's TSV writes it (quotes escaped)
CH_UTC = "DateTime(\\'UTC\\')"


def ch_bounds_table(srv, db, ptype, fn):
    srv.q("CREATE TABLE bounds (p %s, s String, e String, t String, utc String)"
          " ENGINE = MergeTree PARTITION BY %s(p) ORDER BY p" % (ptype, fn), db)


def test_clickhouse_utc_bounds():
    tc, srv = ch_server()
    if srv is None:
        return skip_part("test_clickhouse_utc_bounds", "no clickhouse-server")
    db = tc.fresh_db(seed=False)
    ch_bounds_table(srv, db, "Date", "toDate")
    d = h.Daemon(config=tc.ch_config(db, CH_JOB % "day"), clock=None, name="chcal")
    d.backfill("bounds", "2026-02-08", "2026-02-08")
    h.eq(srv.rows("SELECT toString(p), s, e, t, utc FROM bounds", db),
         [("2026-02-08", "2026-02-08", "2026-02-09", CH_UTC,
           "2026-02-08 00:00:00/2026-02-09 00:00:00")],
         "what a ClickHouse query received")
    d.stop()


# ---------------------------------------------------------------- zones

def check_config(d):
    """backfilld --check-config on d's configuration: (exit code, its last
    line)."""
    r = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=60, cwd=d.dir, env=d.env())
    text = (r.stdout + r.stderr).strip()
    return r.returncode, text.splitlines()[-1] if text else ""


# Europe/Berlin, 2023-10-29: 25 hours, 02:00 twice (+02:00, then +01:00)
BERLIN_DAY = ("2023-10-29", "2023-10-29", "2023-10-30",
              "2023-10-28 22:00:00", "2023-10-29 23:00:00")
BERLIN_HOURS = [("2023-10-29T02+02:00", "2023-10-29 02:00:00", "2023-10-29 03:00:00",
                 "2023-10-29 00:00:00", "2023-10-29 01:00:00"),
                ("2023-10-29T02+01:00", "2023-10-29 02:00:00", "2023-10-29 03:00:00",
                 "2023-10-29 01:00:00", "2023-10-29 02:00:00")]

ZONED_SQLITE = """
- name: daily
  warehouse: sales
  partition: day
  timezone: Europe/Berlin
  sql: INSERT INTO seen VALUES ('daily', :partition, :partition_start, :partition_end, :partition_start_utc, :partition_end_utc)
- name: hourly
  warehouse: sales
  partition: hour
  timezone: Europe/Berlin
  sql: INSERT INTO seen VALUES ('hourly', :partition, :partition_start, :partition_end, :partition_start_utc, :partition_end_utc)
"""


def test_dst_day_sqlite():
    d = h.Daemon(jobs=ZONED_SQLITE, warehouses={"sales": SEEN}, clock=None, name="caldst",
                 start=False)
    d.start()
    d.backfill("daily", "2023-10-29", "2023-10-29")
    # a wall hour without offset: both of its cells
    d.backfill("hourly", "2023-10-29T02", "2023-10-29T02")
    h.eq(d.query("SELECT k, s, e, su, eu FROM seen WHERE job = 'daily'"), [BERLIN_DAY],
         "Berlin's 25-hour day")
    h.eq(d.query("SELECT k, s, e, su, eu FROM seen WHERE job = 'hourly' ORDER BY su"),
         BERLIN_HOURS, "Berlin's two 02:00 hours")
    # the newest states of hours whose keys do not sort in time as text:
    # only the two missing hours around the fold run
    d.backfill("hourly", "2023-10-29T01", "2023-10-29T03", "--reprocess", "missing")
    h.eq(d.query("SELECT k FROM seen WHERE job = 'hourly' ORDER BY su"),
         [("2023-10-29T01+02:00",), ("2023-10-29T02+02:00",), ("2023-10-29T02+01:00",),
          ("2023-10-29T03+01:00",)], "--reprocess missing across the fold")
    # a new version of the hourly job: --changed over the wall hour 02
    # reads the keys 02+02:00 .. 02+01:00 (in time; reversed as text)
    d.write_config(d.config_text.replace(":partition_end_utc)\n",
                                         ":partition_end_utc) -- v2\n"))
    rc, out, err = d.ctl("reload")
    h.eq(rc, 0, "reload: %s %s" % (out, err))
    d.backfill("hourly", "2023-10-29T02", "2023-10-29T02", "--changed")
    h.eq(d.query("SELECT k, COUNT(*) FROM seen WHERE job = 'hourly' GROUP BY k ORDER BY k"),
         [("2023-10-29T01+02:00", 1), ("2023-10-29T02+01:00", 2),
          ("2023-10-29T02+02:00", 2), ("2023-10-29T03+01:00", 1)],
         "--changed over a wall hour of the fold: both of its hours, no other")
    d.stop()


def test_dst_day_postgres():
    tp, c = pg_cluster()
    if c is None:
        return skip_part("test_dst_day_postgres", "no PostgreSQL server")
    c.fresh_db()
    c.as_etl(PG_SEEN)
    jobs = PG_JOBS.replace("partition: day\n", "partition: day\n  timezone: Europe/Berlin\n")
    # the hours of the same zone: its daily job as an hourly one
    daily = PG_JOBS[:PG_JOBS.index("- name: batched")]
    jobs += daily.replace("name: daily", "name: hourly").replace(
        "partition: day", "partition: hour\n  timezone: Europe/Berlin").replace(
        "'daily'", "'hourly'")
    d = tp.pg_daemon(jobs, tp.pg_warehouse(), clock=None, name="pgcaldst", start=False)
    d.start()
    d.backfill("daily", "2023-10-29", "2023-10-29")
    tz = "timestamp with time zone"
    h.eq(c.psql("SELECT k, s, e, t, utc FROM seen"),
         [("2023-10-29", "2023-10-29", "2023-10-30", tz,
           "2023-10-28 22:00:00/2023-10-29 23:00:00")], "Berlin's 25-hour day on PostgreSQL")
    # a wall hour without offset: both of its cells, each its own instants
    d.backfill("hourly", "2023-10-29T02", "2023-10-29T02")
    h.eq(c.psql("SELECT k, s, e, t, utc FROM seen WHERE job = 'hourly' ORDER BY utc"),
         [(k, s_, e, tz, su + "/" + eu) for k, s_, e, su, eu in BERLIN_HOURS],
         "Berlin's two 02:00 hours on PostgreSQL")
    d.stop()


def test_dst_day_clickhouse():
    tc, srv = ch_server()
    if srv is None:
        return skip_part("test_dst_day_clickhouse", "no clickhouse-server")
    db = tc.fresh_db(seed=False)
    ch_bounds_table(srv, db, "Date", "toDate")
    jobs = CH_JOB % "day\n  timezone: Europe/Berlin"
    d = h.Daemon(config=tc.ch_config(db, jobs), clock=None, name="chcaldst", start=False)
    d.start()
    d.backfill("bounds", "2023-10-29", "2023-10-29")
    h.eq(srv.rows("SELECT toString(p), s, e, t, utc FROM bounds", db),
         [("2023-10-29", "2023-10-29", "2023-10-30", CH_UTC,
           "2023-10-28 22:00:00/2023-10-29 23:00:00")], "Berlin's 25-hour day on ClickHouse")
    d.stop()


ZONED_CH_JOB = """
- name: hits_hourly
  warehouse: sales
  partition: hour
  timezone: Europe/Berlin
  table: hits_hourly
  partition_column: hour
  sql: |
    SELECT :partition AS hour, toString(:partition_start) AS s, toString(:partition_end) AS e,
           toTypeName(:partition_start_utc) AS t,
           toString(:partition_start_utc) || '/' || toString(:partition_end_utc) AS utc,
           count() AS n, sum(v) AS total
    FROM hits WHERE ts >= :partition_start_utc AND ts < :partition_end_utc
"""


def berlin_hours(first_utc, n, change):
    """The n Berlin hours from the UTC hour first_utc: (key, local start,
    local end, UTC start, UTC end); change is (the UTC instant of the
    change, the offset in hours before it, after it).  A cell's local end
    is its start's wall clock plus an hour (calendar.c cal_bounds_local)."""
    import datetime as dt
    fmt = "%Y-%m-%d %H:%M:%S"
    t0 = dt.datetime.strptime(first_utc, fmt)
    at, before, after = dt.datetime.strptime(change[0], fmt), change[1], change[2]
    out = []
    for i in range(n):
        u = t0 + dt.timedelta(hours=i)
        off = before if u < at else after
        loc = u + dt.timedelta(hours=off)
        out.append((loc.strftime("%Y-%m-%dT%H") + "+%02d:00" % off, loc.strftime(fmt),
                    (loc + dt.timedelta(hours=1)).strftime(fmt), u.strftime(fmt),
                    (u + dt.timedelta(hours=1)).strftime(fmt)))
    return out


# Berlin's 23-hour 2026-03-29 (02:00 skipped) and 25-hour 2026-10-25
# (02:00 twice), hour by hour
SPRING = berlin_hours("2026-03-28 23:00:00", 23, ("2026-03-29 01:00:00", 1, 2))
FALL = berlin_hours("2026-10-24 22:00:00", 25, ("2026-10-25 01:00:00", 2, 1))


def test_zoned_hours_clickhouse():
    """A Berlin hourly job on ClickHouse (issue 42) backfilled over both DST
    days of 2026: 23 and 25 partitions, each keyed with its offset, each
    published once as the UTC hour it starts at (toStartOfHour of a
    DateTime('UTC') column), the bounds each query received, the table
    equal to a recompute; a rerun of one of the two 02:00 hours replaces
    that one only."""
    tc, srv = ch_server()
    if srv is None:
        return skip_part("test_zoned_hours_clickhouse", "no clickhouse-server")
    zoned_hours_on(tc, srv, "chzoned")


def test_zoned_hours_clickhouse_server_zone():
    """The same on a server whose own zone is America/Chicago: the UTC
    hours are named as DateTime('UTC') literals and the column is a
    DateTime('UTC'), so nothing depends on the server's zone."""
    import sys
    tc, srv = ch_server()
    if srv is None:
        return skip_part("test_zoned_hours_clickhouse_server_zone", "no clickhouse-server")
    sys.path.insert(0, os.path.join(h.SOURCE_ROOT, "tools"))
    from chserver import ChServer
    chi = ChServer(prefix="server-chi-", parent=h.suite_mkdtemp("chchi"), own_parent=True,
                   extra="<timezone>America/Chicago</timezone>")
    h.register_server(chi)
    try:
        h.eq(chi.rows("SELECT timezone()", "default"), [("America/Chicago",)],
             "the second server's zone")
        tc.SRV = chi     # test_clickhouse's helpers speak to tc.SRV
        zoned_hours_on(tc, chi, "chzonedchi")
    finally:
        tc.SRV = srv
        chi.close()


def zoned_tables(srv, db):
    """ZONED_CH_JOB's tables in db: hits over both DST days of 2026 and
    hits_hourly (also test_clickhouse_zoned_faults.py)."""
    srv.q("CREATE TABLE hits (ts DateTime('UTC'), v UInt32) ENGINE = MergeTree ORDER BY ts", db)
    # a hit every 20 minutes over both days, v the minute of the day
    for day in ("2026-03-28 20:00:00", "2026-10-24 20:00:00"):
        srv.q("INSERT INTO hits SELECT toDateTime('%s', 'UTC') + number * 1200,"
              " toUInt32(number %% 97) FROM numbers(3 * 30)" % day, db)
    srv.q("CREATE TABLE hits_hourly (hour DateTime('UTC'), s String, e String, t String,"
          " utc String, n UInt64, total UInt64) ENGINE = MergeTree"
          " PARTITION BY toStartOfHour(hour) ORDER BY hour", db)


def zoned_hours_on(tc, srv, name):
    """test_zoned_hours_clickhouse's run on server srv."""
    db = tc.fresh_db(seed=False)
    zoned_tables(srv, db)
    d = h.Daemon(config=tc.ch_config(db, ZONED_CH_JOB), clock=None, name=name, start=False)
    rc, line = check_config(d)
    h.eq(rc, 0, "--check-config of a Berlin hourly job on ClickHouse: %s" % line)
    d.start()
    d.backfill("hits_hourly", "2026-03-29", "2026-03-29")
    d.backfill("hits_hourly", "2026-10-25", "2026-10-25")
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"),
         sorted(x[0] for x in SPRING + FALL), "the hours built, each once")
    h.eq(len(runs), 48, "runs of the two days (23 + 25)")
    got = srv.rows("SELECT toString(hour), s, e, t, utc FROM hits_hourly ORDER BY hour", db)
    h.eq(got, [(x[3], x[1], x[2], CH_UTC, x[3] + "/" + x[4]) for x in SPRING + FALL],
         "each hour's partition and the bounds its query received")
    recompute = ("SELECT toString(toStartOfHour(ts)) AS hr, count(), sum(v) FROM hits"
                 " WHERE (ts >= toDateTime('2026-03-28 23:00:00', 'UTC') AND"
                 " ts < toDateTime('2026-03-29 22:00:00', 'UTC')) OR"
                 " (ts >= toDateTime('2026-10-24 22:00:00', 'UTC') AND"
                 " ts < toDateTime('2026-10-25 23:00:00', 'UTC')) GROUP BY hr ORDER BY hr")
    table = "SELECT toString(hour), toString(n), toString(total) FROM hits_hourly ORDER BY hour"
    h.eq(srv.rows(table, db), srv.rows(recompute, db), "the table against a recompute")
    h.eq(srv.rows("SELECT count(DISTINCT partition) FROM system.parts WHERE"
                  " database = currentDatabase() AND table = 'hits_hourly' AND active", db),
         [("48",)], "48 partitions of the live table")
    # a late hit in the second 02:00 (01:00 UTC): a rerun of that key alone
    srv.q("INSERT INTO hits VALUES (toDateTime('2026-10-25 01:30:00', 'UTC'), 1000)", db)
    d.backfill("hits_hourly", "2026-10-25T02+01:00", "2026-10-25T02+01:00")
    h.eq(srv.rows(table, db), srv.rows(recompute, db), "the table after the rerun")
    h.eq(srv.rows("SELECT s, utc FROM hits_hourly WHERE n = 4", db),
         [("2026-10-25 02:00:00", "2026-10-25 01:00:00/2026-10-25 02:00:00")],
         "the rerun hour: the second 02:00, 01:00 UTC")
    h.eq(len(d.runs()), 49, "one run more")
    h.eq(tc.stage_leftovers(db, srv=srv), {}, "stage rows left")
    d.stop()


def test_zoned_hours_clickhouse_batch():
    """A batch of the hours of a zone on ClickHouse: Berlin's 25-hour
    2026-10-25 as one batch (one fill over its UTC bounds, then a REPLACE
    per hour): 25 partitions, each its UTC hour, equal to a recompute."""
    tc, srv = ch_server()
    if srv is None:
        return skip_part("test_zoned_hours_clickhouse_batch", "no clickhouse-server")
    db = tc.fresh_db(seed=False)
    srv.q("CREATE TABLE hits (ts DateTime('UTC'), v UInt32) ENGINE = MergeTree ORDER BY ts", db)
    srv.q("INSERT INTO hits SELECT toDateTime('2026-10-24 20:00:00', 'UTC') + number * 1200,"
          " toUInt32(number % 97) FROM numbers(90)", db)
    srv.q("CREATE TABLE hits_hourly (hour DateTime('UTC'), n UInt64, total UInt64)"
          " ENGINE = MergeTree PARTITION BY toStartOfHour(hour) ORDER BY hour", db)
    jobs = """
- name: hits_hourly
  warehouse: sales
  partition: hour
  timezone: Europe/Berlin
  batch: true
  table: hits_hourly
  partition_column: hour
  sql: |
    SELECT toStartOfHour(ts) AS hour, count() AS n, sum(v) AS total FROM hits
    WHERE ts >= :partition_start_utc AND ts < :partition_end_utc GROUP BY hour
"""
    d = h.Daemon(config=tc.ch_config(db, jobs), clock=None, name="chzonedbatch")
    d.backfill("hits_hourly", "2026-10-25", "2026-10-25")
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"),
         sorted(x[0] for x in FALL), "the 25 hours of the batch succeeded")
    table = "SELECT toString(hour), toString(n), toString(total) FROM hits_hourly ORDER BY hour"
    recompute = ("SELECT toString(toStartOfHour(ts)) AS hr, count(), sum(v) FROM hits"
                 " WHERE ts >= toDateTime('2026-10-24 22:00:00', 'UTC') AND"
                 " ts < toDateTime('2026-10-25 23:00:00', 'UTC') GROUP BY hr ORDER BY hr")
    h.eq(srv.rows(table, db), srv.rows(recompute, db), "the table against a recompute")
    h.eq(len(srv.rows(table, db)), 25, "25 hours published")
    h.eq(tc.stage_leftovers(db, srv=srv), {}, "stage rows left")
    d.stop()


def test_zoned_hours_clickhouse_refused():
    """A zone whose offsets are not whole hours (Asia/Kolkata's +05:30)
    cannot have its hours published as UTC hours: the configuration is
    refused in one line at the job's timezone:, and nothing is sent."""
    tc, srv = ch_server()
    if srv is None:
        return skip_part("test_zoned_hours_clickhouse_refused", "no clickhouse-server")
    db = tc.fresh_db(seed=False)
    ch_bounds_table(srv, db, "DateTime", "toStartOfHour")
    jobs = CH_JOB % "hour\n  timezone: Asia/Kolkata"
    d = h.Daemon(config=tc.ch_config(db, jobs), clock=None, name="chcalhour", start=False)
    rc, line = check_config(d)
    h.eq(rc, 2, "--check-config of a Kolkata hourly job on ClickHouse: %s" % line)
    h.check(line.endswith('job "bounds": partition: hour in timezone Asia/Kolkata is not'
                          ' supported on a clickhouse warehouse: the zone has offsets that'
                          ' are not whole hours since 1970 (start: narrows that), so its'
                          ' hours do not start on the UTC hours toStartOfHour partitions by;'
                          ' write partition: day (or longer) in that zone, or timezone: UTC'
                          ' for its hours'),
            "the refusal: %r" % line)
    h.eq(srv.rows("SELECT count() FROM bounds", db), [("0",)], "the table after the refusal")


if __name__ == "__main__":
    h.main([test_sqlite_utc_bounds, test_sqlite_batch_manifest, test_command_utc_bounds,
            test_postgres_utc_bounds, test_clickhouse_utc_bounds,
            test_dst_day_sqlite, test_dst_day_postgres, test_dst_day_clickhouse,
            test_zoned_hours_clickhouse, test_zoned_hours_clickhouse_server_zone,
            test_zoned_hours_clickhouse_batch, test_zoned_hours_clickhouse_refused])
