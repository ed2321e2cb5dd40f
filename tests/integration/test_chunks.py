#!/usr/bin/env python3
"""batch: N (backfilld.yaml(5), batch): a request's partitions run N at a
time, one transaction and one backfill_manifest table per chunk, the
checks per partition, on SQLite and on PostgreSQL (the throwaway cluster of
test_postgres.py; exit 77 after the SQLite part without PostgreSQL, unless
BACKFILLD_REQUIRE_POSTGRES=1).

The job's SQL logs each execution into chunk_log (the manifest's size and
bounds, inside the run's transaction), so the warehouse itself says how
many runs there were and which partitions each held: 10 partitions with
batch: 3 are 4 runs (3, 3, 3, 1).  A check that fails for one partition
(listed in bad_days) fails its chunk only: that chunk's rows and its
chunk_log row are rolled back, the other chunks commit.
"""
import harness as h

DAYS = ("2026-02-01", "2026-02-10")
CHUNKS = [(3, "2026-02-01", "2026-02-03"), (3, "2026-02-04", "2026-02-06"),
          (3, "2026-02-07", "2026-02-09"), (1, "2026-02-10", "2026-02-10")]
BAD = "2026-02-05"

SQLITE_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  retries: 0
  batch: 3
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: |
    DELETE FROM fct_daily_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest);
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales
    WHERE dt IN (SELECT partition_key FROM backfill_manifest) GROUP BY dt, store_id;
    INSERT INTO chunk_log (n, lo, hi)
    SELECT COUNT(*), MIN(partition_key), MAX(partition_key) FROM backfill_manifest;
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT ROUND(SUM(revenue_usd),2) FROM fct_daily_sales WHERE dt = :partition)
                IS (SELECT ROUND(SUM(amount_usd),2) FROM raw_sales WHERE dt = :partition)
           AND :partition NOT IN (SELECT d FROM bad_days)
"""

PG_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  retries: 0
  batch: 3
  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  sql: |
    DELETE FROM fct_daily_sales f USING backfill_manifest m
    WHERE f.dt = m.partition_key::date;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT r.dt, r.store_id, COUNT(*), SUM(r.amount_usd)
    FROM raw_sales r JOIN backfill_manifest m ON r.dt = m.partition_key::date
    GROUP BY r.dt, r.store_id;
    INSERT INTO chunk_log (n, lo, hi)
    SELECT count(*), min(partition_key), max(partition_key) FROM backfill_manifest;
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = :partition::date)
                IS NOT DISTINCT FROM (SELECT SUM(amount_usd) FROM raw_sales WHERE dt = :partition::date)
           AND :partition::date NOT IN (SELECT d::date FROM bad_days)
"""

TABLES = "CREATE TABLE chunk_log (n integer, lo text, hi text); CREATE TABLE bad_days (d text);"


class Sqlite:
    """The SQLite warehouse of the daemon, the sales example."""

    def __init__(self):
        self.d = h.Daemon(jobs=SQLITE_JOB, warehouses={"sales": h.sales_seed() + TABLES},
                          name="chunks")

    def sql(self, text):
        con = __import__("sqlite3").connect(self.d.warehouses["sales"])
        con.executescript(text)
        con.commit()
        con.close()

    def chunk_log(self):
        return [(int(n), lo, hi) for n, lo, hi in
                self.d.query("SELECT n, lo, hi FROM chunk_log ORDER BY lo")]

    def zeroed(self):
        """The days whose fact rows still hold the revenue the test zeroed."""
        return sorted(r[0] for r in self.d.query(
            "SELECT DISTINCT dt FROM fct_daily_sales WHERE revenue_usd = 0"
            " AND dt BETWEEN ? AND ?", DAYS))

    def close(self):
        self.d.stop()


class Postgres:
    """The same on a PostgreSQL warehouse (config/postgres/sales.sql)."""

    def __init__(self):
        import test_postgres as tp
        self.c = tp.cluster()
        self.c.fresh_db()
        self.c.as_etl(TABLES)
        self.d = tp.pg_daemon(PG_JOB, tp.pg_warehouse(), name="pgchunks")

    def sql(self, text):
        self.c.as_etl(text)

    def chunk_log(self):
        return [(int(n), lo, hi) for n, lo, hi in
                self.c.psql("SELECT n, lo, hi FROM chunk_log ORDER BY lo")]

    def zeroed(self):
        return sorted(r[0] for r in self.c.psql(
            "SELECT DISTINCT dt FROM fct_daily_sales WHERE revenue_usd = 0"
            " AND dt BETWEEN '%s' AND '%s'" % DAYS))

    def close(self):
        self.d.stop()


