#!/usr/bin/env python3
"""late_data sensors (issue 7) on the real daemon with a controlled clock.

Late rows land in raw_sales_landing (with their loaded_at) next to the
lesson's raw_sales; the fact job reads both.  Moving the test clock past
the sensor's next_check makes the daemon run the check: exactly the
partitions of the late rows, and their weeks, are rebuilt as one request
of kind late_data.  :since is the start of the previous successful check.
A found set above max_backfill is refused and logged, and values that are
not partition keys of the job fail the check (status late_data.error names
the job and the value) with nothing enqueued.

Waiting is deterministic: status --json "now" says when the daemon has
seen the new clock (the schedule then runs at once and starts a due
check); late_data.last_check says the check finished (its request, if
any, is in the state store by then); the request is waited for with the
protocol's wait.

The same tests run on both drivers: with --postgres (meson's
test_late_data_postgres) the warehouse is a database of the throwaway
PostgreSQL cluster of test_postgres.py, and the test exits 77 when no
PostgreSQL is installed (1 with BACKFILLD_REQUIRE_POSTGRES=1)."""
import datetime
import sys
import time

import harness as h

PG = "--postgres" in sys.argv

START = "2026-02-24T06:00:00Z"   # after the demo data; the fact job has catchup: false

LANDING = """
CREATE TABLE raw_sales_landing (
    sale_id    INTEGER PRIMARY KEY,
    dt         TEXT NOT NULL,
    store_id   INTEGER NOT NULL,
    amount_usd REAL NOT NULL,
    loaded_at  TEXT NOT NULL        -- YYYY-MM-DDTHH:MM:SS.sssZ
);
"""

# On PostgreSQL dt is text too, so that a value that is no date can land.
LANDING_PG = """
CREATE TABLE raw_sales_landing (
    sale_id    serial PRIMARY KEY,
    dt         text NOT NULL,
    store_id   integer NOT NULL,
    amount_usd numeric(12,2) NOT NULL,
    loaded_at  text NOT NULL
);
"""

SENSOR_SQL = "SELECT DISTINCT dt FROM raw_sales_landing WHERE loaded_at > :since"

LANDED = ("SELECT dt, store_id, amount_usd FROM raw_sales UNION ALL "
          "SELECT dt, store_id, amount_usd FROM raw_sales_landing")
if PG:
    LANDED = ("SELECT dt, store_id, amount_usd FROM raw_sales UNION ALL "
              "SELECT dt::date, store_id, amount_usd FROM raw_sales_landing "
              "WHERE dt LIKE '____-__-__'")


def fact_job(late_sql=SENSOR_SQL, every="15m", extra=""):
    return """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  retries: 0
%s  table: fct_daily_sales
  partition_column: dt
  key: [dt, store_id]
  late_data:
    sql: "%s"
    every: %s
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM (%s) AS landed
    WHERE dt = :partition GROUP BY dt, store_id;
""" % (extra, late_sql, every, LANDED)


def daemon(name, **kw):
    if PG:
        import test_postgres as tp
        c = tp.cluster()
        c.fresh_db()
        c.as_etl(LANDING_PG)
        return tp.pg_daemon(fact_job(**kw) + h.WEEKLY_JOB, tp.pg_warehouse(),
                            settings={"max_concurrency": 4}, clock=START, name=name)
    return h.Daemon(jobs=fact_job(**kw) + h.WEEKLY_JOB,
                    warehouses={"sales": h.sales_seed() + LANDING},
                    settings={"max_concurrency": 4}, clock=START, name=name)


def query(d, sql, params=()):
    """Rows of a query on the warehouse (PostgreSQL: text values; `?`
    parameters are spliced as literals, test data only)."""
    if not PG:
        return d.query(sql, params)
    import test_postgres as tp
    for p in params:
        sql = sql.replace("?", "'%s'" % p, 1)
    return tp.cluster().psql(sql)


def wh_exec(d, sql):
    """A statement on the warehouse, committed."""
    if PG:
        import test_postgres as tp
        tp.cluster().as_etl(sql)
        return
    con = d.wh()
    try:
        con.execute(sql)
        con.commit()
    finally:
        con.close()


def dump(d, table, where="1"):
    """Rows of a table, sorted; the first value as a SQL literal."""
    if not PG:
        return d.dump(table, where)
    rows = query(d, "SELECT * FROM %s WHERE %s" % (table, "true" if where == "1" else where))
    return sorted(tuple(["'%s'" % r[0]] + list(r[1:])) for r in rows)


def wait_until(pred, what, guard=30.0):
    """Poll pred() (a status or runs query) until true; the guard is a
    failure bound only."""
    deadline = time.monotonic() + guard
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            h.fail("not within %.0f s (guard): %s" % (guard, what))
        time.sleep(0.05)


