#!/usr/bin/env python3
"""gen.py - generate the benchmark's sales warehouse (deterministic).

    gen.py OUT.db [--days 365] [--rows-per-day 27000] [--stores 100]
                  [--start 2025-01-01] [--seed 20260101] [--covering-index]

The warehouse of the benchmark (docs/performance.md, "Performance"; tests/bench/README.md):

  raw_sales(sale_id, dt, store_id, amount_usd)   DAYS x ROWS_PER_DAY rows in
      sale_id (= arrival) order, stores uniform over 1..STORES, amounts
      1.00..499.99 USD in cents, about 3 % refunds (negative amounts);
      indexed on dt (without it every per-date query is a full scan);
      --covering-index adds raw_sales(dt, store_id, amount_usd).
  fct_daily_sales(dt, store_id, sales, revenue_usd)  PRIMARY KEY (dt, store_id),
      every day built by the buggy job of the lesson (refunds excluded), so a
      backfill changes every partition it rebuilds.
  mart_weekly_sales(week_start, revenue_usd)  PRIMARY KEY week_start (the
      ISO Monday), summed from that buggy fact.

Determinism: the random numbers come from our own generator, Park-Miller
MINSTD (h' = 48271 h mod 2^31-1, seeded by --seed) stepped inside SQLite
by a recursive CTE (integer arithmetic, products below 2^47), one draw per
row; so the same options give the same rows on any machine, with no numpy
and no Python loop.  Rows are generated in one INSERT ... SELECT, with
journal_mode=OFF and synchronous=OFF while building; the result is switched
back to the default rollback journal (DELETE) before it is published.

The output file is never overwritten: the database is built under a
temporary name next to it and published with link(2), which fails if OUT
appeared meanwhile.  Exit codes: 0 done, 2 bad usage or OUT exists.
"""

import argparse
import datetime
import os
import sqlite3
import sys
import time

PM_MOD = 2147483647      # Park-Miller minimal standard generator (MINSTD):
PM_MUL = 48271           # h' = h * 48271 mod (2^31 - 1); products stay below 2^47


SCHEMA = """
CREATE TABLE raw_sales (
    sale_id    INTEGER PRIMARY KEY,
    dt         TEXT    NOT NULL,
    store_id   INTEGER NOT NULL,
    amount_usd REAL    NOT NULL
);
CREATE TABLE fct_daily_sales (
    dt          TEXT    NOT NULL,
    store_id    INTEGER NOT NULL,
    sales       INTEGER NOT NULL,
    revenue_usd REAL    NOT NULL,
    PRIMARY KEY (dt, store_id)
);
CREATE TABLE mart_weekly_sales (
    week_start  TEXT PRIMARY KEY,   -- the Monday of the ISO week
    revenue_usd REAL
);
"""


def build(path, days, rows, stores, start, seed, covering, verbose=True):
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA cache_size = -262144")   # 256 MiB while building
    con.executescript(SCHEMA)
    t0 = time.monotonic()
    n = days * rows
    h0 = seed % (PM_MOD - 1) + 1          # the generator's state: 1 .. 2^31-2
    # One draw per row, x = h - 1 in 0 .. 2^31-3, split into three
    # independent digits: store (x mod stores), refund ((x / 100) mod 100 < 3:
    # 3 %), amount in cents ((x / 10^4) mod 49,900 + 100: 1.00 .. 499.99 USD).
    sql = ("WITH RECURSIVE s(k, h) AS (SELECT 1, %d UNION ALL "
           "SELECT k + 1, (h * %d) %% %d FROM s WHERE k < %d)\n"
           "INSERT INTO raw_sales (sale_id, dt, store_id, amount_usd)\n"
           "SELECT k, date('%s', '+' || ((k - 1) / %d) || ' days'),\n"
           "       1 + (h - 1) %% %d,\n"
           "       CASE WHEN ((h - 1) / 100) %% 100 < 3 THEN -1 ELSE 1 END\n"
           "       * ((((h - 1) / 10000) %% 49900) + 100) / 100.0\n"
           "FROM s") % (h0, PM_MUL, PM_MOD, n, start, rows, stores)
    con.execute("BEGIN")
    con.execute(sql)
    con.execute("COMMIT")
    if verbose:
        print("gen: raw_sales %d rows in %.1f s" % (days * rows, time.monotonic() - t0),
              file=sys.stderr)
    t1 = time.monotonic()
    con.execute("CREATE INDEX raw_sales_dt ON raw_sales (dt)")
    if covering:
        con.execute("CREATE INDEX raw_sales_dt_store_amount "
                    "ON raw_sales (dt, store_id, amount_usd)")
    # The buggy job of the lesson: refunds excluded; every day of the year.
    con.execute("BEGIN")
    con.execute("INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd) "
                "SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales "
                "WHERE amount_usd > 0 GROUP BY dt, store_id ORDER BY dt, store_id")
    con.execute("INSERT INTO mart_weekly_sales (week_start, revenue_usd) "
                "SELECT date(dt, 'weekday 0', '-6 days') AS w, SUM(revenue_usd) "
                "FROM fct_daily_sales GROUP BY w ORDER BY w")
    con.execute("COMMIT")
    con.execute("ANALYZE")
    if verbose:
        print("gen: indexes, fact, mart in %.1f s" % (time.monotonic() - t1), file=sys.stderr)
    con.execute("PRAGMA journal_mode = DELETE")
    con.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate the benchmark sales warehouse.")
    ap.add_argument("out", help="the SQLite file to create (never overwritten)")
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--rows-per-day", type=int, default=27000)
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--start", default="2025-01-01", help="first day (YYYY-MM-DD)")
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--covering-index", action="store_true",
                    help="also index raw_sales(dt, store_id, amount_usd)")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    try:
        datetime.date.fromisoformat(a.start)
    except ValueError:
        print("gen.py: --start %r is not YYYY-MM-DD" % a.start, file=sys.stderr)
        return 2
    if a.days < 1 or a.rows_per_day < 1 or a.stores < 1 or a.days * a.rows_per_day >= 2 ** 31:
        print("gen.py: --days, --rows-per-day and --stores must be positive "
              "(and days x rows below 2^31)", file=sys.stderr)
        return 2
    if os.path.lexists(a.out):
        print("gen.py: %s exists; refusing to overwrite it (remove it first)" % a.out,
              file=sys.stderr)
        return 2
    tmp = "%s.tmp-%d" % (a.out, os.getpid())
    try:
        build(tmp, a.days, a.rows_per_day, a.stores, a.start, a.seed,
              a.covering_index, verbose=not a.quiet)
        try:
            os.link(tmp, a.out)
        except FileExistsError:
            print("gen.py: %s appeared while generating; refusing to overwrite it"
                  % a.out, file=sys.stderr)
            return 2
    finally:
        for p in (tmp, tmp + "-journal"):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
