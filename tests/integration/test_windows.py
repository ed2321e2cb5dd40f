#!/usr/bin/env python3
"""Dependency windows (issue 41; DESIGN "Calendars and dependency
windows").  A coarser upstream.  A daily EUR table reads the monthly FX
rate; repairing February's rate rebuilds February's 28 days of it, each
once, after the month landed, and nothing else; the days then equal a
recompute, `stale` lists nothing, the dry run lists exactly those days, and
a request whose downstream part is above the downstream job's max_backfill
is refused whole, naming the job, the count and the bound.  A rolling
window: a 7-day mart (upstream {job: fct, lookback: 6}); a repair of
2026-02-08..12 rebuilds the mart's 2026-02-08..18, each once, after the
repaired days in its window, equal to a recompute, nothing stale."""
import os
import subprocess

import harness as h

SEED = """
CREATE TABLE events (dt TEXT, amount REAL);
WITH RECURSIVE d(x) AS (SELECT '2026-01-01' UNION ALL
  SELECT date(x, '+1 day') FROM d WHERE x < '2026-03-31')
INSERT INTO events SELECT x, CAST(strftime('%j', x) AS REAL) + 0.5 FROM d;
CREATE TABLE fx_source (month TEXT PRIMARY KEY, rate REAL);
INSERT INTO fx_source VALUES ('2026-01-01', 0.90), ('2026-02-01', 0.92),
  ('2026-03-01', 0.95);
CREATE TABLE fx (month TEXT PRIMARY KEY, rate REAL);
CREATE TABLE fct (dt TEXT PRIMARY KEY, revenue REAL);
CREATE TABLE eur (dt TEXT PRIMARY KEY, revenue_eur REAL);
"""

JOBS = """
- name: fx_monthly
  warehouse: sales
  partition: month
  sql: |
    DELETE FROM fx WHERE month = :partition;
    INSERT INTO fx SELECT month, rate FROM fx_source WHERE month = :partition;
- name: fct
  warehouse: sales
  partition: day
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT :partition, SUM(amount) FROM events
    WHERE dt >= :partition_start AND dt < :partition_end;
- name: fct_eur
  warehouse: sales
  partition: day
  max_backfill: 31
  upstream: [fct, fx_monthly]
  sql: |
    DELETE FROM eur WHERE dt = :partition;
    INSERT INTO eur SELECT f.dt, f.revenue * x.rate FROM fct f
    JOIN fx x ON x.month = strftime('%Y-%m-01', f.dt)
    WHERE f.dt = :partition;
"""


def recompute(d):
    """Every EUR day equals a recompute from the events and the source rate;
    every day of the quarter is there."""
    rows = d.query("SELECT dt, revenue_eur FROM eur ORDER BY dt")
    h.eq([r[0] for r in rows], h.days("2026-01-01", "2026-03-31"), "EUR days")
    for dt, got in rows:
        truth = d.query("SELECT SUM(e.amount) * s.rate FROM events e JOIN fx_source s"
                        " ON s.month = strftime('%Y-%m-01', e.dt) WHERE e.dt = ?",
                        (dt,))[0][0]
        h.check(abs(got - truth) < 0.005, "eur %s: %.4f, a recompute says %.4f"
                % (dt, got, truth))


def built(d):
    """The fact without its downstream, then each month's rate: each month
    rebuilds its days of the EUR table (31 at most: its max_backfill)."""
    d.backfill("fct", "2026-01-01", "2026-03-31", "--no-downstream")
    for first, last in (("2026-01-01", "2026-01-31"), ("2026-02-01", "2026-02-28"),
                        ("2026-03-01", "2026-03-31")):
        d.backfill("fx_monthly", first, last)
    recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale after the first build")


def test_coarser_upstream_repair():
    d = h.Daemon(jobs=JOBS, warehouses={"sales": SEED}, name="winfx", clock=None)
    built(d)
    # the dry run of February's month lists the month, then its 28 days
    p = d.json("backfill", "fx_monthly", "--from", "2026-02-01", "--to", "2026-02-01",
               "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"]) for e in p],
         [("fx_monthly", "2026-02-01")] + [("fct_eur", x) for x in
                                           h.days("2026-02-01", "2026-02-28")],
         "--dry-run of February's rate")
    con = d.wh("sales")
    con.execute("UPDATE fx_source SET rate = 0.97 WHERE month = '2026-02-01'")
    con.commit()
    con.close()
    before = len(d.runs())
    d.backfill("fx_monthly", "2026-02-01", "2026-02-01", "--reason", "wrong rate")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"]) for r in new),
         [("fct_eur", x) for x in h.days("2026-02-01", "2026-02-28")] +
         [("fx_monthly", "2026-02-01")],
         "the runs of February's repair (each day once, nothing else)")
    month = [r for r in new if r["job"] == "fx_monthly"][0]
    for r in new:
        h.eq(r["state"], "succeeded", "run %s %s" % (r["job"], r["partition"]))
        if r["job"] == "fct_eur":
            h.check(h.parse_iso(r["started_at"]) >= h.parse_iso(month["finished_at"]),
                    "fct_eur %s started before February's rate landed" % r["partition"])
    recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale after February's repair")
    d.stop()


