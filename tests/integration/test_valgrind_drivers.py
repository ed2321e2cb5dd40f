#!/usr/bin/env python3
"""valgrind shows no leak over start, reload and stop on the warehouse
drivers and the PostgreSQL state store (test_valgrind.py does the
embedded SQLite warehouse and state store).

Each test runs the real daemon under valgrind's memcheck as
test_valgrind.py does (--leak-check=full, --errors-for-leak-kinds=definite,
--error-exitcode=99): the daemon must exit 0 after SIGTERM, the valgrind
log must show no "definitely lost" bytes and an ERROR SUMMARY of 0.

  - test_postgres_warehouse: the lesson's fact and weekly mart
    (config/postgres/example-postgres.yaml) on a PostgreSQL warehouse
    (backfilld-pg.so, libpq) in test_postgres.py's throwaway cluster: a
    backfill of three days whose runs wait at the server on a lock the
    test holds, a SIGHUP to a changed configuration (a job added, the
    warehouse's max_connections changed) while they wait, a reload
    through backfillctl, the lock released, the fact and the week
    checked against raw_sales, SIGTERM;
  - test_clickhouse_warehouse: the lesson's jobs on a ClickHouse
    warehouse (backfilld-ch.so, libcurl) in a throwaway clickhouse-server
    (tools/chserver.py): a run per partition (write-audit-publish: stage,
    marks, releases) held in its stage fill (its SELECT reads a FIFO of
    the server's user_files until the test writes to it) across a SIGHUP
    that adds a `batch: true` job and a reload through backfillctl; the
    releases awaited (no stage row or mark left), then a batch run (its
    fill split in 3 statements at once: its concurrency), then
    SIGTERM at once (its release done at shutdown); so the stage
    knowledge the process keeps (daemon/server/exec/exec_wap_known.c)
    and the queued releases are both in use before the stop;
  - test_postgres_state_store: test_valgrind.py's sequence (SQLite
    warehouse; the fact, the weekly mart and a command job held across a
    SIGHUP that adds a job, a refused reload, a reload through
    backfillctl) with the daemon on the PostgreSQL state store (`state:
    postgres:` in the cluster, as `meson test --setup statepg` runs
    it), the runs read back from the store.

One check more than test_valgrind.py's: what is still reachable at exit
was allocated by the dynamic loader alone (its malloc, rtld-malloc.h: the
modules are loaded on demand and kept to the exit, and their libraries'
thread-local storage), never by backfilld's code, libpq, libcurl or
OpenSSL (all of it freed at the stop: a table kept in a static pointer,
such as exec_wap_known.c's before 25afeb8, is no "definitely lost" block
but shows here).  No suppression is needed (valgrind 3.19,
Debian 12's libpq 15, libcurl 7.88, OpenSSL 3.0).

Skips (77) like test_valgrind.py without valgrind or on a sanitizer build
(CI's ASan run); a test whose server cannot be started here is skipped
alone (exit 77 when all are), unless BACKFILLD_REQUIRE_POSTGRES=1 /
BACKFILLD_REQUIRE_CLICKHOUSE=1."""
import os
import re
import signal
import stat
import time

import harness as h
import test_clickhouse as tc
import test_postgres as tp
import test_valgrind as tv

SLOW = tv.SLOW           # guard for READY=1 and each wait under valgrind
DAYS = ("2026-02-09", "2026-02-11")   # in the deploy window: the days change
WEEK = "2026-02-09"


# ---------------------------------------------------------------- valgrind

def start_under_valgrind(d):
    """Start d under memcheck; returns the valgrind log's path."""
    vglog = os.path.join(d.dir, "valgrind.log")
    d.start(wrapper=["valgrind", "--leak-check=full", "--show-leak-kinds=definite,reachable",
                     "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                     "--track-fds=no", "--trace-children=no", "--num-callers=40",
                     "--log-file=" + vglog],
            ready_timeout=SLOW)
    return vglog


