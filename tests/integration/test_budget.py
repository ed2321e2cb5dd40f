#!/usr/bin/env python3
"""Budgets of warehouse time (backfilld.yaml(5), max_backfill_time;
backfillctl(1), backfill --budget), on a SQLite warehouse and on a
PostgreSQL one (the throwaway cluster of test_postgres.py; exit 77 after
the SQLite part without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1).

Measured time, deterministically.  The daemon takes every time from the
test clock, which stands still: a run takes 0 ms unless the clock moves
while it is in flight.  So the test holds the warehouse's write lock (a
transaction of its own), waits until the run is running (its BEGIN waits
on the lock), moves the clock (and waits until the daemon has read it:
status --json's `now`), then lets the lock go: that run took exactly the
time the clock moved, and every other run 0 ms.

What it checks:
  - a request whose estimate (the median of the job's runs, here one run
    of 1 h, times 10 partitions) is above its budget is refused whole,
    exit 2, one line naming both figures and where the budget came from
    (--budget, max_backfill_time), nothing queued; --budget above the
    job's max_backfill_time or the longest duration (36500d, said) is
    refused; a budget on a request of command jobs alone, which take no
    warehouse time, is refused (max_backfill_time gives it none); one
    within the budget is queued; --dry-run
    shows the budget and the verdict;
  - a request whose measured time passes 1.5 times its budget (1 h runs,
    budget 1 h: the second run) is stopped: the 8 partitions left are
    cancelled with the reason, the log line, status and status --json say
    so, the on_failure hook gets the figures in its environment, the
    metrics count it (promtool-clean); the measured time survives a
    restart between the two runs; `retry` resumes the request, which then
    succeeds.
"""
import datetime
import os
import re
import shutil
import subprocess

import harness as h
import test_exactly_once as eo

GUARD = 30.0
T0 = "2026-01-01T00:00:00Z"
DAYS = ("2025-03-01", "2025-03-10")

HOOK = ('["sh", "-c", "env | grep ^BACKFILLD_ | sort > {dir}/hook-$BACKFILLD_REQUEST.tmp &&'
        ' mv {dir}/hook-$BACKFILLD_REQUEST.tmp {dir}/hook-$BACKFILLD_REQUEST.env"]')

SQLITE_JOB = """
- name: fct
  warehouse: sales
  partition: day
  retries: 0
  max_backfill_time: 8h
  on_failure: %s
  sql: INSERT OR REPLACE INTO out (dt, n) VALUES (:partition, 1);
""" % HOOK

PG_JOB = """
- name: fct
  warehouse: sales
  partition: day
  retries: 0
  max_backfill_time: 8h
  on_failure: %s
  sql: |
    INSERT INTO out (dt, n) VALUES (:partition, 1)
    ON CONFLICT (dt) DO UPDATE SET n = out.n + 1;
""" % HOOK


def promtool():
    path = shutil.which("promtool")
    if path is None and os.environ.get("BACKFILLD_REQUIRE_PROMTOOL") == "1":
        h.fail("promtool is not installed (apt-get install prometheus) and"
               " BACKFILLD_REQUIRE_PROMTOOL=1")
    return path


def until(cond, what):
    """Wait for cond(), a state the daemon reaches (guard: GUARD s)."""
    eo.until(cond, what, timeout=GUARD)


def iso_ms(instant):
    return instant.replace("Z", ".000Z")


def later(instant, hours):
    t = datetime.datetime.strptime(instant, "%Y-%m-%dT%H:%M:%SZ") + \
        datetime.timedelta(hours=hours)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class SqliteWh(eo.SqliteWh):
    """The SQLite warehouse, its write lock held by the test (hold, release)."""
    name = "sqlite"

    def __init__(self):
        super().__init__(None)

    def daemon(self, name, settings=None):
        self.d = h.Daemon(jobs=SQLITE_JOB, warehouses={
            "sales": "CREATE TABLE out (dt TEXT PRIMARY KEY, n INTEGER);"},
            settings=settings or {"max_concurrency": 4}, clock=T0, name=name)
        return self.d


class PgWh:
    name = "postgres"

    def daemon(self, name, settings=None):
        import test_postgres as tp
        self.c = tp.cluster()
        self.c.fresh_db()
        self.c.as_etl("CREATE TABLE out (dt text PRIMARY KEY, n integer)")
        self.d = tp.pg_daemon(PG_JOB, tp.pg_warehouse(), settings=settings, clock=T0,
                              name=name)
        return self.d

    def hold(self):
        self.release = self.c.lock("out")


def tick(d, instant):
    """Move the daemon's clock and wait until it has read it."""
    d.set_clock(instant)
    until(lambda: d.json("status")["now"] == iso_ms(instant),
          "the daemon reading clock %s" % instant)


