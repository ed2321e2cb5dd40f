#!/usr/bin/env python3
"""Dependency windows on a PostgreSQL warehouse (--postgres) and on a
ClickHouse warehouse (--clickhouse) (issue 41; test_windows.py does the
same shapes on SQLite).  One config holds them all: a daily fact, a
monthly FX rate, a daily EUR table over both, a rolling 7-day mart
(upstream {job: fct, lookback: 6}) and, on PostgreSQL, a whole-table total
(partition: none).  Built, then the fact's 2026-02-08..12 repaired: the
runs are exactly the fact's 5 days, the EUR table's 5 days, the mart's
02-08..02-18 and the total once, each succeeded, the total after the last
fact day; every table then equals a recompute (from the events the test
wrote) and nothing is stale.  Then February's rate repaired: its month
and the EUR table's 28 February days, each once, nothing else, equal to a
recompute.  On ClickHouse every job is write-audit-publish (table,
partition_column), no stage row or mark is left, and partition: none is
refused by --check-config in one line (docs/clickhouse.md).

Throwaway servers as in test_running_total_pg.py / _ch.py (exit 77
without them, unless BACKFILLD_REQUIRE_POSTGRES=1 /
BACKFILLD_REQUIRE_CLICKHOUSE=1)."""
import os
import subprocess
import sys

import harness as h

PG = "--postgres" in sys.argv
CH = "--clickhouse" in sys.argv
if PG:
    import test_postgres as tp
if CH:
    import test_clickhouse as tc

FIRST, LAST = "2026-01-26", "2026-03-03"
DAYS = h.days(FIRST, LAST)
MONTHS = ("2026-01-01", "2026-02-01", "2026-03-01")
REPAIRED = h.days("2026-02-08", "2026-02-12")
ROLLED = h.days("2026-02-08", "2026-02-18")
FEBRUARY = h.days("2026-02-01", "2026-02-28")

# the events (cents a day) and the monthly rates (EUR per 1000 USD) the
# test wrote: the source of every recompute
EVENTS = {x: 100 * (i + 1) + 50 for i, x in enumerate(DAYS)}
RATES = {"2026-01-01": 900, "2026-02-01": 920, "2026-03-01": 950}

PG_SEED = """
CREATE TABLE w_events (dt date, amount bigint);
CREATE TABLE w_fx_source (month date, rate bigint, ver int);
CREATE TABLE w_fx (month date PRIMARY KEY, rate bigint);
CREATE TABLE w_fct (dt date PRIMARY KEY, revenue bigint);
CREATE TABLE w_eur (dt date PRIMARY KEY, revenue_eur bigint);
CREATE TABLE w_rolling (dt date PRIMARY KEY, revenue_7d bigint);
CREATE TABLE w_lifetime (total bigint, days bigint);
"""

PG_JOBS = """
- name: fx_monthly
  warehouse: sales
  partition: month
  table: w_fx
  partition_column: month
  sql: |
    DELETE FROM w_fx WHERE month = CAST(:partition AS date);
    INSERT INTO w_fx SELECT month, rate FROM w_fx_source
    WHERE month = CAST(:partition AS date) ORDER BY ver DESC LIMIT 1;
- name: fct
  warehouse: sales
  partition: day
  concurrency: 4
  table: w_fct
  partition_column: dt
  sql: |
    DELETE FROM w_fct WHERE dt = CAST(:partition AS date);
    INSERT INTO w_fct SELECT CAST(:partition AS date), SUM(amount) FROM w_events
    WHERE dt >= CAST(:partition_start AS date) AND dt < CAST(:partition_end AS date);
- name: fct_eur
  warehouse: sales
  partition: day
  start: %(first)s
  end: %(last)s
  concurrency: 4
  max_backfill: 100
  upstream: [fct, fx_monthly]
  sql: |
    DELETE FROM w_eur WHERE dt = CAST(:partition AS date);
    INSERT INTO w_eur SELECT f.dt, f.revenue * x.rate FROM w_fct f
    JOIN w_fx x ON x.month = CAST(date_trunc('month', f.dt) AS date)
    WHERE f.dt = CAST(:partition AS date);
- name: mart_rolling_7d
  warehouse: sales
  partition: day
  end: %(last)s
  concurrency: 4
  max_backfill: 100
  upstream:
    - job: fct
      lookback: 6
  sql: |
    DELETE FROM w_rolling WHERE dt = CAST(:partition AS date);
    INSERT INTO w_rolling SELECT CAST(:partition AS date), SUM(revenue) FROM w_fct
    WHERE dt >= CAST(:partition_start AS date) - 6 AND dt < CAST(:partition_end AS date);
- name: store_lifetime
  warehouse: sales
  partition: none
  upstream: [fct]
  sql: |
    DELETE FROM w_lifetime;
    INSERT INTO w_lifetime SELECT SUM(revenue), COUNT(*) FROM w_fct;
""" % {"first": FIRST, "last": LAST}