def test_coarser_upstream_bound():
    d = h.Daemon(jobs=JOBS, warehouses={"sales": SEED}, name="winfxb", clock=None)
    built(d)
    before = len(d.runs())
    for extra in ((), ("--dry-run",)):
        rc, out, err = d.ctl("backfill", "fx_monthly", "--from", "2026-01-01",
                             "--to", "2026-02-28", *extra)
        h.eq(rc, 2, "two months of rates (59 EUR days, max_backfill 31) %s" % (extra,))
        h.eq(err.strip(), "backfillctl: refused: the request rebuilds 59 partitions of"
             " fct_eur downstream, above its max_backfill of 31; nothing was queued."
             " Split the request, or raise fct_eur's max_backfill",
             "the refusal %s" % (extra,))
    h.eq(len(d.runs()), before, "runs after the refused requests")
    d.stop()


ROLLING_SEED = """
CREATE TABLE events (dt TEXT, amount REAL);
WITH RECURSIVE d(x) AS (SELECT '2026-01-01' UNION ALL
  SELECT date(x, '+1 day') FROM d WHERE x < '2026-03-31')
INSERT INTO events SELECT x, CAST(strftime('%j', x) AS REAL) + 0.5 FROM d;
CREATE TABLE fct (dt TEXT PRIMARY KEY, revenue REAL);
CREATE TABLE rolling (dt TEXT PRIMARY KEY, revenue_7d REAL);
"""

ROLLING_JOBS = """
- name: fct
  warehouse: sales
  partition: day
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT :partition, SUM(amount) FROM events
    WHERE dt >= :partition_start AND dt < :partition_end;
- name: mart_rolling_7d
  warehouse: sales
  partition: day
  end: 2026-03-31
  max_backfill: %d
  upstream:
    - job: fct
      lookback: 6
  sql: |
    DELETE FROM rolling WHERE dt = :partition;
    INSERT INTO rolling SELECT :partition, SUM(revenue) FROM fct
    WHERE dt >= date(:partition_start, '-6 days') AND dt < :partition_end;
"""


def rolling_recompute(d):
    rows = d.query("SELECT dt, revenue_7d FROM rolling ORDER BY dt")
    h.eq([r[0] for r in rows], h.days("2026-01-01", "2026-03-31"), "rolling days")
    for dt, got in rows:
        truth = d.query("SELECT SUM(amount) FROM events WHERE dt > date(?, '-7 days')"
                        " AND dt <= ?", (dt, dt))[0][0]
        h.check(abs(got - truth) < 0.005, "mart_rolling_7d %s: %.2f, a recompute says"
                " %.2f" % (dt, got, truth))


def test_rolling_window_repair():
    d = h.Daemon(jobs=ROLLING_JOBS % 366, warehouses={"sales": ROLLING_SEED},
                 name="winroll", clock=None)
    d.backfill("fct", "2026-01-01", "2026-03-31")
    rolling_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale after the first build")
    repaired = h.days("2026-02-08", "2026-02-12")
    rebuilt = h.days("2026-02-08", "2026-02-18")
    p = d.json("backfill", "fct", "--from", repaired[0], "--to", repaired[-1],
               "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"]) for e in p],
         [("fct", x) for x in repaired] + [("mart_rolling_7d", x) for x in rebuilt],
         "--dry-run of the repair")
    con = d.wh("sales")
    con.execute("UPDATE events SET amount = amount + 100 WHERE dt BETWEEN ? AND ?",
                (repaired[0], repaired[-1]))
    con.commit()
    con.close()
    before = len(d.runs())
    d.backfill("fct", repaired[0], repaired[-1], "--reason", "refunds")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"]) for r in new),
         [("fct", x) for x in repaired] + [("mart_rolling_7d", x) for x in rebuilt],
         "the runs of the repair (each mart day once, nothing else)")
    fct_done = {r["partition"]: h.parse_iso(r["finished_at"]) for r in new
                if r["job"] == "fct"}
    for r in new:
        h.eq(r["state"], "succeeded", "run %s %s" % (r["job"], r["partition"]))
        if r["job"] != "mart_rolling_7d":
            continue
        window = [x for x in repaired if x in h.days("2026-01-01", r["partition"])[-7:]]
        h.check(window and h.parse_iso(r["started_at"]) >= max(fct_done[x] for x in window),
                "mart_rolling_7d %s started before the repaired days in its window"
                " (%s) landed" % (r["partition"], window))
    rolling_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale after the repair")
    d.stop()