def stop_and_check(d, vglog):
    """SIGTERM; the exit status and the valgrind log as test_valgrind.py
    checks them."""
    rc = d.stop(expect_rc=None)
    with open(vglog, errors="replace") as f:
        log = f.read()
    tail = "\n".join(log.splitlines()[-80:])
    h.check(rc != 99, "valgrind reported errors (exit 99):\n%s" % tail)
    h.eq(rc, 0, "backfilld exit status under valgrind after SIGTERM")
    lost = re.findall(r"definitely lost: ([\d,]+) bytes", log)
    h.check(all(n.replace(",", "") == "0" for n in lost),
            "valgrind: definitely lost %r bytes:\n%s" % (lost, tail))
    h.check(not re.search(r"are definitely lost in loss record", log),
            "valgrind reports definitely lost blocks:\n%s" % tail)
    m = re.search(r"ERROR SUMMARY: (\d+) errors", log)
    h.check(m is not None, "no ERROR SUMMARY in the valgrind log:\n%s" % tail)
    h.eq(m.group(1), "0", "valgrind ERROR SUMMARY errors")
    # ld.so's own allocations go through rtld-malloc.h: the modules'
    # link maps (dlopen) and thread-local storage
    ours = [r for r in reachable_records(log) if not any("rtld-malloc.h" in f for f in r)]
    h.check(not ours, "%d loss records still reachable at exit that the dynamic loader did"
            " not allocate:\n%s" % (len(ours), "\n".join(
                "  %s\n    %s" % (r[0], "\n    ".join(r[1:12])) for r in ours)))
    print("  valgrind: %s" % "; ".join(
        l.split("== ", 1)[-1].strip() for l in log.splitlines()
        if "in use at exit" in l or "definitely lost:" in l or "ERROR SUMMARY" in l
        or "no leaks are possible" in l))
    print("  valgrind: %d loss records still reachable, all the dynamic loader's"
          % len(reachable_records(log)))


def reachable_records(log):
    """The still reachable loss records of a valgrind log: each its head
    line and its stack's frames."""
    recs, cur = [], None
    for line in log.splitlines():
        body = line.split("== ", 1)[1] if line.startswith("==") and "== " in line else line
        if "are still reachable in loss record" in body:
            cur = [body.strip()]
            recs.append(cur)
        elif cur is not None and body.strip().startswith(("at 0x", "by 0x")):
            cur.append(body.strip())
        else:
            cur = None
    return recs


def with_jobs(text, jobs):
    """A configuration text (jobs: last) with job items appended."""
    return text.rstrip("\n") + "\n" + "\n".join(
        "  " + l for l in jobs.strip("\n").split("\n")) + "\n"


def changed(text, old, new, what):
    h.check(old in text, "%s: the configuration holds no %r" % (what, old))
    return text.replace(old, new, 1)


def reload_by_sighup(d, text, what):
    d.write_config(text)
    d.signal(signal.SIGHUP)
    tv.wait_reload(d, what)


def wait_until(cond, what):
    """Poll cond (a look at a server: no event to await) within SLOW."""
    deadline = time.monotonic() + SLOW
    while not cond():
        h.check(time.monotonic() < deadline, "%s: not within %.0f s (guard)" % (what, SLOW))
        time.sleep(0.05)


# ---------------------------------------------------------------- PostgreSQL warehouse

def pg_lesson_jobs():
    """The fact and the weekly mart of config/postgres/example-postgres.yaml."""
    with open(tp.PG_EXAMPLE) as f:
        text = f.read()
    jobs = text[text.index("jobs:\n") + len("jobs:\n"):]
    cut = "  # The monthly rollup"
    h.check(cut in jobs, "example-postgres.yaml no longer holds %r" % cut)
    return jobs[:jobs.index(cut)]


PG_EXTRA = """
- name: extra
  warehouse: sales
  partition: day
  sql: |
    DELETE FROM extra_days WHERE dt = :partition;
    INSERT INTO extra_days (dt) VALUES (:partition);
"""


def pg_waiting(c):
    """The daemon's sessions on the warehouse waiting for a lock."""
    return int(c.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = 'etl'"
                      " AND application_name = 'backfilld' AND wait_event_type = 'Lock'")[0][0])