def iso_ms(instant):
    return instant[:-1] + ".000Z" if len(instant) == 20 else instant


def sensor(d, job="fct_daily_sales"):
    st = d.status()
    ld = st[job].get("late_data")
    h.check(isinstance(ld, dict), "status --json %s has no late_data: %r" % (job, st[job]))
    for k in ("last_check", "next_check", "found", "error"):
        h.check(k in ld, "late_data lacks %r: %r" % (k, ld))
    return ld


def tick(d, instant):
    """Move the test clock; return once the daemon has seen it (status
    --json "now"), and, if the sensor was due, once its check finished.
    Returns the sensor's status."""
    before = sensor(d)
    d.set_clock(instant)
    want = iso_ms(instant)
    wait_until(lambda: d.json("status").get("now") == want,
               "status --json now = %s" % want)
    if h.parse_iso(before["next_check"]) <= h.parse_iso(want):
        wait_until(lambda: sensor(d)["last_check"] == want,
                   "late_data.last_check = %s (was %r)" % (want, before["last_check"]))
    return sensor(d)


def requests(d):
    return {r[0]: (r[1], r[2]) for r in d.state_rows("SELECT id, job, kind FROM requests")}


def land(d, rows):
    """Late rows: (dt, store_id, amount, loaded_at)."""
    if PG:
        wh_exec(d, "INSERT INTO raw_sales_landing (dt, store_id, amount_usd, loaded_at) VALUES "
                + ", ".join("('%s', %d, %r, '%s')" % r for r in rows))
        return
    con = d.wh()
    try:
        con.executemany("INSERT INTO raw_sales_landing (dt, store_id, amount_usd, loaded_at) "
                        "VALUES (?, ?, ?, ?)", rows)
        con.commit()
    finally:
        con.close()


def truth(d, where, params=()):
    return {str(r[0]): float(r[1]) for r in query(d,
        "SELECT dt, SUM(amount_usd) FROM (%s) AS landed WHERE %s GROUP BY dt"
        % (LANDED, "true" if where == "1" else where), params)}


def fact_sum(d, day):
    return float(query(d, "SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = ?", (day,))[0][0])


def mart(d, week):
    return float(query(d, "SELECT revenue_usd FROM mart_weekly_sales WHERE week_start = ?",
                       (week,))[0][0])


def week_fact_sum(d, week):
    end = (datetime.date.fromisoformat(week) + datetime.timedelta(days=7)).isoformat()
    return float(query(d, "SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt >= ? AND dt < ?",
                       (week, end))[0][0])


def late_request(d, known, parts):
    """The one new request: kind late_data on the fact job; wait for it and
    assert its runs are exactly parts [(job, partition)]."""
    new = {k: v for k, v in requests(d).items() if k not in known}
    h.eq(list(new.values()), [("fct_daily_sales", "late_data")], "new requests")
    req = list(new)[0]
    d.wait_request(req)
    rs = d.runs("--request", req)
    h.eq(sorted((r["job"], r["partition"]) for r in rs), sorted(parts),
         "runs of the late_data request %d" % req)
    h.check(all(r["state"] == "succeeded" for r in rs), "runs of request %d: %r" % (req, rs))
    return req