def running(d, key):
    return any(r["partition"] == key and r["state"] == "running" for r in d.runs())


def slow_run(w, start, hours, args):
    """Queue backfillctl ARGS (no --wait) with its first run taking `hours`
    of the test clock from start: the lock held, the run started, the clock
    moved, the lock let go; returns the request once it is done."""
    d = w.d
    w.hold()
    try:
        rq = d.enqueue(*args)
        until(lambda: any(r["request"] == rq and r["state"] == "running" for r in d.runs()),
              "a run waiting on the warehouse's lock")
        tick(d, later(start, hours))
    finally:
        w.release()
    d.wait_request(rq)
    return rq


def spent_ms(d, rq):
    (v,) = d.state_rows("SELECT spent_ms FROM requests WHERE id = %d" % rq)[0]
    return int(v)


def requests_count(d):
    return int(d.state_rows("SELECT count(*) FROM requests")[0][0])


def budget_refusals(w):
    d = w.daemon("budref-" + w.name)
    # history: one run of fct that took 1 h (a rerun: no budget)
    rq = slow_run(w, T0, 1, ("rerun", "fct", DAYS[0]))
    h.eq([r["state"] for r in d.runs() if r["request"] == rq], ["succeeded"],
         "the rerun that makes the history")
    n_req, n_runs = requests_count(d), len(d.runs())

    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1],
                         "--budget", "5h")
    e = h.one_line_error(rc, out, err, 2, "a request estimated above its --budget")
    h.check("estimated warehouse time 10h (36000 s) is above the request's budget of"
            " 5h (18000 s), from --budget; nothing was queued" in e, "the refusal: %r" % e)
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1])
    e = h.one_line_error(rc, out, err, 2, "a request estimated above max_backfill_time")
    h.check("10h (36000 s) is above the request's budget of 8h (28800 s), from"
            " max_backfill_time;" in e, "the refusal: %r" % e)
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1],
                         "--budget", "9h")
    e = h.one_line_error(rc, out, err, 2, "--budget above max_backfill_time")
    h.check("--budget 9h is above fct's max_backfill_time 8h" in e, "the refusal: %r" % e)
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1],
                         "--budget", "soon")
    e = h.one_line_error(rc, out, err, 2, "--budget soon")
    h.check("--budget must be a positive duration" in e, "the refusal: %r" % e)
    # the longest duration accepted is said, and is accepted
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1],
                         "--budget", "1000000d")
    e = h.one_line_error(rc, out, err, 2, "--budget 1000000d")
    h.check("at most 36500d (100 years), not '1000000d'" in e, "the refusal: %r" % e)
    _, resp = d.request({"cmd": "backfill", "job": "fct", "from": DAYS[0], "to": DAYS[1],
                         "budget": "0s"})
    h.eq((resp.get("status"), "--budget must be a positive duration" in resp.get("err", "")),
         ("2", True), "a raw request with budget=0s: the daemon checks it too (%r)" % resp)
    h.eq(requests_count(d), n_req, "requests after the refusals: nothing queued")
    h.eq(len(d.runs()), n_runs, "runs after the refusals")

    # --dry-run shows the budget and the verdict, and changes nothing
    out = d.ok("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1], "--dry-run")
    h.check("budget: 8h (max_backfill_time): this request would be refused" in out,
            "dry run: %r" % out)
    plan = d.json("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1], "--budget", "5h",
                  "--dry-run")
    h.eq(plan["budget"], {"seconds": 18000, "source": "--budget", "refused": True},
         "dry run --json budget")
    h.eq(round(plan["estimate"]["warehouse_seconds"]), 36000, "dry run --json estimate")
    out = d.ok("backfill", "fct", "--from", DAYS[0], "--to", "2025-03-05", "--budget", "6h",
               "--dry-run")
    h.check("budget: 6h of warehouse time (--budget): the request stops starting partitions"
            " once its runs have taken 1.5 times that" in out, "dry run within: %r" % out)
    h.eq(requests_count(d), n_req, "requests after the dry runs")

    # a rerun has no budget: with max_backfill_time 30m, one day's
    # backfill (estimate 1h) is refused, its rerun is queued
    d.write_config(d.config_text.replace("max_backfill_time: 8h", "max_backfill_time: 30m"))
    d.ok("reload")
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[0])
    e = h.one_line_error(rc, out, err, 2, "one day's backfill above max_backfill_time 30m")
    h.check("budget of 30m (1800 s), from max_backfill_time" in e, "the refusal: %r" % e)
    rq = d.enqueue("rerun", "fct", DAYS[0])
    d.wait_request(rq)
    h.eq([r["state"] for r in d.runs() if r["request"] == rq], ["succeeded"],
         "the rerun, which has no budget")
    d.write_config(d.config_text.replace("max_backfill_time: 30m", "max_backfill_time: 8h"))
    d.ok("reload")

    # within the budget: queued, with it
    out = d.ok("backfill", "fct", "--from", DAYS[0], "--to", "2025-03-05", "--budget", "6h")
    h.check("budget 6h of warehouse time" in out, "the answer: %r" % out)
    rq = int(re.search(r"request (\d+)", out).group(1))
    d.wait_request(rq)
    h.eq(int(d.state_rows("SELECT budget_ms FROM requests WHERE id = %d" % rq)[0][0]),
         6 * 3600 * 1000, "the request's budget in the state store")
    ans = d.json("backfill", "fct", "--from", "2025-03-06", "--to", "2025-03-06")
    h.eq(ans["budget_seconds"], 8 * 3600, "backfill --json: budget_seconds (max_backfill_time)")
    d.wait_request(ans["request"])

    d.stop()


