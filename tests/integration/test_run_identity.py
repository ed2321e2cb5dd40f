#!/usr/bin/env python3
"""What a run is, seen from each request (issue 24, item 9).

The day 2026-02-10 fails its min_rows check (no source rows yet) in
request 1, which blocks the week 2026-02-09.  The source rows arrive; a
rerun of the day (request 2) lands it, which releases request 1's week: it
and request 2's own week run as one execution.  Then:

- that one execution shows as one run id, under request 1 and request 2
  alike (`runs --request N`, `audit --request N`); on main each request's
  row had an id of its own;
- request 1's run of the day failed: `runs --request 1` says failed, and
  `audit --request 1` agrees (passed false, its failed min_rows check beside
  it, the note "landed later by request 2"); on main the audit said passed;
- the week job, once removed from the configuration, still has its runs:
  `runs --job week` lists them from the state store with a note (exit 0);
  on main it was refused as an unknown job.  A name that never was a job is
  still refused.
"""
import harness as h

SEED = """
CREATE TABLE src (dt TEXT, v INTEGER);
CREATE TABLE t (dt TEXT, v INTEGER);
CREATE TABLE wk (week TEXT, n INTEGER);
INSERT INTO src VALUES ('2026-02-09', 1);
"""

DAY = """
- name: day
  warehouse: wh
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  retries: 0
  table: t
  partition_column: dt
  key: [dt]
  min_rows: 1
  sql: |
    DELETE FROM t WHERE dt = :partition;
    INSERT INTO t SELECT dt, v FROM src WHERE dt = :partition;
"""

WEEK = """
- name: week
  warehouse: wh
  partition: week
  start: 2026-01-26
  end: 2026-02-23
  upstream: [day]
  retries: 0
  sql: |
    DELETE FROM wk WHERE week = :partition;
    INSERT INTO wk SELECT :partition, COUNT(*) FROM t
      WHERE dt >= :partition_start AND dt < :partition_end;
"""


def by_key(runs, job, key):
    return [r for r in runs if r["job"] == job and r["partition"] == key]


def scenario(name):
    """Request 1's day fails and blocks its week; the rerun (request 2)
    lands the day and releases the week: (daemon, req1, req2)."""
    d = h.Daemon(jobs=DAY + WEEK, warehouses={"wh": SEED},
                 settings={"max_concurrency": 2}, name=name)
    rc, out, err = d.ctl("backfill", "day", "--from", "2026-02-10", "--to", "2026-02-10",
                         "--wait")
    h.eq(rc, 1, "the day's backfill fails (stdout %r stderr %r)" % (out, err))
    req1 = d.runs()[0]["request"]
    h.eq([(r["job"], r["state"]) for r in d.runs("--request", str(req1))],
         [("day", "failed"), ("week", "blocked")], "request 1 after the failure")
    con = d.wh("wh")
    con.execute("INSERT INTO src VALUES ('2026-02-10', 2)")
    con.commit()
    con.close()
    d.ok("rerun", "day", "2026-02-10", "--wait")
    d.wait_request(req1)
    req2 = max(r["request"] for r in d.runs())
    h.check(req2 != req1, "the rerun is a request of its own")
    h.eq(d.query("SELECT week, n FROM wk", wh="wh"), [("2026-02-09", 1)],
         "the week rebuilt (with the day)")
    return d, req1, req2


def test_one_execution_one_id():
    d, req1, req2 = scenario("identity-id")
    w1 = by_key(d.runs("--request", str(req1)), "week", "2026-02-09")
    w2 = by_key(d.runs("--request", str(req2)), "week", "2026-02-09")
    h.eq([r["state"] for r in w1 + w2], ["succeeded", "succeeded"], "the week's runs")
    h.eq(w1[0]["id"], w2[0]["id"], "the week's run id under request 1 and request 2")
    for req in (req1, req2):
        a = d.json("audit", "--request", str(req), "--json")
        wk = [p for p in a["partitions"] if p["job"] == "week"]
        h.eq([p["run"] for p in wk], [w1[0]["id"]], "audit --request %d: the week's run" % req)
    d.stop()


def test_runs_and_audit_agree():
    d, req1, req2 = scenario("identity-audit")
    day1 = by_key(d.runs("--request", str(req1)), "day", "2026-02-10")
    h.eq([r["state"] for r in day1], ["failed"], "runs --request 1: the day's run")
    a = d.json("audit", "--request", str(req1), "--json")
    p = [p for p in a["partitions"] if p["job"] == "day"][0]
    h.eq((p["run"], p["passed"], p["state"], p.get("note")),
         (day1[0]["id"], False, "succeeded", "landed later by request %d" % req2),
         "audit --request 1: the day (run, passed, state, note)")
    h.eq([(c["name"], c["passed"]) for c in p["checks"] if c["name"] == "min_rows"],
         [("min_rows", False)], "audit --request 1: the day's min_rows check")
    h.eq((a["summary"]["passed"], a["summary"]["failed"]), (1, 1),
         "audit --request 1 summary (the week passed, the day's run failed)")
    text = d.ok("audit", "--request", str(req1))
    h.check("FAIL (landed later by request %d)" % req2 in text,
            "the audit's text does not say the day failed here and landed later:\n%s" % text)
    a = d.json("audit", "--request", str(req2), "--json")
    h.eq([(p["job"], p["passed"], p.get("note")) for p in a["partitions"]],
         [("day", True, None), ("week", True, None)], "audit --request 2")
    d.stop()


def test_removed_job_history():
    d, req1, req2 = scenario("identity-removed")
    week_runs = [(r["id"], r["request"], r["state"]) for r in d.runs("--job", "week")]
    h.eq(len(week_runs), 2, "the week's runs (one per request)")
    d.write_config(d.render(DAY, {"max_concurrency": 2}))
    d.ok("reload")
    h.eq([(r["id"], r["request"], r["state"]) for r in d.runs("--job", "week")], week_runs,
         "runs --job week once the job is removed")
    text = d.ok("runs", "--job", "week")
    h.check("job week is not in the configuration" in text,
            "runs --job week has no note that the job is gone:\n%s" % text)
    rc, out, err = d.ctl("runs", "--job", "nosuch")
    h.one_line_error(rc, out, err, 2, "runs --job nosuch")
    h.check("unknown job" in err, "runs --job nosuch: %r" % err)
    d.stop()


if __name__ == "__main__":
    h.main([test_one_execution_one_id, test_runs_and_audit_agree, test_removed_job_history])
