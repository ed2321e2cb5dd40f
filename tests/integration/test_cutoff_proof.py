#!/usr/bin/env python3
"""A skip is proven (issue 40, docs/cutoff.md): early cut-off skips a
downstream partition only when every input's fingerprint proves it
identical, on SQLite, on PostgreSQL with --postgres (the throwaway cluster
of test_postgres.py, its database set to extra_float_digits = 0), and on
ClickHouse with --clickhouse (the throwaway server of test_clickhouse.py).
Each exits 77 without its server unless BACKFILLD_REQUIRE_POSTGRES=1 /
BACKFILLD_REQUIRE_CLICKHOUSE=1.

A day fact copies its source's values; a weekly mart copies the fact's.
For each pair of values that print alike at 15 significant digits (or
under extra_float_digits = 0), or that a NULL hid from the row's hash,
the source changes from the first to the second and the day is rebuilt:
the week must be rebuilt too (state succeeded, not skipped), the mart
must hold the new value, `stale` must be empty.  A fact whose
partition_column holds :partition_start rather than the key fails its
run, saying so, instead of reading 0 rows before and after and calling
every downstream partition unchanged."""
import sys

import harness as h

PG = "--postgres" in sys.argv
CH = "--clickhouse" in sys.argv
if PG:
    import test_postgres as tp
if CH:
    import test_clickhouse as tc

DAY = "2026-01-05"   # a Monday: its week is the week of DAY

SEED_SQLITE = """
CREATE TABLE src (dt TEXT, id INTEGER, v REAL, t TEXT);
CREATE TABLE fct (dt TEXT, id INTEGER, v REAL, t TEXT);
CREATE TABLE wk (week TEXT, id INTEGER, v REAL, t TEXT);
CREATE TABLE hsrc (hr TEXT, v INTEGER);
CREATE TABLE hf (ts TEXT, v INTEGER);
CREATE TABLE hday (dt TEXT, total INTEGER);
"""

SEED_PG = """
CREATE TABLE src (dt text, id int, v float8, t text, f4 float4);
CREATE TABLE fct (dt text, id int, v float8, t text, f4 float4);
CREATE TABLE wk (week text, id int, v float8, t text, f4 float4);
"""

JOBS = """
- name: fct
  warehouse: dw
  partition: day
  start: 2026-01-01
  catchup: false
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT * FROM src WHERE dt = :partition;
- name: wk
  warehouse: dw
  partition: week
  start: 2025-12-29
  catchup: false
  upstream: [fct]
  table: wk
  partition_column: week
  sql: |
    DELETE FROM wk WHERE week = :partition;
    INSERT INTO wk SELECT CAST(:partition AS TEXT), %s
      FROM fct WHERE dt >= :partition_start AND dt < :partition_end;
"""

HOURLY = """
- name: hf
  warehouse: dw
  partition: hour
  start: 2026-01-01
  catchup: false
  table: hf
  partition_column: ts
  sql: |
    DELETE FROM hf WHERE ts = :partition_start;
    INSERT INTO hf SELECT :partition_start, v FROM hsrc WHERE hr = :partition;
- name: hday
  warehouse: dw
  partition: day
  start: 2026-01-01
  catchup: false
  upstream: [hf]
  table: hday
  partition_column: dt
  sql: |
    DELETE FROM hday WHERE dt = :partition;
    INSERT INTO hday SELECT :partition, SUM(v) FROM hf
      WHERE ts >= :partition_start AND ts < :partition_end;
"""

# ClickHouse: a Date fact with a NULL column, money, Nullable(Float64),
# and a DateTime fact partitioned by day; each a weekly mart.
SEED_CH = """
CREATE TABLE src (dt Date, id UInt32, v Nullable(Float64), t Nullable(String), m Decimal(38,2)) ENGINE = MergeTree ORDER BY id;
CREATE TABLE fct (dt Date, id UInt32, v Nullable(Float64), t Nullable(String), m Decimal(38,2)) ENGINE = MergeTree PARTITION BY dt ORDER BY id;
CREATE TABLE wk (week Date, id UInt32, v Nullable(Float64), t Nullable(String), m Decimal(38,2)) ENGINE = MergeTree PARTITION BY toMonday(week) ORDER BY id;
CREATE TABLE tsrc (ts DateTime, v Float64) ENGINE = MergeTree ORDER BY ts;
CREATE TABLE tf (ts DateTime, v Float64) ENGINE = MergeTree PARTITION BY toDate(ts) ORDER BY ts;
CREATE TABLE twk (week Date, v Float64) ENGINE = MergeTree PARTITION BY toMonday(week) ORDER BY week;
"""

