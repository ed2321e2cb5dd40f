#!/usr/bin/env python3
"""The state store on PostgreSQL (daemon/store_pg.c) against the
throwaway cluster of test_postgres.py (skipped with 77 when no server can
be started, unless BACKFILLD_REQUIRE_POSTGRES=1).

It runs the store's unit tests (tests/unit/test_store.c: the seam's
behaviour cases; tests/unit/test_store_ops.c: every operation's results,
and PostgreSQL's migrations, nodes opening together, fencing by the
planner lease, failed statements, reconnection, password_file) with
BACKFILLD_TEST_STATE_PG set to a database of the cluster: with the
password in a password_file, then (test_store_ops's PostgreSQL cases)
with libpq's own PGPASSFILE and no password_file.  Every case must pass,
and each case of the "sqlite" case (the behaviour every implementation
shares) must also have run on PostgreSQL.
"""
import os
import re
import subprocess

import harness as h
import test_postgres as tp

# cases only PostgreSQL runs (test_store_ops.c)
PG_ONLY = {"pg_migrates_once", "pg_fewer_writes", "pg_concurrent_open",
           "pg_fence", "pg_failed_statement", "pg_reconnects", "pg_runs_kept"}


def suite_binaries():
    env = os.environ.get("STORE_TESTS")
    if env:
        bins = env.split(":")
    else:
        bins = [os.path.join(h.SOURCE_ROOT, "build", "tests", b)
                for b in ("test_store", "test_store_ops")]
    for b in bins:
        h.check(os.access(b, os.X_OK), "no store test binary at %s" % b)
    return bins


def state_db():
    """A database `state` owned by the store's role etl."""
    c = tp.cluster()
    c.psql("DROP DATABASE IF EXISTS state WITH (FORCE)", db="postgres")
    c.psql("CREATE DATABASE state OWNER etl", db="postgres")
    return c.conninfo.replace("dbname=etl", "dbname=state")


def run_suite(binary, env_extra, case):
    """Run one Check case of a suite, verbosely: {(case, test): result}."""
    env = dict(os.environ)
    for k in ("PGPASSWORD", "PGPASSFILE", "PGOPTIONS",
              "BACKFILLD_TEST_STATE_PG_PASSWORD_FILE"):
        env.pop(k, None)
    env.update(env_extra)
    env["CK_VERBOSITY"] = "verbose"
    env["CK_RUN_CASE"] = case
    env.setdefault("CK_DEFAULT_TIMEOUT", "120")
    r = subprocess.run([binary], env=env, capture_output=True, text=True,
                       timeout=600)
    out = r.stdout + r.stderr
    got = {}
    for m in re.finditer(r"^[^:\n]+:\d+:([PFE]):([^:\n]+):([^:\n]+):", out, re.M):
        got[(m.group(2), m.group(3))] = m.group(1)
    bad = sorted("%s/%s %s" % (c, t, res) for (c, t), res in got.items() if res != "P")
    h.check(r.returncode == 0 and not bad and got,
            "%s: rc %d, not passed: %s; output:\n%s" % (
                os.path.basename(binary), r.returncode, bad, out[-4000:]))
    return got


def run_all(env_extra, want_pg_only):
    for b in suite_binaries():
        # the "sqlite" case names the cases every implementation runs
        got = run_suite(b, env_extra, "sqlite")
        got.update(run_suite(b, env_extra, "postgres"))
        sqlite = {t for (c, t) in got if c == "sqlite"}
        pg = {t for (c, t) in got if c == "postgres"}
        h.check(sqlite, "%s: no sqlite case ran" % b)
        h.eq(sorted(sqlite - pg), [], "%s: cases of SQLite that PostgreSQL did not run" % b)
        if os.path.basename(b) == "test_store_ops":
            h.eq(sorted(pg - sqlite), sorted(want_pg_only),
                 "%s: PostgreSQL's own cases" % b)


def test_suite_with_password_file():
    c = tp.cluster()
    conninfo = state_db()
    run_all({"BACKFILLD_TEST_STATE_PG": conninfo,
             "BACKFILLD_TEST_STATE_PG_PASSWORD_FILE": c.pwfile},
            PG_ONLY | {"pg_bad_password"})
    # every case dropped its schema: nothing left behind
    left = c.psql("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bfd_test_%'",
                  db="state")
    h.eq(left, [("0",)], "schemas left by the suite")


def test_suite_with_pgpass():
    c = tp.cluster()
    conninfo = state_db()
    pgpass = os.path.join(c.dir, "pgpass")
    with open(pgpass, "w") as f:
        f.write("*:*:*:etl:%s\n" % tp.PASSWORD)
    os.chmod(pgpass, 0o600)
    # (the login is what differs: test_store_ops's PostgreSQL cases)
    got = run_suite(suite_binaries()[-1], {"BACKFILLD_TEST_STATE_PG": conninfo,
                                           "PGPASSFILE": pgpass}, "postgres")
    h.check(PG_ONLY <= {t for (c, t) in got}, "PostgreSQL's own cases ran: %s" % sorted(got))
    h.check("pg_bad_password" not in {t for (c, t) in got},
            "pg_bad_password ran without a password_file")


def main():
    if not os.environ.get("BACKFILLD"):
        h.binaries()
    try:
        tp.cluster()
        h.main([test_suite_with_password_file, test_suite_with_pgpass])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