CH_SEED = """
CREATE TABLE w_events (dt Date, amount Int64) ENGINE = MergeTree ORDER BY dt;
CREATE TABLE w_fx_source (month Date, rate Int64, ver Int32) ENGINE = MergeTree ORDER BY month;
CREATE TABLE w_fx (month Date, rate Int64) ENGINE = MergeTree PARTITION BY month ORDER BY month;
CREATE TABLE w_fct (dt Date, revenue Int64) ENGINE = MergeTree PARTITION BY dt ORDER BY dt;
CREATE TABLE w_eur (dt Date, revenue_eur Int64) ENGINE = MergeTree PARTITION BY dt ORDER BY dt;
CREATE TABLE w_rolling (dt Date, revenue_7d Int64) ENGINE = MergeTree PARTITION BY dt ORDER BY dt
"""

CH_JOBS = """
- name: fx_monthly
  warehouse: sales
  partition: month
  table: w_fx
  partition_column: month
  key: [month]
  sql: |
    SELECT month, rate FROM w_fx_source WHERE month = :partition
    ORDER BY ver DESC LIMIT 1
- name: fct
  warehouse: sales
  partition: day
  concurrency: 4
  table: w_fct
  partition_column: dt
  key: [dt]
  sql: |
    SELECT :partition, sum(amount) FROM w_events
    WHERE dt >= :partition_start AND dt < :partition_end
- name: fct_eur
  warehouse: sales
  partition: day
  start: %(first)s
  end: %(last)s
  concurrency: 4
  max_backfill: 100
  table: w_eur
  partition_column: dt
  key: [dt]
  upstream: [fct, fx_monthly]
  sql: |
    SELECT dt, revenue * (SELECT any(rate) FROM w_fx
                          WHERE month = toStartOfMonth(:partition))
    FROM w_fct WHERE dt = :partition
- name: mart_rolling_7d
  warehouse: sales
  partition: day
  end: %(last)s
  concurrency: 4
  max_backfill: 100
  table: w_rolling
  partition_column: dt
  key: [dt]
  upstream:
    - job: fct
      lookback: 6
  sql: |
    SELECT :partition, sum(revenue) FROM w_fct
    WHERE dt >= :partition_start - 6 AND dt < :partition_end
""" % {"first": FIRST, "last": LAST}

# what a ClickHouse warehouse refuses: a whole table (its runs replace one
# partition of a partition_column)
CH_LIFETIME = """
- name: store_lifetime
  warehouse: sales
  partition: none
  upstream: [fct]
  table: w_lifetime
  sql: SELECT sum(revenue), count() FROM w_fct
"""


class Warehouse:
    """The warehouse the arguments name, seeded with the events and rates."""

    def __init__(self):
        rows = ", ".join("('%s', %d)" % kv for kv in EVENTS.items())
        rates = ", ".join("('%s', %d, 1)" % kv for kv in RATES.items())
        if PG:
            self.c = tp.cluster()
            self.c.fresh_db()
            self.c.as_etl(PG_SEED + "INSERT INTO w_events VALUES %s;"
                          " INSERT INTO w_fx_source VALUES %s;" % (rows, rates))
            self.d = tp.pg_daemon(PG_JOBS, tp.pg_warehouse(), clock=None, name="pgwin",
                                  settings={"max_concurrency": 8})
        else:
            self.db = tc.fresh_db(seed=False)
            tc.SRV.script(CH_SEED, self.db)
            self.exec("INSERT INTO w_events VALUES %s" % rows)
            self.exec("INSERT INTO w_fx_source VALUES %s" % rates)
            self.d = h.Daemon(config=tc.ch_config(self.db, CH_JOBS), clock=None,
                              name="chwin")

    def exec(self, sql):
        if PG:
            self.c.as_etl(sql)
        else:
            tc.SRV.q(sql, self.db)

    def table(self, sql):
        """Rows of a query, numbers as int."""
        rows = self.c.psql(sql) if PG else tc.SRV.rows(sql, self.db)
        return [tuple(int(v) if v.lstrip("-").isdigit() else v for v in r) for r in rows]