def over_budget(w):
    d = w.daemon("budstop-" + w.name, settings={
        "max_concurrency": 4, "metrics_file": "metrics.prom"})
    # the first run takes 1 h: within 1.5 x the budget; the job is paused
    # before it ends, so nothing else starts before the restart
    w.hold()
    try:
        rq = d.enqueue("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1],
                       "--budget", "1h")
        until(lambda: running(d, DAYS[0]), "the first run waiting on the lock")
        d.ok("pause", "fct")
        now = later(T0, 1)
        tick(d, now)
    finally:
        w.release()
    until(lambda: any(r["state"] == "succeeded" for r in d.runs()), "the first run's end")
    h.eq(spent_ms(d, rq), 3600 * 1000, "measured time after the first run")
    h.eq(d.json("status")["over_budget"], [], "status --json over_budget before the stop")

    # a restart keeps the budget and the measured time
    d.stop()
    d.start()
    w.hold()
    try:
        d.ok("resume", "fct")
        until(lambda: running(d, "2025-03-02"), "the second run waiting on the lock")
        # a reload while it runs: the run's configuration is released
        # when it ends, after its time is charged (sanitizers, valgrind)
        d.ok("reload")
        stop_at = later(now, 1)
        tick(d, stop_at)
    finally:
        w.release()
    d.wait_request(rq)
    rc, out, err = d.ctl("wait", str(rq))
    h.eq(rc, 1, "wait for the stopped request (%r %r)" % (out, err))

    runs = [r for r in d.runs() if r["request"] == rq]
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"),
         ["2025-03-01", "2025-03-02"], "partitions run before the stop")
    cancelled = [r for r in runs if r["state"] == "cancelled"]
    h.eq(len(cancelled), 8, "partitions cancelled by the stop")
    reason = ("over budget: measured warehouse time 2h (7200 s) passed 1.5 x the budget"
              " of 1h (3600 s); backfillctl retry %d resumes it" % rq)
    h.check(all(reason in (r["error"] or "") for r in cancelled),
            "their reason: %r" % cancelled[0]["error"])
    with open(d.log) as f:
        log = f.read()
    h.check("request=%d job=fct stopped %s; 8 partitions cancelled" % (rq, reason) in log,
            "the log line of the stop:\n%s" % d.log_tail())
    st = d.json("status")
    h.eq(len(st["over_budget"]), 1, "status --json over_budget: %r" % st["over_budget"])
    ob = st["over_budget"][0]
    h.eq((ob["request"], ob["job"], ob["budget_seconds"], ob["warehouse_seconds"],
          ob["cancelled"], ob["since"]), (rq, "fct", 3600, 7200, 8, iso_ms(stop_at)),
         "status --json over_budget")
    text = d.ok("status")
    h.check("request %d (fct): stopped over budget since %s: measured warehouse time 2h"
            " (7200 s) passed 1.5 x its budget of 1h (3600 s); 8 partitions cancelled"
            " (backfillctl retry %d"
            " resumes them)" % (rq, iso_ms(stop_at), rq) in text, "status:\n%s" % text)
    hook = os.path.join(d.dir, "hook-%d.env" % rq)
    until(lambda: os.path.exists(hook), "the on_failure hook of the stop")
    with open(hook) as f:
        env = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    h.eq((env.get("BACKFILLD_JOB"), env.get("BACKFILLD_REQUEST"), env.get("BACKFILLD_BUDGET"),
          env.get("BACKFILLD_WAREHOUSE_SECONDS"), env.get("BACKFILLD_PARTITION")),
         ("fct", str(rq), "3600", "7200", ""), "the hook's environment: %r" % env)
    h.check(reason in env.get("BACKFILLD_ERROR", ""), "BACKFILLD_ERROR: %r" % env)

    # the metrics (written at shutdown): the stop counted, promtool-clean
    d.stop()
    metrics = os.path.join(d.dir, "metrics.prom")
    with open(metrics) as f:
        text = f.read()
    h.check('backfilld_budget_stops_total{job="fct"} 1\n' in text,
            "metrics: %r" % [l for l in text.splitlines() if "budget" in l])
    tool = promtool()
    if tool:
        p = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
        h.eq(p.returncode, 0, "promtool check metrics: %s %s" % (p.stdout, p.stderr))

    # retry resumes it: the measured time starts again, everything runs
    d.start()
    rc, out, err = d.ctl("retry", str(rq), "--wait")
    h.eq(rc, 0, "retry of the stopped request (%r %r)" % (out, err))
    h.check("8 partitions queued again" in out, "retry: %r" % out)
    runs = [r for r in d.runs() if r["request"] == rq]
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "succeeded"),
         h.days(*DAYS), "every partition after the retry")
    h.eq(spent_ms(d, rq), 0, "measured time after the retry (its runs took 0 ms)")
    h.eq(d.json("status")["over_budget"], [], "status --json over_budget after the retry")

    # a request whose last run takes it past 1.5 x has nothing left to stop
    rq = slow_run(w, stop_at, 2, ("backfill", "fct", "--from", DAYS[0], "--to", DAYS[0],
                                  "--budget", "1h"))
    h.eq([r["state"] for r in d.runs() if r["request"] == rq], ["succeeded"],
         "a one-partition request over its budget")
    h.eq(spent_ms(d, rq), 2 * 3600 * 1000, "its measured time")
    h.eq(d.json("status")["over_budget"], [], "status --json over_budget: not stopped")
    d.stop()


