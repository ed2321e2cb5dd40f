#!/usr/bin/env python3
"""The idempotency proof (issue 18) on a PostgreSQL warehouse, against the
throwaway cluster of test_postgres.py (skipped with 77 when no server can
be started, unless BACKFILLD_REQUIRE_POSTGRES=1): an appending job is
refused by --verify with exit 2 and the warehouse unchanged; an
overwriting one passes and runs; `verify JOB PARTITION` alone; a batch job
through its backfill_manifest."""
import json
import os
import re

import harness as h
import test_postgres as tp

SEED = """
DROP TABLE IF EXISTS src, out_t, outb;
CREATE TABLE src (dt date, v integer, note text);
INSERT INTO src SELECT d::date, i, 'n' || i FROM generate_series(1, 30) i,
  unnest(ARRAY['2026-01-01', '2026-01-02']) d;
CREATE TABLE out_t (dt date, v integer, note text);
CREATE TABLE outb (dt date, v integer, note text);
"""

JOBS = """
- name: appender
  warehouse: dw
  partition: day
  table: out_t
  partition_column: dt
  sql: INSERT INTO out_t SELECT dt, v, note FROM src WHERE dt = :partition::date;
- name: overwriter
  warehouse: dw
  partition: day
  table: out_t
  partition_column: dt
  sql: |
    DELETE FROM out_t WHERE dt = :partition::date;
    INSERT INTO out_t SELECT dt, v, note FROM src WHERE dt = :partition::date;
- name: batch_bad
  warehouse: dw
  partition: day
  batch: true
  table: outb
  partition_column: dt
  sql: |
    INSERT INTO outb SELECT s.dt, s.v, s.note FROM src s
    JOIN backfill_manifest m ON m.partition_key::date = s.dt;
- name: batch_good
  warehouse: dw
  partition: day
  batch: true
  table: outb
  partition_column: dt
  verify: true
  sql: |
    DELETE FROM outb WHERE dt IN (SELECT partition_key::date FROM backfill_manifest);
    INSERT INTO outb SELECT s.dt, s.v, s.note FROM src s
    JOIN backfill_manifest m ON m.partition_key::date = s.dt;
"""

RANGE = ("--from", "2026-01-01", "--to", "2026-01-02")


def tables():
    c = tp.cluster()
    return {t: sorted(c.psql("SELECT dt, v, note FROM %s" % t)) for t in ("out_t", "outb")}


def test_verify_on_postgres():
    c = tp.cluster()
    c.fresh_db()
    c.as_etl(SEED)
    d = tp.pg_daemon(JOBS, tp.pg_warehouse("dw"), name="pgverify")
    before = tables()

    rc, out, err = d.ctl("backfill", "appender", *RANGE, "--verify")
    e = h.one_line_error(rc, out, err, 2, "backfill --verify of an appending job")
    h.check("30 -> 60" in e and "appends" in e, "refusal: %r" % e)
    rc, out, err = d.ctl("verify", "appender", "2026-01-01")
    h.one_line_error(rc, out, err, 2, "verify of an appending job")
    # --json: the verdict "idempotent": false, checksums in the one form
    # (16 hex digits, as on SQLite)
    rc, out, err = d.ctl("verify", "appender", "2026-01-01", "--json")
    h.eq(rc, 2, "verify --json of an appending job")
    v = json.loads(out)
    h.eq((v["idempotent"], v["rows_first"], v["rows_second"]), (False, 30, 60),
         "verify --json of an appending job on PostgreSQL")
    for k in ("checksum_first", "checksum_second"):
        h.check(re.fullmatch(r"[0-9a-f]{16}", v[k]), "%s is 16 hex digits: %r" % (k, v[k]))
    h.check(v["checksum_first"] != v["checksum_second"], "the checksums differ: %r" % v)
    rc, out, err = d.ctl("backfill", "batch_bad", *RANGE, "--verify")
    e = h.one_line_error(rc, out, err, 2, "batch appending job")
    h.check("30 -> 60" in e, "batch refusal: %r" % e)
    h.eq(tables(), before, "warehouse after refused proofs")
    h.eq(d.runs(), [], "runs after refused proofs")

    v = d.json("verify", "overwriter", "2026-01-01")
    h.eq((v["idempotent"], v["rows_before"], v["rows_first"], v["rows_second"]),
         (True, 0, 30, 30), "verify --json on PostgreSQL")
    h.check(re.fullmatch(r"[0-9a-f]{16}", v["checksum_first"]) and
            v["checksum_first"] == v["checksum_second"],
            "an idempotent job's checksums, 16 hex digits: %r" % v)
    h.eq(tables(), before, "warehouse after a passing proof")

    out = d.ok("backfill", "overwriter", *RANGE, "--verify", "--wait")
    h.check("idempotent" in out, "verdict:\n%s" % out)
    out = d.ok("backfill", "batch_good", *RANGE, "--wait")
    h.check("idempotent" in out, "verify: true on a batch job:\n%s" % out)
    h.eq([tuple(r) for r in c.psql("SELECT count(*) FROM out_t")], [("60",)],
         "out_t after the verified backfill")
    h.eq([tuple(r) for r in c.psql("SELECT count(*) FROM outb")], [("60",)],
         "outb after the verified batch backfill")
    h.eq(sorted((r["job"], r["state"]) for r in d.runs()),
         [("batch_good", "succeeded")] * 2 + [("overwriter", "succeeded")] * 2,
         "runs after the verified backfills")
    d.stop()


def main():
    if not os.environ.get("BACKFILLD"):
        h.binaries()
    try:
        tp.cluster()
        h.main([test_verify_on_postgres])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
