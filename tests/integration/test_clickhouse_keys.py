#!/usr/bin/env python3
"""Partition keys as ClickHouse tables already have them (issue 44 item 5;
docs/clickhouse.md, "The partition key"), on the real server:

- a weekly mart PARTITION BY week_start (a Date holding Mondays) and a
  monthly one PARTITION BY month_start (first days) are accepted as they
  are: the runs publish each week (month) as its one partition, whose id
  is that of toMonday(week_start) (toStartOfMonth(month_start));
- a fill that writes another day than the partition's first one into such
  a column is refused at the audit (the row would land in a partition of
  its own that no REPLACE publishes), with what to do; nothing is
  published and no stage rows are left;
- a key that fits no grain is refused with what to do (recreate the
  table, or partition it by the column holding each first day), a
  compound one whose first element is not the grain's key, (store_id,
  dt), too (test_clickhouse_compound.py has those that are);
- a ReplacingMergeTree target is audited FINAL: a fill emitting several
  versions of a key passes key_unique, its rows and metrics those of the
  last versions."""
import subprocess

import harness as h
import test_clickhouse as tc

# (grain, column, the grain's function, partitions backfilled, seeded wrong)
SHAPES = [("week", "week_start", "toMonday", ("2026-02-02", "2026-02-09"),
           "('2026-02-02', 1, 1), ('2026-02-09', 1, 1), ('2026-01-26', 3, 3)"),
          ("month", "month_start", "toStartOfMonth", ("2026-02-01", "2026-02-01"),
           "('2026-02-01', 2, 2), ('2026-01-01', 3, 3)")]

JOB = """
- name: mart
  warehouse: sales
  partition: %s
  table: mart
  partition_column: %s
  sql: SELECT %s AS %s, store_id, sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY %s, store_id
"""


def mart_db(col, seed):
    """The lesson's warehouse and a mart partitioned by the Date column col
    itself, seeded with wrong rows."""
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE mart (%s Date, store_id UInt8, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY %s ORDER BY store_id" % (col, col), db)
    tc.SRV.q("INSERT INTO mart VALUES " + seed, db)
    return db


def expected(db, fn, lo, hi):
    return tc.SRV.rows("SELECT %s(dt) AS k, store_id, sum(amount_cents) FROM raw_sales"
                       " WHERE %s(dt) >= '%s' AND %s(dt) <= '%s' GROUP BY k, store_id"
                       " ORDER BY k, store_id" % (fn, fn, lo, fn, hi), db)


def mart_rows(db, col, fn, lo, hi):
    return tc.SRV.rows("SELECT %s, store_id, revenue_cents FROM mart WHERE %s(%s) >= '%s'"
                       " AND %s(%s) <= '%s' ORDER BY %s, store_id"
                       % (col, fn, col, lo, fn, col, hi, col), db)


def test_first_day_keys_published():
    for grain, col, fn, (lo, hi), seed in SHAPES:
        db = mart_db(col, seed)
        untouched = tc.SRV.rows("SELECT * FROM mart WHERE %s < '2026-02-01' ORDER BY %s"
                                % (col, col), db)
        job = JOB % (grain, col, "%s(dt)" % fn, col, col)
        d = h.Daemon(config=tc.ch_config(db, job), clock=None, name="chkey" + grain)
        d.backfill("mart", lo, hi)
        h.eq(mart_rows(db, col, fn, lo, hi), expected(db, fn, lo, hi),
             "the %s mart PARTITION BY %s after the backfill" % (grain, col))
        # each partition one of the table's, the same id as the grain's function
        parts = tc.SRV.rows("SELECT DISTINCT partition_id FROM system.parts WHERE"
                            " database = '%s' AND table = 'mart' AND active ORDER BY"
                            " partition_id" % db)
        ids = tc.SRV.rows("SELECT DISTINCT toString(toYYYYMMDD(%s(%s))) FROM mart ORDER BY 1"
                          % (fn, col), db)
        h.eq(sorted(parts), sorted(ids), "the %s mart's partition ids: those of %s(%s)" % (grain, fn, col))
        h.eq(tc.SRV.rows("SELECT * FROM mart WHERE %s < '2026-02-01' ORDER BY %s"
                         % (col, col), db), untouched, "the partitions not backfilled")
        h.eq(tc.stage_leftovers(db), {}, "stage rows left")
        d.stop()


def test_not_first_day_refused():
    """The fill writes dt, not the week's Monday: the audit refuses the
    run, names the day and what to write; the live mart is unchanged and
    the stage holds nothing."""
    grain, col, fn, (lo, _), seed = SHAPES[0]
    db = mart_db(col, seed)
    before = tc.SRV.rows("SELECT * FROM mart ORDER BY %s, store_id" % col, db)
    job = JOB % (grain, col, "dt", col, col)
    d = h.Daemon(config=tc.ch_config(db, job), clock=None, name="chkeybad")
    rc, out, err = d.ctl("backfill", "mart", "--from", lo, "--to", lo, "--wait")
    h.check(rc != 0, "a fill of other days should fail: %r" % out)
    r = [x for x in d.runs() if x["job"] == "mart"][-1]
    e = r["error"] or ""
    h.check(r["state"] == "failed" and "refused: the stage holds rows of 2026-02-02 whose"
            " week_start is 2026-02-0" in e and "toMonday(...) AS week_start" in e,
            "the run's error: %r" % r)
    h.eq(tc.SRV.rows("SELECT * FROM mart ORDER BY %s, store_id" % col, db), before,
         "the live mart after the refusal")
    h.eq(tc.stage_leftovers(db), {}, "stage rows left after the refusal")
    d.stop()


def test_other_key_refused_with_what_to_do():
    """A key that makes no partition of the grain: refused at start with
    the key to use, and how (recreate the table, or the first-day
    column)."""
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE mart (week_start Date, store_id UInt8, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY toYYYYMM(week_start) ORDER BY store_id", db)
    job = JOB % ("week", "week_start", "toMonday(dt)", "week_start", "week_start")
    d = h.Daemon(config=tc.ch_config(db, job), clock=None, name="chkeyother", start=False)
    r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                       timeout=60, cwd=d.dir, env=d.env())
    e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2, "start on a month-keyed mart")
    for part in ("partitioned by toYYYYMM(week_start)", "partition it by"
                 " toMonday(week_start), or by the column itself holding each partition's"
                 " first day", "RENAME TABLE"):
        h.check(part in e, "the refusal lacks %r: %r" % (part, e))
    # a compound key whose first element is not the day: refused the
    # same way, the key to use
    tc.SRV.q("CREATE TABLE fct_c (dt Date, store_id UInt8, revenue_cents Int64)"
             " ENGINE = MergeTree PARTITION BY (store_id, dt) ORDER BY store_id", db)
    job = """
- name: fct
  warehouse: sales
  partition: day
  table: fct_c
  partition_column: dt
  sql: SELECT dt, store_id, sum(amount_cents) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
"""
    d = h.Daemon(config=tc.ch_config(db, job), clock=None, name="chkeycompound", start=False)
    r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                       timeout=60, cwd=d.dir, env=d.env())
    e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2, "start on a compound key")
    h.check("partitioned by (store_id, dt)" in e and "partition it by dt, or by a tuple"
            " (dt, ...) whose first element is that (" in e, "the refusal of a compound key: %r" % e)