def test_postgres_warehouse():
    c = tp.cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE extra_days (dt date PRIMARY KEY)")
    d = tp.pg_daemon(pg_lesson_jobs(), tp.pg_warehouse(max_connections=3),
                     settings={"max_concurrency": 4, "shutdown_grace": "60s"},
                     name="vgpg", start=False)
    vglog = start_under_valgrind(d)

    # The fact's runs wait at the server for raw_sales (the test's lock).
    release = c.lock("raw_sales")
    try:
        req = d.enqueue("backfill", "fct_daily_sales", "--from", DAYS[0], "--to", DAYS[1])
        wait_until(lambda: pg_waiting(c) >= 1, "a run of the fact waiting for raw_sales")

        # SIGHUP to a changed configuration (a job added, the warehouse
        # changed) while they wait.
        text = changed(with_jobs(d.config_text, PG_EXTRA), "max_connections: 3",
                       "max_connections: 2", "the warehouse")
        reload_by_sighup(d, text, "SIGHUP with a job added and the warehouse changed")
        h.check("extra" in d.status(), "the reload did not add job extra: %r"
                % list(d.status()))
        h.check(pg_waiting(c) >= 1, "no run of the fact in flight after the reload")

        # A reload through backfillctl: the mart changed.
        d.write_config(changed(d.config_text, "concurrency: 2", "concurrency: 1", "the mart"))
        rep = d.json("reload", timeout=SLOW)
        h.eq([(j["name"], j["keys"]) for j in rep["changed"]],
             [("mart_weekly_sales", ["concurrency"])], "the reload's changed jobs")
    finally:
        release()
    resp = d.wait_request(req, timeout=SLOW)
    h.eq(resp.get("status"), "0", "the backfill under valgrind: %r" % (resp,))
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in d.runs()),
         sorted([("fct_daily_sales", x, "succeeded") for x in h.days(*DAYS)] +
                [("mart_weekly_sales", WEEK, "succeeded")]), "the backfill's runs")
    bad = c.psql("SELECT f.dt, f.revenue_usd, r.s FROM fct_daily_sales f FULL JOIN"
                 " (SELECT dt, store_id, SUM(amount_usd) s FROM raw_sales GROUP BY 1, 2) r"
                 " USING (dt, store_id) WHERE f.dt BETWEEN '%s' AND '%s'"
                 " AND f.revenue_usd IS DISTINCT FROM r.s" % DAYS)
    h.eq(bad, [], "fact rows of %s..%s that disagree with raw_sales" % DAYS)
    week = c.psql("SELECT w.revenue_usd, (SELECT SUM(revenue_usd) FROM fct_daily_sales"
                  " WHERE dt >= w.week_start AND dt < w.week_start + 7)"
                  " FROM mart_weekly_sales w WHERE w.week_start = '%s'" % WEEK)
    h.eq(len(week), 1, "mart_weekly_sales rows of %s" % WEEK)
    h.eq(tp.cents(week[0][0]), tp.cents(week[0][1]), "week %s against its days" % WEEK)

    d.ok("backfill", "extra", "--from", "2026-02-01", "--to", "2026-02-02", "--wait",
         timeout=SLOW)
    h.eq(c.psql("SELECT dt FROM extra_days ORDER BY dt"), [("2026-02-01",), ("2026-02-02",)],
         "extra_days after the added job's backfill")
    stop_and_check(d, vglog)


# ---------------------------------------------------------------- ClickHouse warehouse

# The batch: true job a SIGHUP adds (its own table, the fact's shape).
CH_BATCH = """
- name: fct_batch
  warehouse: sales
  partition: day
  batch: true
  concurrency: 3
  table: fct_daily_batch
  partition_column: dt
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY dt, store_id
"""

FACT_FROM = "FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id"


def ch_jobs(hold):
    """config/clickhouse/example-clickhouse.yaml's jobs, the fact's SELECT
    also reading the server's user_files/HOLD (a FIFO while the test holds
    the run in its stage fill, then a file of one row)."""
    return changed(tc.example_jobs(), FACT_FROM,
                   "FROM raw_sales WHERE dt = :partition AND (SELECT count() FROM"
                   " file('%s', 'TSV', 'x String')) >= 0 GROUP BY dt, store_id" % hold,
                   "the ClickHouse fact")


def ch_days(db, table, days):
    return tc.SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM %s WHERE dt BETWEEN"
                       " '%s' AND '%s' ORDER BY dt, store_id" % ((table,) + days), db)


def ch_raw(db, days):
    return tc.SRV.rows("SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales"
                       " WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt, store_id"
                       " ORDER BY dt, store_id" % days, db)