def test_rolling_window_bound():
    d = h.Daemon(jobs=ROLLING_JOBS % 10, warehouses={"sales": ROLLING_SEED},
                 name="winrollb", clock=None)
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-08", "--to", "2026-02-12")
    h.eq(rc, 2, "a repair whose 11 mart days are above the mart's max_backfill 10")
    h.eq(err.strip(), "backfillctl: refused: the request rebuilds 11 partitions of"
         " mart_rolling_7d downstream, above its max_backfill of 10; nothing was"
         " queued. Split the request, or raise mart_rolling_7d's max_backfill",
         "the refusal")
    h.eq(d.runs(), [], "runs after the refused request")
    d.stop()


LIFETIME_SEED = ROLLING_SEED + """
CREATE TABLE lifetime (total REAL, days INTEGER, built_for TEXT);
"""

LIFETIME_JOBS = """
- name: fct
  warehouse: sales
  partition: day
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT :partition, SUM(amount) FROM events
    WHERE dt >= :partition_start AND dt < :partition_end;
- name: store_lifetime
  warehouse: sales
  partition: none
  max_backfill: 1
  upstream: [fct]
  sql: |
    DELETE FROM lifetime;
    INSERT INTO lifetime SELECT SUM(revenue), COUNT(*),
      :partition || ' ' || :partition_start || ' ' || :partition_end FROM fct;
"""


def lifetime_recompute(d, what):
    got = d.query("SELECT total, days, built_for FROM lifetime")
    truth = d.query("SELECT SUM(amount), COUNT(DISTINCT dt) FROM events")[0]
    h.eq(len(got), 1, "lifetime rows %s" % what)
    h.check(abs(got[0][0] - truth[0]) < 0.005, "store_lifetime %s: %.2f, a recompute"
            " says %.2f" % (what, got[0][0], truth[0]))
    h.eq(got[0][1:], (truth[1], "- 0001-01-01 9999-12-31"), "lifetime days, bounds %s"
         % what)