def recompute(w, what):
    """Every table equals a recompute from the events and rates the test
    wrote."""
    fct = EVENTS
    h.eq(w.table("SELECT dt, revenue FROM w_fct ORDER BY dt"), sorted(fct.items()),
         "fct %s" % what)
    h.eq(w.table("SELECT dt, revenue_eur FROM w_eur ORDER BY dt"),
         [(x, fct[x] * RATES[x[:8] + "01"]) for x in DAYS], "fct_eur %s" % what)
    h.eq(w.table("SELECT dt, revenue_7d FROM w_rolling ORDER BY dt"),
         [(x, sum(fct[y] for y in DAYS[max(0, i - 6):i + 1])) for i, x in enumerate(DAYS)],
         "mart_rolling_7d %s" % what)
    if PG:
        h.eq(w.table("SELECT total, days FROM w_lifetime"),
             [(sum(fct.values()), len(fct))], "store_lifetime %s" % what)
    h.eq(w.d.json("stale")["stale"], [], "stale %s" % what)
    if CH:
        h.eq(tc.stage_leftovers(w.db), {}, "stage rows left %s" % what)
        h.eq(tc.marks_left(w.db), {}, "marks left %s" % what)


def ran(w, before, want, what):
    """The runs since before are want (job, partition), each succeeded."""
    new = w.d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in new),
         sorted((j, p, "succeeded") for j, p in want), what)
    return new


def test_shapes_on_warehouse():
    w = Warehouse()
    d = w.d
    for m in MONTHS:
        d.backfill("fx_monthly", m, m, "--no-downstream")
    d.backfill("fct", FIRST, LAST)
    recompute(w, "after the first build")

    w.exec("INSERT INTO w_events VALUES %s" % ", ".join("('%s', 10000)" % x for x in REPAIRED))
    for x in REPAIRED:
        EVENTS[x] += 10000
    before = len(d.runs())
    d.backfill("fct", REPAIRED[0], REPAIRED[-1], "--reason", "refunds")
    new = ran(w, before, [("fct", x) for x in REPAIRED] + [("fct_eur", x) for x in REPAIRED] +
              [("mart_rolling_7d", x) for x in ROLLED] +
              ([("store_lifetime", "-")] if PG else []),
              "the runs of the repair of 02-08..12 (each once, nothing else)")
    if PG:
        last = max(h.parse_iso(r["finished_at"]) for r in h.by_job(new, "fct"))
        h.check(h.parse_iso(h.by_job(new, "store_lifetime")[0]["started_at"]) >= last,
                "store_lifetime started before the last repaired day landed")
    recompute(w, "after the repair of 02-08..12")

    w.exec("INSERT INTO w_fx_source VALUES ('2026-02-01', 970, 2)")
    RATES["2026-02-01"] = 970
    before = len(d.runs())
    d.backfill("fx_monthly", "2026-02-01", "2026-02-01", "--reason", "wrong rate")
    ran(w, before, [("fx_monthly", "2026-02-01")] + [("fct_eur", x) for x in FEBRUARY],
        "the runs of February's rate (its 28 days once, nothing else)")
    recompute(w, "after February's rate")
    d.stop()


def test_whole_table_refused_on_clickhouse():
    """partition: none on a ClickHouse warehouse: --check-config refuses it
    in one line, at its position, saying what to use instead."""
    backfilld, _ = h.binaries()
    folder = h.suite_mkdtemp("chwinnone")
    conf = os.path.join(folder, "c.yaml")
    with open(conf, "w") as f:
        f.write(tc.ch_config("wh0", CH_JOBS + CH_LIFETIME))
    p = subprocess.run([backfilld, "--check-config", "-c", conf], capture_output=True,
                       text=True)
    e = h.one_line_error(p.returncode, p.stdout, p.stderr, 2, "--check-config")
    with open(conf) as f:
        line = [i for i, x in enumerate(f, 1) if x.strip() == "partition: none"]
    h.eq(len(line), 1, "partition: none in the config")
    h.check(e.startswith("backfilld: %s:%d:" % (conf, line[0])),
            "the refusal's position (line %d): %r" % (line[0], e))
    h.eq(e[e.index(" job "):], " job \"store_lifetime\": partition: none is not"
         " available on a clickhouse warehouse in this version (its runs replace one"
         " partition of a partition_column); use a SQLite or PostgreSQL warehouse, or"
         " a command job", "the refusal")


def main():
    if PG == CH:
        h.fail("give --postgres or --clickhouse")
    if PG:
        if not os.environ.get("BACKFILLD"):
            h.binaries()
        try:
            tp.cluster()
            h.main([test_shapes_on_warehouse])
        finally:
            if tp.CLUSTER is not None:
                tp.CLUSTER.close()
        return
    tc.start_server()
    h.main([test_shapes_on_warehouse, test_whole_table_refused_on_clickhouse])


if __name__ == "__main__":
    main()