def test_late_rows_rebuild_their_partitions_and_weeks():
    d = daemon("late")
    s0 = sensor(d)
    h.eq((s0["last_check"], s0["error"]), (None, None), "sensor before its first check")
    h.eq(s0["next_check"], "2026-02-24T06:15:00.000Z", "first next_check (start + every)")
    known = set(requests(d))
    marts0 = dump(d, "mart_weekly_sales")
    mart0 = {str(r[0]): float(r[1]) for r in query(
        d, "SELECT week_start, revenue_usd FROM mart_weekly_sales")}
    fact0 = dump(d, "fct_daily_sales")

    # Late rows for two past dates in two weeks, loaded after the start.
    land(d, [("2026-02-03", 1, 100.0, "2026-02-24T06:05:00.000Z"),
             ("2026-02-03", 2, 25.5, "2026-02-24T06:06:00.000Z"),
             ("2026-02-17", 3, 40.0, "2026-02-24T06:10:00.000Z")])

    # Not due yet: nothing runs.
    s = tick(d, "2026-02-24T06:14:59Z")
    h.eq(s["last_check"], None, "last_check before next_check")
    h.eq(set(requests(d)), known, "requests before the sensor was due")

    # Due: the check runs, finds the two dates, enqueues them and their weeks.
    s = tick(d, "2026-02-24T06:15:00Z")
    h.eq((s["found"], s["error"]), (2, None), "sensor after its first check")
    h.eq(s["next_check"], "2026-02-24T06:30:00.000Z", "next_check after the first check")
    req = late_request(d, known, [("fct_daily_sales", "2026-02-03"),
                                  ("fct_daily_sales", "2026-02-17"),
                                  ("mart_weekly_sales", "2026-02-02"),
                                  ("mart_weekly_sales", "2026-02-16")])
    known = set(requests(d))
    t = truth(d, "1")
    for x in ("2026-02-03", "2026-02-17"):
        h.check(abs(fact_sum(d, x) - t[x]) < 0.005, "fct %s: %r, expected %.2f with the late rows"
                % (x, fact_sum(d, x), t[x]))
    # The weeks follow the fact table (2026-02-08 keeps the seeded buggy
    # build): each moved by exactly its late rows.
    for w, late in (("2026-02-02", 125.5), ("2026-02-16", 40.0)):
        wt = week_fact_sum(d, w)
        h.check(abs(mart(d, w) - wt) < 0.005, "mart week %s: %r, expected %.2f" % (w, mart(d, w), wt))
        h.check(abs(mart(d, w) - mart0[w] - late) < 0.005,
                "mart week %s moved %.2f, expected the late rows' %.2f"
                % (w, mart(d, w) - mart0[w], late))
    h.eq(dump(d, "fct_daily_sales", "dt NOT IN ('2026-02-03', '2026-02-17')"),
         sorted(r for r in fact0 if r[0] not in ("'2026-02-03'", "'2026-02-17'")),
         "fact partitions without late rows (untouched)")
    h.eq(dump(d, "mart_weekly_sales", "week_start NOT IN ('2026-02-02', '2026-02-16')"),
         sorted(r for r in marts0 if r[0] not in ("'2026-02-02'", "'2026-02-16'")),
         "weeks without late rows (untouched)")
    a = d.json("audit", "--request", req)
    h.eq(a["summary"]["partitions"], 4, "audit of the late_data request: partitions")
    h.eq(a["summary"]["downstream"], 2, "audit of the late_data request: downstream")

    # :since is the start of the previous successful check (06:15:00.000):
    # a row loaded before it is not found again, one after it is.
    land(d, [("2026-02-10", 1, 7.0, "2026-02-24T06:14:59.999Z"),
             ("2026-02-11", 2, 9.0, "2026-02-24T06:15:00.001Z")])
    s = tick(d, "2026-02-24T06:30:00Z")
    h.eq((s["found"], s["error"]), (1, None), "sensor after its second check")
    late_request(d, known, [("fct_daily_sales", "2026-02-11"),
                            ("mart_weekly_sales", "2026-02-09")])
    known = set(requests(d))

    # Nothing new: the check runs, finds nothing, enqueues nothing.
    s = tick(d, "2026-02-24T06:45:00Z")
    h.eq((s["found"], s["error"], s["last_check"]), (0, None, "2026-02-24T06:45:00.000Z"),
         "sensor after a check with nothing new")
    h.eq(set(requests(d)), known, "requests after a check with nothing new")

    # The sensor's state survives a restart: :since is still 06:45.
    d.restart()
    land(d, [("2026-02-12", 3, 11.0, "2026-02-24T06:40:00.000Z")])
    s = sensor(d)
    h.eq(s["last_check"], "2026-02-24T06:45:00.000Z", "last_check after a restart")
    s = tick(d, "2026-02-24T07:00:00Z")
    h.eq((s["found"], s["error"]), (0, None), "check after a restart (row older than :since)")
    h.eq(set(requests(d)), known, "requests after the check after a restart")
    d.stop()


def test_above_max_backfill_refused():
    d = daemon("late-big", extra="  max_backfill: 3\n")
    known = set(requests(d))
    land(d, [(x, 1, 1.0, "2026-02-24T06:01:00.000Z") for x in h.days("2026-02-01", "2026-02-05")])
    s = tick(d, "2026-02-24T06:15:00Z")
    print("  error: %s" % s["error"])
    h.check(s["error"] and "max_backfill" in s["error"] and "5" in s["error"],
            "late_data.error names the count and max_backfill: %r" % s["error"])
    h.eq(set(requests(d)), known, "requests after a refused late_data set")
    with open(d.log) as f:
        log = f.read()
    h.check("max_backfill" in log and "fct_daily_sales" in log,
            "the refusal is logged:\n%s" % d.log_tail())
    d.stop()   # exit 0, and no sanitizer report in the log