def test_whole_table_repair():
    """partition: none: a repair of 2 days of the fact rebuilds the lifetime
    table once, after both days landed, equal to a recompute; its key is -;
    nothing stale; its own backfill (no dates) rebuilds it."""
    d = h.Daemon(jobs=LIFETIME_JOBS, warehouses={"sales": LIFETIME_SEED},
                 name="winnone", clock=None)
    d.backfill("fct", "2026-01-01", "2026-03-31")
    h.eq([(r["job"], r["partition"]) for r in d.runs() if r["job"] != "fct"],
         [("store_lifetime", "-")], "the whole table built once after 90 days")
    lifetime_recompute(d, "after the first build")
    h.eq(d.json("stale")["stale"], [], "stale after the first build")
    p = d.json("backfill", "fct", "--from", "2026-02-08", "--to", "2026-02-09",
               "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"]) for e in p],
         [("fct", "2026-02-08"), ("fct", "2026-02-09"), ("store_lifetime", "-")],
         "--dry-run of the repair")
    con = d.wh("sales")
    con.execute("UPDATE events SET amount = amount + 100 WHERE dt IN"
                " ('2026-02-08', '2026-02-09')")
    con.commit()
    con.close()
    before = len(d.runs())
    d.backfill("fct", "2026-02-08", "2026-02-09", "--reason", "refunds")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"]) for r in new),
         [("fct", "2026-02-08"), ("fct", "2026-02-09"), ("store_lifetime", "-")],
         "the runs of the repair (the whole table once, nothing else)")
    last_fct = max(h.parse_iso(r["finished_at"]) for r in new if r["job"] == "fct")
    whole = [r for r in new if r["job"] == "store_lifetime"][0]
    h.eq(whole["state"], "succeeded", "the whole table's run")
    h.check(h.parse_iso(whole["started_at"]) >= last_fct,
            "store_lifetime started before both repaired days landed")
    lifetime_recompute(d, "after the repair")
    h.eq(d.json("stale")["stale"], [], "stale after the repair")
    before = len(d.runs())
    d.ok("backfill", "store_lifetime", "--wait")
    h.eq([(r["job"], r["partition"], r["state"]) for r in d.runs()[before:]],
         [("store_lifetime", "-", "succeeded")], "its own backfill")
    rc, out, err = d.ctl("backfill", "store_lifetime", "--from", "2026-02-08",
                         "--to", "2026-02-08")
    h.eq((rc, err.strip()), (2, "backfillctl: --from \"2026-02-08\": a job with"
         " partition: none has one partition, -, and takes no dates (a backfill"
         " without dates rebuilds it)"), "--from/--to for a whole table")
    rc, out, err = d.ctl("backfill", "fct")
    h.eq(rc, 2, "a daily job's backfill without dates")
    h.check("no dates given" in err, "its refusal: %r" % err)
    # cut-off: a repair whose days come out identical skips it
    before = len(d.runs())
    d.backfill("fct", "2026-03-01", "2026-03-02")
    h.eq([(r["job"], r["partition"], r["state"]) for r in d.runs()[before:]
          if r["job"] == "store_lifetime"], [("store_lifetime", "-", "skipped")],
         "the whole table after a repair that changed nothing")
    # its key everywhere: map, status, logs, rerun, audit
    h.eq(d.json("map", "store_lifetime")["ranges"],
         [{"from": "-", "to": "-", "state": "skipped", "count": 1}], "map --json (its newest run)")
    h.check(d.ok("map", "store_lifetime").splitlines()[1].startswith("- "),
            "map's one cell")
    h.check(d.ok("logs", "store_lifetime", "-") is not None, "logs JOB -")
    before = len(d.runs())
    d.ok("rerun", "store_lifetime", "-", "--wait")
    new = d.runs()[before:]
    h.eq([(r["job"], r["partition"], r["state"]) for r in new],
         [("store_lifetime", "-", "succeeded")], "rerun JOB -")
    audit = d.ok("audit", "--request", str(new[0]["request"]))
    h.check("store_lifetime" in audit and " - " in audit, "audit names -: %r" % audit)
    d.stop()


def test_whole_table_refusals():
    """A whole table without upstream, with start:, with a lookback,
    feeding a daily job, or with a partition_column: each refused at its
    position in one line."""
    cases = [
        ("- name: t\n  partition: none\n  command: [\"true\"]\n",
         "partition: none needs upstream"),
        ("- name: f\n  partition: day\n  command: [\"true\"]\n"
         "- name: t\n  partition: none\n  start: 2026-01-01\n  upstream: [f]\n"
         "  command: [\"true\"]\n", "start: a job with partition: none has no dates"),
        ("- name: f\n  partition: day\n  command: [\"true\"]\n"
         "- name: t\n  partition: none\n  upstream: [{job: f, lookback: 2}]\n"
         "  command: [\"true\"]\n", "remove lookback"),
        ("- name: f\n  partition: day\n  command: [\"true\"]\n"
         "- name: t\n  partition: none\n  upstream: [f]\n  command: [\"true\"]\n"
         "- name: g\n  partition: day\n  upstream: [t]\n  command: [\"true\"]\n",
         "feeds only jobs with partition: none"),
        ("- name: f\n  partition: day\n  command: [\"true\"]\n"
         "- name: t\n  partition: none\n  upstream: [f]\n  warehouse: w\n"
         "  table: t\n  partition_column: k\n  sql: SELECT 1\n",
         "partition_column: a job with partition: none"),
    ]
    backfilld, _ = h.binaries()
    folder = h.suite_mkdtemp("winnonecfg")
    conf = os.path.join(folder, "c.yaml")
    for jobs, want in cases:
        with open(conf, "w") as f:
            f.write("warehouses:\n  - {name: w, sqlite: w.db}\njobs:\n" +
                    "".join("  " + x + "\n" for x in jobs.splitlines()))
        p = subprocess.run([backfilld, "--check-config", "-c", conf],
                           capture_output=True, text=True)
        e = h.one_line_error(p.returncode, p.stdout, p.stderr, 2,
                             "--check-config of %r" % jobs)
        h.check(want in e and "c.yaml:" in e, "the refusal %r" % e)


if __name__ == "__main__":
    h.main([test_coarser_upstream_repair, test_coarser_upstream_bound,
            test_rolling_window_repair, test_rolling_window_bound,
            test_whole_table_repair, test_whole_table_refusals])