CMD_JOBS = """
- name: cmd
  partition: day
  retries: 0
  command: ["true"]
- name: cmd_sql
  warehouse: sales
  partition: day
  upstream: [cmd_up]
  sql: INSERT OR REPLACE INTO out (dt, n) VALUES (:partition, 1);
- name: cmd_up
  partition: day
  command: ["true"]
"""


def test_budget_of_commands():
    """A budget counts SQL runs' warehouse time: on a request of command
    jobs alone an explicit --budget is refused (exit 2, one line, nothing
    queued) rather than accepted and ignored; a max_backfill_time gives
    such a request no budget (none echoed, none stored); a command job
    with a SQL job downstream keeps its budget."""
    d = h.Daemon(jobs=CMD_JOBS, warehouses={
        "sales": "CREATE TABLE out (dt TEXT PRIMARY KEY, n INTEGER);"},
        settings={"max_backfill_time": "4h"}, clock=T0, name="budcmd")
    n_req = requests_count(d)
    for extra in ((), ("--dry-run",)):
        rc, out, err = d.ctl("backfill", "cmd", "--from", DAYS[0], "--to", DAYS[1],
                             "--budget", "1s", *extra)
        e = h.one_line_error(rc, out, err, 2, "--budget on a command job %r" % (extra,))
        h.check("--budget 1s would not apply: cmd runs a command, as does every job of the"
                " request, and a budget counts only the warehouse time of SQL jobs' runs;"
                " nothing was queued. Drop --budget" in e, "the refusal: %r" % e)
    h.eq(requests_count(d), n_req, "requests after the refusals: nothing queued")
    out = d.ok("backfill", "cmd", "--from", DAYS[0], "--to", DAYS[1])
    h.check("budget" not in out, "a request of commands echoes no budget: %r" % out)
    rq = int(re.search(r"request (\d+)", out).group(1))
    stored = d.state_rows("SELECT budget_ms FROM requests WHERE id = %d" % rq)[0][0]
    h.check(stored in (None, 0), "the stored budget of a request of commands: %r" % stored)
    d.wait_request(rq)
    out = d.ok("backfill", "cmd_up", "--from", DAYS[0], "--to", DAYS[0], "--budget", "1h")
    h.check("budget 1h of warehouse time" in out, "a command with SQL downstream: %r" % out)
    d.stop()


def test_refusal_sqlite():
    budget_refusals(SqliteWh())


def test_over_budget_sqlite():
    over_budget(SqliteWh())


def test_refusal_postgres():
    budget_refusals(PgWh())


def test_over_budget_postgres():
    over_budget(PgWh())


if __name__ == "__main__":
    h.main([test_budget_of_commands, test_refusal_sqlite, test_over_budget_sqlite, test_refusal_postgres,
            test_over_budget_postgres])