def test_clickhouse_warehouse():
    db = tc.fresh_db()
    tc.SRV.q("CREATE TABLE fct_daily_batch AS fct_daily_sales", db)
    hold = "hold_" + db
    fifo = os.path.join(tc.SRV.dir, "user_files", hold)
    os.mkfifo(fifo)
    os.chmod(fifo, 0o666)   # the server may run as `clickhouse`
    d = h.Daemon(config=tc.ch_config(db, ch_jobs(hold), "shutdown_grace: 60s"),
                 name="vgch", start=False)
    vglog = start_under_valgrind(d)

    req = d.enqueue("backfill", "fct_daily_sales", "--from", DAYS[0], "--to", DAYS[1])
    fd = tc.open_fifo_to_write(fifo, timeout=SLOW)   # the fill reads it: in flight
    try:
        h.check(fd is not None, "no stage fill of the fact opened %s within %.0f s\n%s"
                % (fifo, SLOW, d.log_tail()))
        reload_by_sighup(d, with_jobs(d.config_text, CH_BATCH),
                         "SIGHUP with a batch: true job added")
        h.check("fct_batch" in d.status(), "the reload did not add fct_batch: %r"
                % list(d.status()))
        h.check(d.status("fct_daily_sales")["fct_daily_sales"]["running"] >= 1,
                "no run of the fact in flight after the reload")
        d.write_config(changed(d.config_text, "    batch: true\n",
                               "    batch: true\n    retries: 1\n", "fct_batch"))
        rep = d.json("reload", timeout=SLOW)
        h.eq([(j["name"], j["keys"]) for j in rep["changed"]], [("fct_batch", ["retries"])],
             "the reload's changed jobs")
    finally:
        # later fills read a file of one row; the held one reads the FIFO
        tmp = fifo + ".file"
        with open(tmp, "w") as f:
            f.write("1\n")
        os.chmod(tmp, 0o644)
        os.rename(tmp, fifo)
        if fd is not None:
            os.write(fd, b"1\n")
            os.close(fd)
    resp = d.wait_request(req, timeout=SLOW)
    h.eq(resp.get("status"), "0", "the backfill under valgrind: %r" % (resp,))
    h.check(stat.S_ISREG(os.stat(fifo).st_mode), "the hold is no file")
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in d.runs()),
         sorted([("fct_daily_sales", x, "succeeded") for x in h.days(*DAYS)] +
                [("mart_weekly_sales", WEEK, "succeeded")]), "the backfill's runs")
    h.eq(ch_days(db, "fct_daily_sales", DAYS), ch_raw(db, DAYS), "the fact's days vs raw")
    want = tc.SRV.q("SELECT sum(revenue_cents) FROM fct_daily_sales WHERE toMonday(dt) = '%s'"
                    % WEEK, db)
    h.eq(tc.SRV.q("SELECT revenue_cents FROM mart_weekly_sales WHERE week_start = '%s'"
                  % WEEK, db), want, "week %s against its days" % WEEK)
    # the releases of those runs, queued, done once the executor is idle
    h.eq(tc.stage_leftovers(db), {}, "stage rows left after the backfill")
    h.eq(tc.marks_left(db), {}, "marks left after the backfill")

    # a batch: true run of the added job, then SIGTERM at once: its
    # release is queued still, and done at shutdown
    before = len(d.runs())
    d.ok("backfill", "fct_batch", "--from", DAYS[0], "--to", DAYS[1], "--wait", timeout=SLOW)
    batch = d.runs()[before:]
    h.eq(sorted((r["partition"], r["state"]) for r in batch),
         [(x, "succeeded") for x in h.days(*DAYS)], "the batch's partitions")
    h.eq(len({r["started_at"] for r in batch}), 1, "one batch run (one start)")
    h.eq(ch_days(db, "fct_daily_batch", DAYS), ch_raw(db, DAYS), "fct_daily_batch vs raw")
    # concurrency 3: its 3 days filled by statements at once (exec_many),
    # 2 or 3 of them: the query log has been seen to hold 2 (a finished
    # query may reach it after the client has its answer: polled)
    def fills():
        tc.SRV.q("SYSTEM FLUSH LOGS")
        return int(tc.SRV.q("SELECT count() FROM system.query_log WHERE type = 2 AND query"
                            " LIKE 'INSERT INTO `_backfilld_stage_fct_daily_batch`%'"))
    wait_until(lambda: fills() >= 2, "the batch's stage fills in the query log")
    h.check(fills() <= 3, "the batch's stage fills: %d, above its 3 days" % fills())
    stop_and_check(d, vglog)
    h.eq(tc.stage_leftovers(db, settle=False), {}, "stage rows left after the stop")
    h.eq(tc.marks_left(db, settle=False), {}, "marks left after the stop")


