#!/usr/bin/env python3
"""The run's transaction belongs to the daemon (issue 24, item 1).

Each statement that ends, splits or reshapes a transaction, in job SQL and
in a check, on a SQLite warehouse and on a PostgreSQL one (the throwaway
cluster of test_postgres.py; exit 77 without PostgreSQL, unless
BACKFILLD_REQUIRE_POSTGRES=1, after the SQLite tests ran):

  - `backfilld --check-config` refuses it, exit 2, one line naming
    FILE:LINE:COLUMN of the statement and what to do instead;
  - `backfillctl reload` (and SIGHUP) refuses it and the old configuration
    keeps running: a later backfill writes what the old SQL writes;
  - at run time, handed to the drivers directly past the static check
    (tests/unit/test_wh_txn.c, run here on both drivers), it fails and the
    warehouse is unchanged; and what hides from the static check on
    PostgreSQL (a procedure or a function that commits, EXECUTE 'COMMIT'
    in a DO block) fails the run through the daemon and leaves the
    warehouse unchanged;
  - a SAVEPOINT nested in job SQL stays allowed and works (the job the
    daemon keeps across the refused reloads has one).
"""
import os
import re
import signal
import subprocess

import harness as h

# (statement, how the message spells it)
LITE = [
    ("BEGIN", "BEGIN"),
    ("BEGIN IMMEDIATE TRANSACTION", "BEGIN"),
    ("START TRANSACTION", "START TRANSACTION"),
    ("COMMIT", "COMMIT"),
    ("END TRANSACTION", "END"),
    ("ROLLBACK", "ROLLBACK"),
    ("ABORT", "ABORT"),
    ("COMMIT AND CHAIN", "COMMIT AND CHAIN"),
    ("PREPARE TRANSACTION 'x'", "PREPARE TRANSACTION"),
    ("COMMIT PREPARED 'x'", "COMMIT PREPARED"),
    ("ROLLBACK PREPARED 'x'", "ROLLBACK PREPARED"),
    ("ATTACH DATABASE 'other.db' AS other", "ATTACH"),
    ("DETACH other", "DETACH"),
    ("VACUUM", "VACUUM"),
] + [("PRAGMA %s = %s" % (p, v), "PRAGMA " + p) for p, v in (
    ("journal_mode", "WAL"), ("locking_mode", "EXCLUSIVE"), ("synchronous", "OFF"),
    ("wal_checkpoint", "TRUNCATE"), ("wal_autocheckpoint", "0"), ("busy_timeout", "1"),
    ("query_only", "1"), ("read_uncommitted", "1"), ("writable_schema", "1"),
    ("schema_version", "9"), ("auto_vacuum", "FULL"), ("page_size", "8192"),
    ("temp_store", "MEMORY"), ("temp_store_directory", "'/tmp'"))]

PG = [
    ("BEGIN", "BEGIN"),
    ("START TRANSACTION", "START TRANSACTION"),
    ("COMMIT", "COMMIT"),
    ("END", "END"),
    ("ROLLBACK", "ROLLBACK"),
    ("ABORT", "ABORT"),
    ("COMMIT AND CHAIN", "COMMIT AND CHAIN"),
    ("ROLLBACK AND CHAIN", "ROLLBACK AND CHAIN"),
    ("PREPARE TRANSACTION 'x'", "PREPARE TRANSACTION"),
    ("COMMIT PREPARED 'x'", "COMMIT PREPARED"),
    ("ROLLBACK PREPARED 'x'", "ROLLBACK PREPARED"),
    ("SET TRANSACTION READ ONLY", "SET TRANSACTION"),
    ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SET SESSION CHARACTERISTICS"),
    ("DO $$BEGIN INSERT INTO t VALUES ('do', 'c'); COMMIT; END$$", "COMMIT in a DO block"),
]

ADVICE = ("backfilld begins and commits each partition's transaction itself; "
          "remove it (to nest one, use SAVEPOINT name ... RELEASE name)")

# The job the daemon keeps: a SAVEPOINT nested in its SQL, rolled back to
# and released, and a check that sees one row.
GOOD_SQL = """SAVEPOINT s;
INSERT INTO t VALUES (:partition, 'dropped');
ROLLBACK TO SAVEPOINT s;
INSERT INTO t VALUES (:partition, 'good');
RELEASE SAVEPOINT s;"""
GOOD_CHECK = "SELECT count(*) = 1 FROM t WHERE dt = :partition"


def job(sql, check=None):
    """One job `j` on warehouse w; sql and the check's sql as literal blocks."""
    text = ("- name: j\n  warehouse: w\n  partition: day\n  retries: 0\n"
            "  sql: |\n%s" % "".join("    %s\n" % l for l in sql.split("\n")))
    if check is not None:
        text += ("  checks:\n    - name: c\n      sql: |\n%s"
                 % "".join("        %s\n" % l for l in check.split("\n")))
    return text