def chunks_run(w):
    d = w.d
    out = d.backfill("fct_daily_sales", *DAYS)
    h.check("10 succeeded, 0 failed" in out, "backfill --wait summary: %r" % out)
    h.eq(w.chunk_log(), CHUNKS, "executions of the job (the warehouse's chunk_log)")
    runs = h.by_job(d.runs(), "fct_daily_sales")
    h.eq(sorted(r["partition"] for r in runs), h.days(*DAYS), "partitions run")
    h.check(all(r["state"] == "succeeded" for r in runs), "runs: %r" % runs)
    audit = d.json("audit", "--request", str(runs[0]["request"]))
    h.eq(sorted(p["partition"] for p in audit["partitions"]), h.days(*DAYS),
         "audited partitions")
    for p in audit["partitions"]:
        h.eq(sorted(c["name"] for c in p["checks"]),
             ["key_unique", "min_rows", "reconciles_with_raw"],
             "checks of %s (one set per partition)" % p["partition"])
        h.check(p["passed"] and all(c["passed"] for c in p["checks"]),
                "checks of %s: %r" % (p["partition"], p))

    # a check failing for one partition fails its chunk, and only it
    w.sql("DELETE FROM chunk_log; INSERT INTO bad_days VALUES ('%s');"
          " UPDATE fct_daily_sales SET revenue_usd = 0;" % BAD)
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", DAYS[0], "--to", DAYS[1],
                         "--wait")
    h.eq(rc, 1, "a request one of whose chunks fails a check (%r %r)" % (out, err))
    h.check("7 succeeded, 3 failed" in out, "summary: %r" % out)
    h.check(BAD in out and "reconciles_with_raw" in out,
            "the summary names the failed check and partition: %r" % out)
    h.eq(w.chunk_log(), [CHUNKS[0], CHUNKS[2], CHUNKS[3]],
         "executions committed: every chunk but the failed one")
    h.eq(w.zeroed(), ["2026-02-04", "2026-02-05", "2026-02-06"],
         "days left as they were: the failed chunk's, rolled back")
    rq = max(r["request"] for r in d.runs())
    states = {r["partition"]: r["state"] for r in d.runs() if r["request"] == rq}
    h.eq(sorted(k for k, v in states.items() if v == "failed"),
         ["2026-02-04", "2026-02-05", "2026-02-06"], "failed partitions: the chunk's")
    audit = {p["partition"]: p for p in d.json("audit", "--request", str(rq))["partitions"]}
    bad = {c["name"]: c["passed"] for c in audit[BAD]["checks"]}
    h.eq(bad.get("reconciles_with_raw"), False, "the check of %s: %r" % (BAD, audit[BAD]))
    good = {c["name"]: c["passed"] for c in audit["2026-02-04"]["checks"]}
    h.eq(good.get("reconciles_with_raw"), True,
         "the check of 2026-02-04, in the failed chunk: %r" % audit["2026-02-04"])
    w.close()


def test_chunks_sqlite():
    chunks_run(Sqlite())


def test_chunks_postgres():
    chunks_run(Postgres())


def test_chunk_config_refused():
    import subprocess
    d = h.Daemon(jobs=SQLITE_JOB.replace("batch: 3", "batch: 1"),
                 warehouses={"sales": h.sales_seed() + TABLES}, name="chunkbad", start=False)
    line_no = d.config_text.splitlines().index("    batch: 1") + 1
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    line = h.one_line_error(p.returncode, p.stdout, p.stderr, 2, "--check-config with batch: 1")
    h.check(":%d:12:" % line_no in line and "batch must be true, false or a number of"
            " partitions per run of at least 2" in line,
            "the error names the position (line %d): %r" % (line_no, line))


if __name__ == "__main__":
    h.main([test_chunks_sqlite, test_chunk_config_refused, test_chunks_postgres])