JOBS_CH = """
- name: fct
  warehouse: sales
  partition: day
  start: 2026-01-01
  catchup: false
  table: fct
  partition_column: dt
  sql: SELECT dt, id, v, t, m FROM src WHERE dt = :partition
- name: wk
  warehouse: sales
  partition: week
  start: 2025-12-29
  catchup: false
  upstream: [fct]
  table: wk
  partition_column: week
  sql: |
    SELECT :partition, id, v, t, m FROM fct
     WHERE dt >= :partition_start AND dt < :partition_end
- name: tf
  warehouse: sales
  partition: day
  start: 2026-01-01
  catchup: false
  table: tf
  partition_column: ts
  sql: SELECT ts, v FROM tsrc WHERE toDate(ts) = :partition
- name: twk
  warehouse: sales
  partition: week
  start: 2025-12-29
  catchup: false
  upstream: [tf]
  table: twk
  partition_column: week
  allow_empty: true
  sql: |
    SELECT :partition, sum(v) FROM tf
     WHERE toDate(ts) >= :partition_start AND toDate(ts) < :partition_end
"""


class Warehouse:
    def __init__(self):
        self.d = None
        if PG:
            self.c = tp.cluster()
            self.c.fresh_db()
            self.c.as_etl(SEED_PG)
            # what a DBA may set: the rows' text then rounds floats
            self.c.psql("ALTER DATABASE etl SET extra_float_digits = 0", db="postgres")
        if CH:
            tc.SRV = tc.SRV or tc.Server()
            self.db = tc.fresh_db(seed=False)
            tc.SRV.script(SEED_CH, self.db)

    def daemon(self):
        settings = {"max_concurrency": 2, "max_backfill": 500}
        if PG:
            return tp.pg_daemon(JOBS % "id, v, t, f4", tp.pg_warehouse("dw"),
                                name="pgproof", clock=None, settings=settings)
        if CH:
            return h.Daemon(config=tc.ch_config(self.db, JOBS_CH), clock=None, name="chproof")
        return h.Daemon(jobs=JOBS % "id, v, t" + HOURLY, warehouses={"dw": SEED_SQLITE},
                        clock=None, name="proof", settings=settings)

    def exec(self, sql):
        if PG:
            self.c.as_etl(sql)
        elif CH:
            tc.SRV.script(sql, self.db)
        else:
            con = __import__("sqlite3").connect(self.d.warehouses["dw"])
            con.executescript(sql)
            con.commit()
            con.close()

    def value(self, sql):
        """One row of text, exact (floats at their shortest exact form)."""
        if PG:
            return self.c.psql("SET extra_float_digits = 3; " + sql)[0]
        if CH:
            return tuple(tc.SRV.rows(sql, self.db)[0])
        return tuple(repr(x) for x in self.d.query(sql, wh="dw")[0])


def week_state(d, req, job="wk"):
    states = [r["state"] for r in d.json("runs", "--request", str(req)) if r["job"] == job]
    h.eq(len(states), 1, "request %d ran %s once: %r" % (req, job, states))
    return states[0]


def backfill(d, job="fct"):
    out = d.ok("backfill", job, "--from", DAY, "--to", DAY, "--wait")
    return int(out.split("request ")[1].split(":")[0])


def change(w, d, set_sql, what, mart_sql, fact="fct", mart="wk"):
    """Change the source, rebuild the day: the week is rebuilt with it."""
    w.exec(set_sql)
    req = backfill(d, fact)
    h.eq(week_state(d, req, mart), "succeeded",
         "%s: the week is rebuilt (a skip must be proven)" % what)
    got = w.value(mart_sql)
    h.eq(d.json("stale")["stale"], [], "%s: nothing stale" % what)
    return got