# ---------------------------------------------------------------- PostgreSQL state store

def test_postgres_state_store():
    """test_valgrind.py's sequence with the daemon on the PostgreSQL
    state store (the harness's PgState, as BACKFILLD_TEST_STATE=postgres
    selects it)."""
    d = h.Daemon(jobs=h.fact_job(2) + h.WEEKLY_JOB + tv.CMD_JOB,
                 warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 3, "shutdown_grace": "60s"},
                 name="vgstate", start=False)
    if not isinstance(d.state, h.PgState):
        d.state = h.PgState(d)
        d.write_config(d.config_text)   # its state_db line made a state: block
    with open(os.path.join(d.dir, "export.sh"), "w") as f:
        f.write(tv.EXPORT_SH)
    vglog = start_under_valgrind(d)
    store = d.json("status")["store"]
    h.check(store["name"].startswith("PostgreSQL") and store["path"] is None,
            "the daemon is not on the PostgreSQL state store: %r" % (store,))

    # the command job holds 2026-02-02 (export.sh) until the test releases it
    req = d.enqueue("backfill", "fct_daily_sales", "--from", "2026-02-02", "--to", "2026-02-04")
    wait_until(lambda: d.status("export_daily")["export_daily"]["running"] >= 1,
               "the command job's run of 2026-02-02 in flight")
    reload_by_sighup(d, with_jobs(d.config_text, tv.EXTRA_JOB), "SIGHUP with a job added")
    h.check("extra" in d.status(), "the reload did not add job extra: %r" % list(d.status()))
    h.check(d.status("export_daily")["export_daily"]["running"] >= 1,
            "no run of the command job in flight after the reload")
    good = d.config_text
    reload_by_sighup(d, good + "max_concurrency: [broken\n", "SIGHUP with a broken file")
    d.assert_alive("after a reload to a broken file")
    h.check("extra" in d.status(), "the refused reload dropped the running configuration")
    d.write_config(good)
    d.ok("reload", timeout=SLOW)

    open(os.path.join(d.dir, "release"), "w").close()
    resp = d.wait_request(req, timeout=SLOW)
    h.eq(resp.get("status"), "0", "the backfill under valgrind: %r" % (resp,))
    h.assert_fact_repaired(d, "2026-02-02", "2026-02-04")
    with open(os.path.join(d.dir, "exported.txt")) as f:
        h.eq(sorted(l.strip() for l in f), ["2026-02-02", "2026-02-03", "2026-02-04"],
             "partitions exported by the command job")
    h.eq(sorted((r[0], r[1]) for r in d.state_rows(
        "SELECT job, partition_key FROM runs WHERE state = 'succeeded'")),
         sorted([("fct_daily_sales", x) for x in h.days("2026-02-02", "2026-02-04")] +
                [("export_daily", x) for x in h.days("2026-02-02", "2026-02-04")] +
                [("mart_weekly_sales", "2026-02-02")]),
         "the runs the PostgreSQL state store recorded")
    d.ok("backfill", "extra", "--from", "2026-02-01", "--to", "2026-02-02", "--wait",
         timeout=SLOW)
    stop_and_check(d, vglog)


# ---------------------------------------------------------------- main

def available(what, probe):
    """probe() or, when it skips (exit 77), a note and False."""
    try:
        probe()
        return True
    except SystemExit as e:
        if e.code != h.SKIP:
            raise
        print("SKIP %s (above)" % what)
        return False


def pg_probe():
    driver = os.path.join(os.path.dirname(h.binaries()[0]), "backfilld-pg.so")
    if not os.path.exists(driver):
        tp.skip("this build has no PostgreSQL driver (libpq-dev)")
    tp.cluster()


def main():
    tv.preflight()
    tests = []
    try:
        if available("the PostgreSQL tests", pg_probe):
            tests += [test_postgres_warehouse, test_postgres_state_store]
        if available("the ClickHouse test", lambda: tc.start_server(query_log=True)):
            tests.insert(1 if tests else 0, test_clickhouse_warehouse)
        if not tests:
            raise SystemExit(h.SKIP)
        h.main(tests)
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