def placed(stmt, place):
    """The job of `place` ("job": its SQL's second statement, "check": a
    check) holding stmt."""
    if place == "job":
        return job("INSERT INTO t VALUES (:partition, 'c');\n%s;" % stmt)
    return job("INSERT INTO t VALUES (:partition, 'c');", check=stmt)


def position(text, needle):
    """1-based line and column of the first needle in text."""
    for n, line in enumerate(text.split("\n"), 1):
        c = line.find(needle)
        if c >= 0:
            return n, c + 1
    raise AssertionError("%r not in the config" % needle)


def expected(conf, text, stmt, what, place):
    line, col = position(text, stmt)
    return "%s:%d:%d: job \"j\"%s statement %d controls the run's transaction (%s): %s" % (
        os.path.basename(conf), line, col, " check \"c\"" if place == "check" else "",
        2 if place == "job" else 1, what, ADVICE)


def check_config(d):
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def refused_everywhere(d, stmts, render):
    """The good job (its SAVEPOINT) passes --check-config and runs; then
    each statement, in job SQL and in a check: --check-config and reload
    refuse it with its position; SIGHUP once too; the daemon keeps its
    configuration: j still writes 'good'."""
    rc, out, err = check_config(d)
    h.eq(rc, 0, "--check-config of a job with a nested SAVEPOINT (stderr %r)" % err)
    d.backfill("j", "2026-02-01", "2026-02-01")
    for stmt, what in stmts:
        for place in ("job", "check"):
            text = render(placed(stmt, place))
            d.write_config(text)
            want = expected(d.conf, d.config_text, stmt, what, place)
            rc, out, err = check_config(d)
            e = h.one_line_error(rc, out, err, 2, "--check-config, %s in the %s" % (stmt, place))
            h.check(e.endswith(want), "--check-config said %r, want ...%r" % (e, want))
            rc, out, err = d.ctl("reload")
            e = h.one_line_error(rc, out, err, 2, "reload, %s in the %s" % (stmt, place))
            h.check(e.endswith(want), "reload said %r, want ...%r" % (e, want))
    d.signal(signal.SIGHUP)
    # the SIGHUP's refusal is logged; the daemon answers with the old file
    rc, out, err = d.ctl("reload")
    h.eq(rc, 2, "reload after SIGHUP of the last refused file")
    d.assert_alive("after SIGHUP with a refused file")
    d.backfill("j", "2026-02-02", "2026-02-02")


# ------------------------------------------------------------------ SQLite

SEED = "CREATE TABLE t (dt TEXT, v TEXT);"


def lite_daemon():
    return h.Daemon(jobs=job(GOOD_SQL, check=GOOD_CHECK), warehouses={"w": SEED},
                    name="txnlite")


def lite_render(d):
    return lambda jobs: d.render(jobs, {})


def test_sqlite_refused():
    d = lite_daemon()
    refused_everywhere(d, LITE, lite_render(d))
    h.eq(sorted(d.query("SELECT dt, v FROM t", wh="w")),
         [("2026-02-01", "good"), ("2026-02-02", "good")],
         "the warehouse after the refused reloads: the old job's rows only")
    h.check(not os.path.exists(os.path.join(d.dir, "other.db")), "ATTACH created other.db")
    d.stop()


def unit_cases(case, env_extra):
    """Run one Check case of tests/unit/test_wh_txn.c: {test: passes}."""
    binary = os.environ.get("WH_TXN_TEST") or os.path.join(
        h.SOURCE_ROOT, "build", "tests", "test_wh_txn")
    h.check(os.access(binary, os.X_OK), "no driver test binary at %s" % binary)
    env = dict(os.environ)
    for k in ("PGPASSWORD", "PGPASSFILE", "PGOPTIONS", "BACKFILLD_TEST_STATE_PG",
              "BACKFILLD_TEST_STATE_PG_PASSWORD_FILE"):
        env.pop(k, None)
    env.update(env_extra)
    env["CK_VERBOSITY"] = "verbose"
    env["CK_RUN_CASE"] = case
    r = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    got = {}
    for m in re.finditer(r"^[^:\n]+:\d+:([PFE]):%s:([^:\n]+):(\d+)" % case, out, re.M):
        got.setdefault(m.group(2), []).append(m.group(1))
    bad = [l for l in out.splitlines() if re.search(r":[FE]:%s:" % case, l)]
    h.check(r.returncode == 0 and not bad, "test_wh_txn %s: rc %d:\n%s" % (
        case, r.returncode, "\n".join(bad) or out[-3000:]))
    return got