REPLACING = """
- name: fct
  warehouse: sales
  partition: day
  table: fct_r
  partition_column: dt
  key: [dt, store_id]
  min_rows: 1
  metrics:
    revenue: sum(revenue_cents)
  sql: SELECT dt, store_id, v, sum(amount_cents) * v FROM raw_sales ARRAY JOIN [1, 2] AS v WHERE dt = :partition GROUP BY dt, store_id, v
"""


def test_replacing_read_final():
    """A ReplacingMergeTree(ver) target and a fill that emits two versions
    of each key: the audit reads the stage FINAL (as the table's readers
    see it once merged): key_unique passes, the rows and the metric are
    those of the last versions; the live table FINAL holds them."""
    db = tc.fresh_db()
    day = "2026-02-09"
    tc.SRV.q("CREATE TABLE fct_r (dt Date, store_id UInt8, ver UInt8, revenue_cents Int64)"
             " ENGINE = ReplacingMergeTree(ver) PARTITION BY dt ORDER BY (dt, store_id)", db)
    tc.SRV.q("INSERT INTO fct_r VALUES ('%s', 1, 1, 5)" % day, db)
    tc.SRV.q("INSERT INTO fct_r VALUES ('%s', 1, 2, 7)" % day, db)
    d = h.Daemon(config=tc.ch_config(db, REPLACING), clock=None, name="chreplacing")
    req = d.enqueue("backfill", "fct", "--from", day, "--to", day, "--wait")
    r = [x for x in d.runs() if x["job"] == "fct"]
    h.eq([x["state"] for x in r], ["succeeded"], "the run of two versions a key: %r" % r)
    want = tc.SRV.rows("SELECT dt, store_id, 2, sum(amount_cents) * 2 FROM raw_sales WHERE"
                       " dt = '%s' GROUP BY dt, store_id ORDER BY store_id" % day, db)
    h.eq(tc.SRV.rows("SELECT * FROM fct_r FINAL WHERE dt = '%s' ORDER BY store_id" % day, db),
         want, "the live table's last versions")
    p = [x for x in d.json("audit", "--request", str(req))["partitions"]
         if x["partition"] == day][0]
    h.eq((p["rows_before"], p["rows_after"]), (1, len(want)),
         "the audit's rows: one a key, before (two versions of store 1) and after")
    h.eq((p["metrics"]["revenue"]["before"], p["metrics"]["revenue"]["after"]),
         (7, sum(int(w[3]) for w in want)), "the metric over the last versions")
    h.eq([(c["name"], c["passed"]) for c in p["checks"] if c["name"] == "key_unique"],
         [("key_unique", True)], "key_unique over the last versions")
    d.stop()


def main():
    tc.start_server()
    h.main([test_first_day_keys_published, test_not_first_day_refused,
            test_other_key_refused_with_what_to_do, test_replacing_read_final])


if __name__ == "__main__":
    main()
