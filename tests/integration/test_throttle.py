#!/usr/bin/env python3
"""Per-warehouse throttling (issue 18) on a SQLite warehouse whose load
table the test controls (as an external process would keep it):

- held above `max`, the throttle stops new runs on that warehouse: none
  starts over several checks, status says throttled with the value, the
  bound and since when (text and JSON), on_throttle fires with
  {warehouse}, {value} and {state}; once the value drops the request
  completes and the hook fires again ("released"); it runs as every hook
  does (its output in the log, BACKFILLD_STATE set);
- a reload that leaves the throttle unchanged keeps the spell;
- a failing throttle query throttles too, and says why;
- after a restart no queued run starts before the first check has
  answered (throttled: none starts; ok: they start at once);
- another warehouse's runs go on meanwhile.
Checks are counted through status' checked_at: no sleep stands in for an
event."""
import json
import os
import re
import time

import harness as h

GUARD = 60.0

SEED = """
CREATE TABLE load (v REAL);
INSERT INTO load VALUES (50);
CREATE TABLE out (dt TEXT, n INTEGER);
"""


def config(d_dir, throttle_sql="SELECT v FROM load"):
    hook = os.path.join(d_dir, "hook.log")
    return """state_db: state.db
socket: backfilld.sock
metrics_file: metrics.prom
max_concurrency: 2
warehouses:
  - name: w
    sqlite: w.db
    throttle:
      sql: %s
      max: 10
      every: 1s
    on_throttle: ["/bin/sh", "-c", "echo \\"$0 $1 $2\\" >> %s; echo said $BACKFILLD_STATE", "{warehouse}", "{value}", "{state}"]
  - name: other
    sqlite: other.db
jobs:
  - name: work
    warehouse: w
    partition: day
    sql: |
      DELETE FROM out WHERE dt = :partition;
      INSERT INTO out VALUES (:partition, 1);
  - name: elsewhere
    warehouse: other
    partition: day
    sql: |
      DELETE FROM out WHERE dt = :partition;
      INSERT INTO out VALUES (:partition, 1);
""" % (throttle_sql, hook)


def daemon(name, throttle_sql="SELECT v FROM load"):
    d = h.Daemon(warehouses={"w": SEED, "other": "CREATE TABLE out (dt TEXT, n INTEGER);"},
                 config="", name=name, start=False, clock=None)
    d.write_config(config(d.dir, throttle_sql))
    d.start()
    return d


def throttle(d):
    st = d.json("status")
    ws = {w["name"]: w for w in st.get("warehouses", [])}
    h.check("w" in ws and "throttle" in ws["w"], "status --json has no throttle for w: %r" % (st,))
    h.eq(ws["other"]["throttle"], None, "throttle of an unthrottled warehouse")
    return ws["w"]["throttle"]


def wait_throttle(d, pred, what):
    deadline = time.monotonic() + GUARD
    while True:
        t = throttle(d)
        if t and pred(t):
            return t
        if time.monotonic() > deadline:
            h.fail("%s not seen within %.0f s: %r\n%s" % (what, GUARD, t, d.log_tail()))
        time.sleep(0.05)


def wait_checks(d, n):
    """Wait until the throttle has completed n more checks."""
    first = throttle(d)["checks"]
    return wait_throttle(d, lambda t: t["checks"] >= first + n, "%d more throttle checks" % n)


def hook_lines(d):
    try:
        with open(os.path.join(d.dir, "hook.log")) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def await_log(d, pattern, what):
    deadline = time.monotonic() + GUARD
    while True:
        with open(d.log, errors="replace") as f:
            if any(re.search(pattern, l) for l in f):
                return
        if time.monotonic() > deadline:
            h.fail("%s: no log line matching %r after %.0f s\n%s"
                   % (what, pattern, GUARD, d.log_tail()))
        time.sleep(0.05)


def set_load(d, v):
    con = d.wh("w")
    try:
        con.execute("UPDATE load SET v = ?", (v,))
        con.commit()
    finally:
        con.close()