def test_sqlite_driver_runtime():
    got = unit_cases("sqlite", {})
    # every statement of the list, in job SQL and as a check
    h.check(len(got.get("test_job_stmt", [])) >= len(LITE) and
            len(got.get("test_check_stmt", [])) >= len(LITE) and "test_savepoint" in got,
            "test_wh_txn sqlite ran too little: %r" % {k: len(v) for k, v in got.items()})


# ------------------------------------------------------------------ PostgreSQL

PG_SEED = """
DROP TABLE IF EXISTS t;
CREATE TABLE t (dt text, v text);
CREATE OR REPLACE PROCEDURE commits(p text) LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO t VALUES (p, 'proc'); COMMIT; END$$;
CREATE OR REPLACE FUNCTION commits_fn(p text) RETURNS int LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO t VALUES (p, 'fn'); COMMIT; RETURN 1; END$$;
"""


def pg_daemon(jobs, name):
    import test_postgres as tp
    c = tp.cluster()
    c.fresh_db()
    c.as_etl(PG_SEED)
    d = tp.pg_daemon(jobs, tp.pg_warehouse("w"), name=name)
    return c, d


def pg_rows(c):
    return sorted(c.psql("SELECT dt, v FROM t"))


def pg_render(d):
    return lambda jobs: d.config_text.split("jobs:\n")[0] + "jobs:\n" + "".join(
        "  %s\n" % l if l else "\n" for l in jobs.rstrip("\n").split("\n"))


def test_pg_refused():
    c, d = pg_daemon(job(GOOD_SQL, check=GOOD_CHECK), "txnpg")
    refused_everywhere(d, PG, pg_render(d))
    h.eq(pg_rows(c), [("2026-02-01", "good"), ("2026-02-02", "good")],
         "the warehouse after the refused reloads: the old job's rows only")
    d.stop()


# What the static check cannot see: PostgreSQL itself refuses the COMMIT
# inside the run's transaction block, the run fails, nothing is committed.
HIDDEN = [
    ("CALL commits(:partition)", "invalid transaction termination"),
    ("SELECT commits_fn(:partition)", "invalid transaction termination"),
    ("DO $$BEGIN EXECUTE 'COM' || 'MIT'; END$$", "statement 2 failed"),
]


def pg_hidden_commit():
    """Through the daemon: --check-config accepts HIDDEN, each run fails
    with PostgreSQL's refusal, the warehouse stays empty."""
    jobs = "".join(job("INSERT INTO t VALUES (:partition, 'c');\n%s;" % sql)
                   .replace("name: j", "name: j%d" % i) for i, (sql, _) in enumerate(HIDDEN))
    c, d = pg_daemon(jobs, "txnpghidden")
    rc, out, err = check_config(d)
    h.eq(rc, 0, "--check-config of SQL that commits out of sight (stderr %r)" % err)
    for i, (sql, msg) in enumerate(HIDDEN):
        rc, out, err = d.ctl("backfill", "j%d" % i, "--from", "2026-02-01",
                             "--to", "2026-02-01", "--wait")
        h.eq(rc, 1, "backfill of %s (stdout %r stderr %r)" % (sql, out, err))
        runs = h.by_job(d.runs(), "j%d" % i)
        h.eq([r["state"] for r in runs], ["failed"], "runs of %s" % sql)
        h.check(msg in (runs[0]["error"] or ""), "%s failed with %r, want %r" % (
            sql, runs[0]["error"], msg))
    h.eq(pg_rows(c), [], "the warehouse after the runs that tried to commit")
    d.stop()


def test_pg_runtime():
    import test_postgres as tp
    pg_hidden_commit()
    c = tp.cluster()
    c.psql("DROP DATABASE IF EXISTS whtxn WITH (FORCE)", db="postgres")
    c.psql("CREATE DATABASE whtxn OWNER etl", db="postgres")
    got = unit_cases("postgres", {
        "BACKFILLD_TEST_STATE_PG": c.conninfo.replace("dbname=etl", "dbname=whtxn"),
        "BACKFILLD_TEST_STATE_PG_PASSWORD_FILE": c.pwfile,
        "BACKFILLD_TEST_MODULE_DIR": os.path.dirname(os.environ.get("BACKFILLD", "")) or
        os.path.join(h.SOURCE_ROOT, "build", "daemon"),
    })
    h.check(len(got.get("test_job_stmt", [])) >= len(PG) + len(HIDDEN) and
            len(got.get("test_check_stmt", [])) >= len(PG) and "test_savepoint" in got,
            "test_wh_txn postgres ran too little: %r" % {k: len(v) for k, v in got.items()})
    h.eq(c.psql("SELECT count(*) FROM pg_prepared_xacts", db="postgres"), [("0",)],
         "prepared transactions left on the server")


if __name__ == "__main__":
    h.main([test_sqlite_refused, test_sqlite_driver_runtime, test_pg_refused,
            test_pg_runtime])