def test_sqlite(w, d):
    w.exec("INSERT INTO src VALUES ('%s', 1, 0.1, 'a')" % DAY)
    backfill(d)
    mart = "SELECT v, t FROM wk WHERE week = '%s'" % DAY
    # (b) REAL by its bits, not 15 significant digits
    for old, new in (("0.1", "0.10000000000000002"), ("1e16", "10000000000000006.0"),
                     ("1234567.891234567", "1234567.8912345674")):
        w.exec("UPDATE src SET v = %s" % old)
        backfill(d)
        got = change(w, d, "UPDATE src SET v = %s" % new, "%s -> %s" % (old, new), mart)
        h.eq(got[0], repr(float(new)), "the mart holds %s" % new)
    # NULL, '' and 0 are three values
    for old, new in (("NULL", "''"), ("''", "0"), ("0", "NULL")):
        w.exec("UPDATE src SET t = %s" % old)
        backfill(d)
        got = change(w, d, "UPDATE src SET t = %s" % new, "t %s -> %s" % (old, new), mart)
        h.eq(got[1], {"NULL": "None", "''": "''", "0": "'0'"}[new], "the mart's t after %s" % new)
    # an identical rebuild is still skipped
    req = backfill(d)
    h.eq(week_state(d, req), "skipped", "an identical day still skips its week")
    # the rows each run wrote: the day's DELETE and INSERT of its row
    h.eq([p["rows_changed"] for p in d.json("audit", "--request", str(req))["partitions"]
          if p["job"] == "fct"], [2], "audit: the rows the day's run changed")
    # a day without rows that stays empty under a write that changed
    # nothing is proven identical (its count of 0 travels from the worker
    # on the PostgreSQL state store too): its week is skipped
    empty = "2026-01-06"
    d.ok("backfill", "fct", "--from", empty, "--to", empty, "--wait")
    out = d.ok("backfill", "fct", "--from", empty, "--to", empty, "--wait")
    req = int(out.split("request ")[1].split(":")[0])
    h.eq(week_state(d, req), "skipped", "an empty day that stays empty skips its week")
    h.eq([(p["rows_before"], p["rows_after"], p["rows_changed"])
          for p in d.json("audit", "--request", str(req))["partitions"] if p["job"] == "fct"],
         [(0, 0, 0)], "audit of the empty day")


def test_partition_start(w, d):
    """(a) partition_column holding :partition_start: the run fails and
    says why; the day rollup is not called unchanged."""
    w.exec("INSERT INTO hsrc VALUES ('%sT05', 7)" % DAY)
    rc, out, err = d.ctl("backfill", "hf", "--from", DAY + "T05", "--to", DAY + "T05", "--wait")
    h.check(rc != 0, "a run writing outside its partition fails:\n%s%s" % (out, err))
    runs = [r for r in d.json("runs", "--job", "hf") if r["partition"] == DAY + "T05"]
    h.eq([r["state"] for r in runs], ["failed"], "the hour's run failed")
    msg = runs[0]["error"] or ""
    h.check("partition_column" in msg and "holds no row with the partition's key "
            "%sT05" % DAY in msg and "not e.g. :partition_start" in msg,
            "the run names partition_column and the key: %r" % msg)
    h.eq(w.value("SELECT count(*) FROM hf"), ("0",), "the failed run wrote nothing")
    # audit shows what the run's statements wrote beside the column's
    # rows (0 -> 0 read by the key): the INSERT of one row
    req = runs[0]["request"]
    a = [p for p in d.json("audit", "--request", str(req))["partitions"] if p["job"] == "hf"]
    h.eq([(p["rows_before"], p["rows_after"], p["rows_changed"]) for p in a], [(0, 0, 1)],
         "audit of the hour: rows before, after, changed")
    lines = d.ok("audit", "--request", str(req)).split("\n")
    h.check("ROWS CHANGED" in lines[0], "audit's head: %r" % lines[0])
    row = [l.split() for l in lines if l.startswith("hf ")]
    h.eq([r[3:6] for r in row], [["0", "0", "1"]], "audit's row of the hour: %r" % row)
    h.eq([r["state"] for r in d.json("runs", "--job", "hday") if r["partition"] == DAY],
         ["blocked"], "the day rollup did not run on it")