def test_values_that_are_not_partition_keys():
    d = daemon("late-bad")
    known = set(requests(d))
    land(d, [("2026-02-03", 1, 5.0, "2026-02-24T06:01:00.000Z"),
             ("yesterday", 1, 5.0, "2026-02-24T06:02:00.000Z")])
    s = tick(d, "2026-02-24T06:15:00Z")
    print("  error: %s" % s["error"])
    h.check(s["error"] and "fct_daily_sales" in s["error"] and "yesterday" in s["error"],
            "late_data.error names the job and the value: %r" % s["error"])
    h.eq(set(requests(d)), known, "requests after a check with a bad value")

    # A date outside the job's start..end is no partition of it either.
    wh_exec(d, "UPDATE raw_sales_landing SET dt = '2025-12-31' WHERE dt = 'yesterday'")
    s = tick(d, "2026-02-24T06:30:00Z")
    print("  error: %s" % s["error"])
    h.check(s["error"] and "fct_daily_sales" in s["error"] and "2025-12-31" in s["error"],
            "late_data.error names the job and the out-of-range value: %r" % s["error"])
    h.eq(set(requests(d)), known, "requests after a check with an out-of-range value")

    # Fixed data: the failed checks did not advance :since, so the good
    # row loaded before them is found now.
    wh_exec(d, "DELETE FROM raw_sales_landing WHERE dt = '2025-12-31'")
    s = tick(d, "2026-02-24T06:45:00Z")
    h.eq((s["found"], s["error"]), (1, None), "sensor after the data was fixed")
    late_request(d, known, [("fct_daily_sales", "2026-02-03"),
                            ("mart_weekly_sales", "2026-02-02")])
    d.stop()   # exit 0, and no sanitizer report in the log


def test_values_of_another_column():
    """A query returning store ids instead of dates."""
    d = daemon("late-col", late_sql="SELECT store_id FROM raw_sales_landing WHERE loaded_at > :since")
    known = set(requests(d))
    land(d, [("2026-02-03", 2, 5.0, "2026-02-24T06:01:00.000Z")])
    s = tick(d, "2026-02-24T06:15:00Z")
    print("  error: %s" % s["error"])
    h.check(s["error"] and "fct_daily_sales" in s["error"] and '"2"' in s["error"],
            "late_data.error names the job and the value 2: %r" % s["error"])
    h.eq(set(requests(d)), known, "requests after a check returning store ids")
    d.stop()   # exit 0, and no sanitizer report in the log


def test_query_error():
    """A sensor query that fails: the error is shown, nothing enqueued, the
    daemon goes on, and the next check after a fix finds the rows since the
    daemon's start (a failed check does not advance :since)."""
    d = daemon("late-err", late_sql="SELECT DISTINCT dt FROM raw_sales_late WHERE loaded_at > :since")
    known = set(requests(d))
    land(d, [("2026-02-04", 1, 5.0, "2026-02-24T06:01:00.000Z")])
    s = tick(d, "2026-02-24T06:15:00Z")
    print("  error: %s" % s["error"])
    h.check(s["error"] and "raw_sales_late" in s["error"],
            "late_data.error names the problem: %r" % s["error"])
    h.eq(set(requests(d)), known, "requests after a failed check")
    d.write_config(d.config_text.replace("raw_sales_late ", "raw_sales_landing "))
    d.ok("reload")
    s = tick(d, "2026-02-24T06:30:00Z")
    h.eq((s["found"], s["error"]), (1, None), "sensor after the query was fixed")
    late_request(d, known, [("fct_daily_sales", "2026-02-04"),
                            ("mart_weekly_sales", "2026-02-02")])
    d.stop()   # exit 0, and no sanitizer report in the log


def test_sensor_failure_is_not_unreachable():
    """A failing sensor query leaves its warehouse reachable in status, and
    the start-up log calls no warehouse unreachable."""
    d = daemon("late-reach", late_sql="SELECT DISTINCT dt FROM no_such_table WHERE x > :since")
    s = tick(d, "2026-02-24T06:15:00Z")
    h.check(s["error"] and "no_such_table" in s["error"], "sensor error %r" % s["error"])
    (w,) = [w for w in d.json("status")["warehouses"] if w["name"] == "sales"]
    h.eq((w["state"], w["error"]), ("ok", None), "warehouse after a failed sensor check")
    with open(d.log, errors="replace") as f:
        log = f.read()
    h.check("unreachable" not in log, "the log calls the warehouse unreachable:\n%s" % d.log_tail())
    d.stop()


TESTS = [test_late_rows_rebuild_their_partitions_and_weeks, test_above_max_backfill_refused,
         test_values_that_are_not_partition_keys, test_values_of_another_column,
         test_query_error, test_sensor_failure_is_not_unreachable]

if __name__ == "__main__":
    if PG:
        import test_postgres as tp
        try:
            tp.cluster()
            h.main(TESTS)
        finally:
            if tp.CLUSTER is not None:
                tp.CLUSTER.close()
    else:
        h.main(TESTS)