def test_throttled_warehouse_holds_runs():
    d = daemon("throttle")
    t = wait_throttle(d, lambda t: t["state"] == "throttled", "the throttle")
    h.eq((t["value"], t["max"], t["error"]), (50, 10, None), "throttle in status --json")
    h.check(t["since"] is not None, "throttled without since: %r" % (t,))
    out = d.ok("status")
    h.check("warehouse w: throttled since " in out and "value 50 above max 10" in out,
            "status does not show the throttled warehouse:\n%s" % out)
    # the report page shows it too
    page = os.path.join(d.dir, "report.html")
    d.ok("report", "--html", page)
    with open(page) as f:
        html = f.read()
    h.check('data-warehouse-throttle="throttled">throttled since' in html and
            "value 50 above max 10" in html, "the report page shows the throttled warehouse")
    deadline = time.monotonic() + GUARD
    while hook_lines(d) != ["w 50 throttled"]:
        h.check(time.monotonic() < deadline, "on_throttle did not fire: %r" % hook_lines(d))
        time.sleep(0.05)

    # a reload that leaves the throttle as it was keeps the spell going
    since = t["since"]
    d.ok("reload")
    t = throttle(d)
    h.eq((t["state"], t["since"]), ("throttled", since), "throttle after a reload")

    req = d.enqueue("backfill", "work", "--from", "2026-01-01", "--to", "2026-01-03")
    other = d.enqueue("backfill", "elsewhere", "--from", "2026-01-01", "--to", "2026-01-03")
    d.wait_request(other)   # another warehouse is not held
    wait_checks(d, 3)       # three intervals: nothing of `work` started
    runs = [r for r in d.runs() if r["job"] == "work"]
    h.eq(sorted((r["partition"], r["state"], r["started_at"]) for r in runs),
         [(k, "queued", None) for k in ("2026-01-01", "2026-01-02", "2026-01-03")],
         "runs of a throttled warehouse")

    set_load(d, 3)
    d.wait_request(req)
    h.eq(sorted((r["partition"], r["state"]) for r in d.runs() if r["job"] == "work"),
         [(k, "succeeded") for k in ("2026-01-01", "2026-01-02", "2026-01-03")],
         "runs once the load dropped")
    t = throttle(d)
    h.eq((t["state"], t["value"], t["since"]), ("ok", 3, None), "throttle after the drop")
    h.check("throttled since" not in d.ok("status"), "status still says throttled")
    deadline = time.monotonic() + GUARD
    while hook_lines(d) != ["w 50 throttled", "w 3 released"]:
        h.check(time.monotonic() < deadline, "on_throttle did not fire on release: %r"
                % hook_lines(d))
        time.sleep(0.05)
    await_log(d, r"hook=on_throttle warehouse=w state=throttled output: said throttled$",
              "the hook's output in the log")
    await_log(d, r"hook=on_throttle warehouse=w state=released done in \d+ ms",
              "the released hook's end")
    d.stop()
    # the metrics file written at shutdown: not throttled now, the last value
    with open(os.path.join(d.dir, "metrics.prom")) as f:
        prom = f.read()
    h.check('backfilld_warehouse_throttled{warehouse="w"} 0' in prom and
            'backfilld_warehouse_throttle_value{warehouse="w"} 3' in prom and
            'warehouse="other"' not in prom,
            "the metrics file's throttle series:\n%s" % prom)


def test_failing_query_throttles():
    d = daemon("throttlefail", throttle_sql="SELECT v FROM no_such_load")
    t = wait_throttle(d, lambda t: t["state"] == "throttled", "the throttle")
    h.check(t["error"] and "no such table: no_such_load" in t["error"],
            "a failing throttle query does not say why: %r" % (t,))
    h.eq(t["value"], None, "value of a failing throttle query")
    out = d.ok("status")
    h.check("warehouse w: throttled since" in out and "no such table" in out,
            "status does not say why:\n%s" % out)
    req = d.enqueue("backfill", "work", "--from", "2026-01-01", "--to", "2026-01-01")
    wait_checks(d, 2)
    h.eq([r["state"] for r in d.runs()], ["queued"], "runs while the query fails")
    # the table appears (an external process starts keeping it): released
    con = d.wh("w")
    con.executescript("CREATE TABLE no_such_load (v REAL); INSERT INTO no_such_load VALUES (1);")
    con.close()
    d.wait_request(req)
    h.eq([r["state"] for r in d.runs()], ["succeeded"], "runs once the query answers")
    d.stop()


def test_first_check_before_any_run():
    d = daemon("throttlefirst")
    wait_throttle(d, lambda t: t["state"] == "throttled", "the throttle")
    req = d.enqueue("backfill", "work", "--from", "2026-01-01", "--to", "2026-01-03")
    wait_checks(d, 1)
    d.stop()
    # queued runs at the start, the load still above max: the first check
    # answers before any of them may start
    with open(d.log) as f:
        mark = len(f.read())
    d.start()
    t = wait_throttle(d, lambda t: t["state"] == "throttled", "the first check after a restart")
    h.eq(t["value"], 50, "the first check's value")
    wait_checks(d, 2)
    runs = [r for r in d.runs() if r["job"] == "work"]
    h.eq(sorted((r["partition"], r["state"], r["started_at"]) for r in runs),
         [(k, "queued", None) for k in ("2026-01-01", "2026-01-02", "2026-01-03")],
         "queued runs after a restart on a throttled warehouse")
    with open(d.log, errors="replace") as f:
        life = f.read()[mark:]
    h.eq(re.findall(r"job=work \S+ .*started", life), [],
         "runs started after the restart before the first check")
    d.stop()
    # the first check answers ok: the runs start at once
    set_load(d, 3)
    d.start()
    d.wait_request(req)
    h.eq(sorted((r["partition"], r["state"]) for r in d.runs() if r["job"] == "work"),
         [(k, "succeeded") for k in ("2026-01-01", "2026-01-02", "2026-01-03")],
         "runs once the first check answered below max")
    d.stop()


if __name__ == "__main__":
    h.main([test_throttled_warehouse_holds_runs, test_failing_query_throttles,
            test_first_check_before_any_run])