def test_postgres(w, d):
    w.exec("INSERT INTO src VALUES ('%s', 1, 0.1, 'a', 0.1)" % DAY)
    backfill(d)
    mart = "SELECT v::text, f4::text FROM wk WHERE week = '%s'" % DAY
    # (c) float8 under extra_float_digits = 0
    for old, new in (("0.1", "0.10000000000000002"), ("1e16", "10000000000000002")):
        w.exec("UPDATE src SET v = %s" % old)
        backfill(d)
        got = change(w, d, "UPDATE src SET v = %s" % new, "%s -> %s" % (old, new), mart)
        h.eq(float(got[0]), float(new), "the mart holds %s" % new)
    # float4's last bit: 0.1 and the next float4 up
    w.exec("UPDATE src SET f4 = 0.1")
    backfill(d)
    got = change(w, d, "UPDATE src SET f4 = 0.10000001", "float4 last bit", mart)
    h.eq(got[1], "0.10000001", "the mart holds the float4's new last bit")
    req = backfill(d)
    h.eq(week_state(d, req), "skipped", "an identical day still skips its week")


SRC_CH = "(dt Date, id UInt32, v Nullable(Float64), t Nullable(String), m Decimal(38,2))"


def ch_src(row, table="src", cols=SRC_CH):
    """The source as one row (a mutation is asynchronous on 18.16)."""
    return "DROP TABLE %s; CREATE TABLE %s %s ENGINE = MergeTree ORDER BY tuple(); " \
           "INSERT INTO %s VALUES %s" % (table, table, cols, table, row)


def test_clickhouse(w, d):
    # (d) a NULL in one column: a change to another column of that row
    w.exec(ch_src("('%s', 1, NULL, NULL, 14.00)" % DAY))
    backfill(d)
    mart = "SELECT toString(v), toString(t), toString(m) FROM wk WHERE week = '%s'" % DAY
    got = change(w, d, ch_src("('%s', 1, NULL, NULL, 15.00)" % DAY),
                 "Decimal beside a NULL", mart)
    h.eq(got[2], "15.00", "the mart holds the new money")
    # Nullable(Float64): exact
    w.exec(ch_src("('%s', 1, 0.1, NULL, 15.00)" % DAY))
    backfill(d)
    got = change(w, d, ch_src("('%s', 1, 0.10000000000000002, NULL, 15.00)" % DAY),
                 "Nullable(Float64) 0.1 -> 0.10000000000000002", mart)
    h.eq(got[0], "0.10000000000000002", "the mart holds the new float")
    req = backfill(d)
    h.eq(week_state(d, req), "skipped", "an identical day still skips its week")
    # a DateTime partition column (PARTITION BY toDate(ts)) holding the
    # day's start, then an instant within the day: the stage's audit reads
    # the row (it was refused as empty), the fact is published with it and
    # the week's mart holds the new value
    tcols = "(ts DateTime, v Float64)"
    twk = "SELECT toString(sum(v)) FROM twk WHERE week = '%s'" % DAY
    for ts, old, new in (("00:00:00", 1, 2), ("05:30:00", 2, 3)):
        w.exec(ch_src("('%s %s', %d)" % (DAY, ts, old), "tsrc", tcols))
        backfill(d, "tf")
        h.eq(w.value(twk), (str(old),), "the mart after the fact of %s" % ts)
        got = change(w, d, ch_src("('%s %s', %d)" % (DAY, ts, new), "tsrc", tcols),
                     "DateTime partition column at %s" % ts, twk, fact="tf", mart="twk")
        h.eq(got, (str(new),), "the week's mart after the rebuild (%s)" % ts)
        h.eq(w.value("SELECT toString(count()), toString(sum(v)) FROM tf"), ("1", str(new)),
             "the fact holds the day's row (%s)" % ts)
    req = max(r["request"] for r in d.json("runs", "--job", "tf") if r["partition"] == DAY)
    a = [p for p in d.json("audit", "--request", str(req))["partitions"] if p["job"] == "tf"]
    h.eq([(p["rows_before"], p["rows_after"]) for p in a], [(1, 1)],
         "audit of the DateTime day: its row before and after")


def run_all():
    w = Warehouse()
    d = w.d = w.daemon()
    if PG:
        test_postgres(w, d)
    elif CH:
        test_clickhouse(w, d)
    else:
        test_sqlite(w, d)
        test_partition_start(w, d)
    d.stop()


def main():
    if PG:
        if not __import__("os").environ.get("BACKFILLD"):
            h.binaries()
        try:
            tp.cluster()
            h.main([run_all])
        finally:
            if tp.CLUSTER is not None:
                tp.CLUSTER.close()
    else:
        h.main([run_all])


if __name__ == "__main__":
    main()
