#!/usr/bin/env python3
"""Every view uses the same windows (issue 41; DESIGN "Calendars and
dependency windows": "blocked, staleness, cut-off, --dry-run, map, the
report and audit all use the same windows").  For each shape, a rolling
7-day mart (upstream {job: fct, lookback: 6}), a coarser upstream (a daily
EUR table reading a monthly rate) and a whole table (partition: none):

- a --no-downstream repair of one upstream partition leaves stale exactly
  the downstream partitions whose window overlaps it (the rolling mart's 7
  days, the month's 28 EUR days, the table's -), and `stale` (text and
  JSON), status's count, `map --json`, the report page's map cells and its
  stale table name exactly those, each with the repaired input as the newer
  one (on the page, in each stale cell's title too), and `audit` of the repair lists them as left stale (left_stale in
  --json); `backfill JOB --stale` (and its --dry-run) rebuilds exactly them;
- cut-off: a repair whose upstream partitions come out identical but one
  skips exactly the downstream partitions whose window holds no changed
  one, and `audit` says so;
- blocked: a failed upstream partition blocks exactly the downstream
  partitions whose window holds it (runs, map, status, audit), and `retry`
  releases them;
- with build_future: false (the default outside the suite), a whole table
  can be backfilled and rebuilt by --stale (its one partition never
  "closes"), and a downstream partition whose interval has not closed is
  not listed stale (the inputs still to land rebuild it), so that
  `backfill JOB --stale` is not refused for it."""
import os
import re

import harness as h
import test_http

# fct fails for a day listed in fail_on (guard.x is NOT NULL)
FCT = """
- name: fct
  warehouse: sales
  partition: day
  retries: 0
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT :partition, SUM(amount) FROM events
    WHERE dt >= :partition_start AND dt < :partition_end;
    INSERT INTO guard SELECT NULL FROM fail_on WHERE dt = :partition;
"""

SEED = """
CREATE TABLE events (dt TEXT, amount REAL);
WITH RECURSIVE d(x) AS (SELECT '2026-01-01' UNION ALL
  SELECT date(x, '+1 day') FROM d WHERE x < '2026-04-30')
INSERT INTO events SELECT x, CAST(strftime('%j', x) AS REAL) + 0.5 FROM d;
CREATE TABLE fail_on (dt TEXT);
CREATE TABLE guard (x TEXT NOT NULL);
CREATE TABLE fct (dt TEXT PRIMARY KEY, revenue REAL);
CREATE TABLE rolling (dt TEXT PRIMARY KEY, revenue_7d REAL);
CREATE TABLE fx_source (month TEXT PRIMARY KEY, rate REAL);
INSERT INTO fx_source VALUES ('2026-02-01', 0.92), ('2026-03-01', 0.95);
CREATE TABLE fx (month TEXT PRIMARY KEY, rate REAL);
CREATE TABLE eur (dt TEXT PRIMARY KEY, revenue_eur REAL);
CREATE TABLE lifetime (total REAL);
"""

ROLLING = FCT + """
- name: mart_rolling_7d
  warehouse: sales
  partition: day
  end: 2026-02-28
  upstream:
    - job: fct
      lookback: 6
  sql: |
    DELETE FROM rolling WHERE dt = :partition;
    INSERT INTO rolling SELECT :partition, SUM(revenue) FROM fct
    WHERE dt >= date(:partition_start, '-6 days') AND dt < :partition_end;
"""

COARSER = FCT + """
- name: fx_monthly
  warehouse: sales
  partition: month
  retries: 0
  table: fx
  partition_column: month
  sql: |
    DELETE FROM fx WHERE month = :partition;
    INSERT INTO fx SELECT month, rate FROM fx_source WHERE month = :partition;
    INSERT INTO guard SELECT NULL FROM fail_on WHERE dt = :partition;
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

HTTP = {"http_listen": "127.0.0.1:0"}

WHOLE = FCT + """
- name: store_lifetime
  warehouse: sales
  partition: none
  upstream: [fct]
  sql: |
    DELETE FROM lifetime;
    INSERT INTO lifetime SELECT SUM(revenue) FROM fct;
"""


def change(d, sql, params=()):
    con = d.wh("sales")
    con.execute(sql, params)
    con.commit()
    con.close()


def pairs(rows):
    return sorted((r["job"], r["partition"]) for r in rows)


def stale_of(d, job):
    """stale --json of job: [(partition, [(input job, input partition)])]."""
    return [(s["partition"], [(i["job"], i["partition"]) for i in s["newer_inputs"]])
            for s in d.json("stale")["stale"] if s["job"] == job]


def map_states(d, job, frm, to):
    """map --json of job over frm..to: {partition: state}, ranges expanded."""
    m = d.json("map", job, *(("--from", frm, "--to", to) if frm != "-" else ()))
    out = {}
    for r in m["ranges"]:
        keys = [r["from"]] if r["from"] == "-" else h.days(r["from"], r["to"])
        h.eq(len(keys), r["count"], "map range %r" % r)
        for k in keys:
            out[k] = r["state"]
    return out


def report_views(d, job, frm, to):
    """The report, its overview (report --html) and the job's page over
    frm..to (GET /report?job=JOB&from=&to= of http_listen): the job's map
    cells by state and the stale table's rows of the job (partition, newer
    inputs) on each."""
    page = os.path.join(d.dir, "report-%d.html" % len(os.listdir(d.dir)))
    d.ok("report", "--html", page)
    overview = open(page).read()
    query = "job=%s" % job + ("&from=%s&to=%s" % (frm, to) if frm != "-" else "")
    st, _, body = test_http.get(test_http.listening_port(d), "/report?" + query)
    h.eq(st, 200, "GET /report?%s" % query)
    out = []
    for text in (overview, body.decode()):
        cells = re.findall(r'data-job="%s" data-partition="([^"]+)" data-state="([a-z_]+)"'
                           r'[^>]* title="([^"]*)"' % job, text)
        out.append({k: t for k, s, t in cells if s == "stale"})
        cells = [(k, s) for k, s, t in cells]
        part = text.split("<h2>Stale partitions</h2>", 1)[1].split("</table>", 1)[0]
        rows = [[re.sub(r"<[^>]*>", "", c) for c in re.findall(r"<td>(.*?)</td>", r)]
                for r in re.findall(r"<tr>(.*?)</tr>", part, re.S)]
        out.append((dict(cells), [(r[1], r[3]) for r in rows if r and r[0] == job]))
    return out[1], out[3], out[2]


def check_stale_views(d, job, expect, newer, frm, to):
    """stale, status, map and the report all name exactly `expect` (keys
    of job), each with the one newer input `newer` (job, partition)."""
    h.eq(stale_of(d, job), [(k, [newer]) for k in expect], "stale --json of %s" % job)
    text = d.ok("stale")
    for k in expect:
        h.check(re.search(r"(?m)^%s +%s +\S+ +%s %s$" % (job, re.escape(k), newer[0],
                                                         newer[1]), text),
                "stale's line for %s %s:\n%s" % (job, k, text))
    h.check("%d stale;" % len(expect) in text, "stale's count line:\n%s" % text)
    h.eq(d.status()[job]["stale"], len(expect), "status's stale count of %s" % job)
    states = map_states(d, job, frm, to)
    h.eq(sorted(k for k, s in states.items() if s == "stale"), expect,
         "map --json's stale partitions of %s" % job)
    (cells, rows), (jcells, jrows), titles = report_views(d, job, frm, to)
    h.eq(titles, {k: "%s stale: newer %s %s" % (k, newer[0], newer[1]) for k in expect},
         "the titles of %s's stale cells on its report page (why each is stale)" % job)
    h.eq(sorted(k for k, s in jcells.items() if s == "stale"), expect,
         "the stale cells of %s's report page" % job)
    h.eq(jrows, [(k, "%s %s" % newer) for k in expect],
         "the stale table of %s's report page" % job)
    h.eq(rows, jrows, "the report's stale table of %s" % job)
    # the overview draws the newest days (13 weeks) of a job without end
    h.eq(sorted(k for k, s in cells.items() if s == "stale"),
         [k for k in expect if k in cells], "the report's stale cells of %s" % job)
    return cells


def check_audit_left(d, job, expect, newer, ranges):
    """audit of the newest request (a --no-downstream repair of `newer`):
    left_stale (JSON) is exactly expect, each naming newer; the text says
    the ranges and the command."""
    req = str(d.runs()[-1]["request"])
    h.eq([(x["job"], x["partition"], [(i["job"], i["partition"]) for i in x["newer_inputs"]])
          for x in d.json("audit", "--request", req)["left_stale"]],
         [(job, k, [newer]) for k in expect], "audit --json's left_stale")
    last = d.ok("audit", "--request", req).splitlines()[-1]
    h.eq(last, "left stale: %s %s (%d partition%s stale now, a newer input in the window"
         " being a partition this request built); rebuild with: backfillctl backfill %s"
         " --stale" % (job, ranges, len(expect), "s" if len(expect) > 1 else "", job),
         "audit's left stale line")
    return req


def rebuild_stale(d, job, expect):
    """backfill JOB --stale: its dry run and its runs are exactly expect."""
    p = d.json("backfill", job, "--stale", "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"]) for e in p], [(job, k) for k in expect],
         "backfill %s --stale --dry-run" % job)
    before = len(d.runs())
    d.ok("backfill", job, "--stale", "--wait")
    new = d.runs()[before:]
    h.eq([(r["job"], r["partition"], r["state"]) for r in new],
         [(job, k, "succeeded") for k in expect], "the runs of backfill %s --stale" % job)
    h.eq(d.json("stale")["stale"], [], "stale after backfill %s --stale" % job)


def audit_results(d, req):
    a = d.json("audit", "--request", str(req))
    return {(p["job"], p["partition"]): (p["state"], p["reason"]) for p in a["partitions"]}


def rolling_recompute(d):
    rows = d.query("SELECT dt, revenue_7d FROM rolling ORDER BY dt")
    h.eq([r[0] for r in rows], h.days("2026-02-01", "2026-02-28"), "rolling days")
    for dt, got in rows:
        truth = d.query("SELECT SUM(amount) FROM events WHERE dt > date(?, '-7 days')"
                        " AND dt <= ? AND dt >= '2026-02-01'", (dt, dt))[0][0]
        h.check(abs(got - truth) < 0.005, "mart_rolling_7d %s: %.2f, a recompute says"
                " %.2f" % (dt, got, truth))


def test_rolling_window_views():
    d = h.Daemon(jobs=ROLLING, warehouses={"sales": SEED}, name="wvroll", clock=None,
                 settings=HTTP)
    d.backfill("fct", "2026-02-01", "2026-02-28")
    rolling_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale after the first build")

    # staleness: a --no-downstream repair of 02-10 leaves the 7 days whose
    # window holds it stale, not just 02-10
    change(d, "UPDATE events SET amount = amount + 100 WHERE dt = '2026-02-10'")
    d.backfill("fct", "2026-02-10", "2026-02-10", "--no-downstream")
    week = h.days("2026-02-10", "2026-02-16")
    check_stale_views(d, "mart_rolling_7d", week, ("fct", "2026-02-10"),
                      "2026-02-01", "2026-02-28")
    req = check_audit_left(d, "mart_rolling_7d", week, ("fct", "2026-02-10"),
                           "2026-02-10..2026-02-16")
    rebuild_stale(d, "mart_rolling_7d", week)
    h.eq(d.json("audit", "--request", req)["left_stale"], [], "left_stale once rebuilt")
    h.check(not d.ok("audit", "--request", req).splitlines()[-1].startswith("left stale"),
            "audit's text once rebuilt")
    rolling_recompute(d)

    # cut-off: 02-10..14 repaired, only 02-12 changed: the mart days whose
    # window holds 02-12 run, 02-10 and 02-11 are skipped
    change(d, "UPDATE events SET amount = amount + 100 WHERE dt = '2026-02-12'")
    # --dry-run: each mart day waits for the repaired days in its window
    repaired = h.days("2026-02-10", "2026-02-14")
    p = d.json("backfill", "fct", "--from", repaired[0], "--to", repaired[-1],
               "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"], [(w["job"], w["partition"]) for w in e["waits_for"]])
          for e in p],
         [("fct", x, []) for x in repaired] +
         [("mart_rolling_7d", k, [("fct", x) for x in repaired
                                  if x in h.days("2026-02-01", k)[-7:]])
          for k in h.days("2026-02-10", "2026-02-20")],
         "--dry-run's waits_for: the repaired days in each mart day's window")
    before = len(d.runs())
    d.backfill("fct", "2026-02-10", "2026-02-14")
    new = d.runs()[before:]
    ran = [r["partition"] for r in new if r["job"] == "mart_rolling_7d"
           and r["state"] == "succeeded"]
    skipped = [r["partition"] for r in new if r["job"] == "mart_rolling_7d"
               and r["state"] == "skipped"]
    h.eq(sorted(ran), h.days("2026-02-12", "2026-02-18"), "mart days rebuilt (02-12 in window)")
    unchanged = ["2026-02-10", "2026-02-11", "2026-02-19", "2026-02-20"]
    h.eq(sorted(skipped), unchanged, "mart days skipped by cut-off (02-10..20 planned)")
    a = audit_results(d, new[0]["request"])
    h.eq(sorted(k[1] for k, v in a.items() if k[0] == "mart_rolling_7d" and
                v == ("skipped", "inputs unchanged")), unchanged, "audit's skipped mart days")
    h.eq(d.json("audit", "--request", str(new[0]["request"]))["summary"]["skipped"], 4,
         "audit's skipped count")
    rolling_recompute(d)

    # blocked: 02-20 fails; the mart days whose window holds it are blocked
    # (02-20..02-26), 02-19's runs (its only input unchanged: skipped)
    change(d, "INSERT INTO fail_on VALUES ('2026-02-20')")
    change(d, "UPDATE events SET amount = amount + 100 WHERE dt = '2026-02-20'")
    before = len(d.runs())
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-19", "--to", "2026-02-20",
                         "--wait")
    h.eq(rc, 1, "a repair with a failed day (%r %r)" % (out, err))
    new = d.runs()[before:]
    req = new[0]["request"]
    blocked = h.days("2026-02-20", "2026-02-26")
    h.eq(sorted(r["partition"] for r in new if r["state"] == "blocked"), blocked,
         "blocked mart days")
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in new if r["state"] != "blocked"),
         [("fct", "2026-02-19", "succeeded"), ("fct", "2026-02-20", "failed"),
          ("mart_rolling_7d", "2026-02-19", "skipped")], "the other runs of the repair")
    states = map_states(d, "mart_rolling_7d", "2026-02-01", "2026-02-28")
    h.eq(sorted(k for k, s in states.items() if s == "blocked"), blocked, "map's blocked days")
    h.eq(d.status()["mart_rolling_7d"]["blocked"], 7, "status's blocked count")
    a = audit_results(d, req)
    h.eq(sorted(k[1] for k, v in a.items() if v[0] == "blocked"), blocked, "audit's blocked days")
    change(d, "DELETE FROM fail_on")
    last = max(r["id"] for r in d.runs() if r["id"] is not None)
    d.ok("retry", str(req), "--wait")
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in d.runs()
                if r["id"] is not None and r["id"] > last),
         sorted([("fct", "2026-02-20", "succeeded")] +
                [("mart_rolling_7d", k, "succeeded") for k in blocked]),
         "the retry: the day, then the mart days it blocked")
    h.eq(d.status()["mart_rolling_7d"]["blocked"], 0, "blocked after the retry")
    rolling_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale at the end")
    d.stop()


def eur_recompute(d):
    rows = d.query("SELECT dt, revenue_eur FROM eur ORDER BY dt")
    h.eq([r[0] for r in rows], h.days("2026-02-01", "2026-03-31"), "EUR days")
    for dt, got in rows:
        truth = d.query("SELECT SUM(e.amount) * s.rate FROM events e JOIN fx_source s"
                        " ON s.month = strftime('%Y-%m-01', e.dt) WHERE e.dt = ?",
                        (dt,))[0][0]
        h.check(abs(got - truth) < 0.005, "eur %s: %.4f, a recompute says %.4f"
                % (dt, got, truth))


def test_coarser_upstream_views():
    d = h.Daemon(jobs=COARSER, warehouses={"sales": SEED}, name="wvfx", clock=None,
                 settings=HTTP)
    d.backfill("fct", "2026-02-01", "2026-03-31", "--no-downstream")
    d.backfill("fx_monthly", "2026-02-01", "2026-02-28")
    d.backfill("fx_monthly", "2026-03-01", "2026-03-31")
    eur_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale after the first build")
    feb, mar = h.days("2026-02-01", "2026-02-28"), h.days("2026-03-01", "2026-03-31")

    # staleness: February's rate repaired without its downstream
    change(d, "UPDATE fx_source SET rate = 0.97 WHERE month = '2026-02-01'")
    d.backfill("fx_monthly", "2026-02-01", "2026-02-01", "--no-downstream")
    check_stale_views(d, "fct_eur", feb, ("fx_monthly", "2026-02-01"),
                      "2026-02-01", "2026-03-31")
    check_audit_left(d, "fct_eur", feb, ("fx_monthly", "2026-02-01"),
                     "2026-02-01..2026-02-28")
    rebuild_stale(d, "fct_eur", feb)
    eur_recompute(d)

    # cut-off: the same rate again rebuilds none of the 28 days
    before = len(d.runs())
    d.backfill("fx_monthly", "2026-02-01", "2026-02-01")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in new),
         [("fct_eur", k, "skipped") for k in feb] + [("fx_monthly", "2026-02-01", "succeeded")],
         "a repair of an unchanged month")
    h.eq(d.json("audit", "--request", str(new[0]["request"]))["summary"]["skipped"], 28,
         "audit's skipped count")

    # blocked: March's rate fails; its 31 days are blocked, none of February
    change(d, "INSERT INTO fail_on VALUES ('2026-03-01')")
    change(d, "UPDATE fx_source SET rate = 0.99 WHERE month = '2026-03-01'")
    before = len(d.runs())
    rc, out, err = d.ctl("backfill", "fx_monthly", "--from", "2026-03-01", "--to",
                         "2026-03-01", "--wait")
    h.eq(rc, 1, "a repair of a failing month (%r %r)" % (out, err))
    new = d.runs()[before:]
    req = new[0]["request"]
    h.eq(pairs(r for r in new if r["state"] == "blocked"), [("fct_eur", k) for k in mar],
         "blocked EUR days")
    states = map_states(d, "fct_eur", "2026-02-01", "2026-03-31")
    h.eq(sorted(k for k, s in states.items() if s == "blocked"), mar, "map's blocked days")
    a = audit_results(d, req)
    h.eq(sorted(k[1] for k, v in a.items() if v[0] == "blocked"), mar, "audit's blocked days")
    change(d, "DELETE FROM fail_on")
    d.ok("retry", str(req), "--wait")
    h.eq(d.status()["fct_eur"]["blocked"], 0, "blocked after the retry")
    eur_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale at the end")
    d.stop()


def lifetime_recompute(d):
    got = d.query("SELECT total FROM lifetime")
    truth = d.query("SELECT SUM(amount) FROM events WHERE dt BETWEEN '2026-02-01'"
                    " AND '2026-02-10'")[0][0]
    h.eq(len(got), 1, "lifetime rows")
    h.check(abs(got[0][0] - truth) < 0.005, "store_lifetime %.2f, a recompute says %.2f"
            % (got[0][0], truth))


def test_whole_table_views():
    """partition: none with build_future: false (the default outside this
    suite): staleness, --stale, its own backfill, mark, blocked."""
    d = h.Daemon(jobs=WHOLE, warehouses={"sales": SEED}, name="wvnone", clock=None,
                 settings=dict(HTTP, build_future="false"))
    d.backfill("fct", "2026-02-01", "2026-02-10")
    lifetime_recompute(d)
    change(d, "UPDATE events SET amount = amount + 100 WHERE dt = '2026-02-05'")
    d.backfill("fct", "2026-02-05", "2026-02-05", "--no-downstream")
    cells = check_stale_views(d, "store_lifetime", ["-"], ("fct", "2026-02-05"), "-", "-")
    h.eq(cells, {"-": "stale"}, "the whole table's cell on the report's overview")
    check_audit_left(d, "store_lifetime", ["-"], ("fct", "2026-02-05"), "-")
    rebuild_stale(d, "store_lifetime", ["-"])
    lifetime_recompute(d)
    before = len(d.runs())
    d.ok("backfill", "store_lifetime", "--wait")
    h.eq([(r["job"], r["partition"], r["state"]) for r in d.runs()[before:]],
         [("store_lifetime", "-", "succeeded")], "its own backfill (build_future: false)")
    d.ok("mark", "store_lifetime", "-", "--succeeded", "--reason", "rebuilt by hand")
    # blocked: a failed day blocks the whole table; retry releases it
    change(d, "INSERT INTO fail_on VALUES ('2026-02-07')")
    change(d, "UPDATE events SET amount = amount + 100 WHERE dt = '2026-02-07'")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-06", "--to", "2026-02-07",
                         "--wait")
    h.eq(rc, 1, "a repair with a failed day (%r %r)" % (out, err))
    req = d.runs()[-1]["request"]
    h.eq(map_states(d, "store_lifetime", "-", "-"), {"-": "blocked"}, "map of the blocked table")
    h.eq(audit_results(d, req)[("store_lifetime", "-")][0], "blocked", "audit's blocked table")
    change(d, "DELETE FROM fail_on")
    d.ok("retry", str(req), "--wait")
    h.eq(map_states(d, "store_lifetime", "-", "-"), {"-": "succeeded"}, "map after the retry")
    lifetime_recompute(d)
    h.eq(d.json("stale")["stale"], [], "stale at the end")
    d.stop()


def test_unclosed_not_stale():
    """A rolling mart on a scheduled fact, build_future: false, at
    2026-04-01 03:00: a --no-downstream repair of 03-31 leaves its window's
    mart days older than it, but only 03-31 has closed; the six after it are
    not stale yet (03-31's own day... 04-06 rebuild them as they land), and
    backfill --stale rebuilds 03-31 instead of being refused for 04-01."""
    jobs = ROLLING.replace("  end: 2026-02-28\n", "").replace(
        "  partition: day\n  retries: 0\n", "  partition: day\n  retries: 0\n"
        "  start: 2026-03-25\n", 1)
    d = h.Daemon(jobs=jobs, warehouses={"sales": SEED}, name="wvopen",
                 clock="2026-04-01T03:00:00Z", settings={"build_future": "false"})
    d.set_clock("2026-04-01T04:00:00Z")
    change(d, "UPDATE events SET amount = amount + 100 WHERE dt = '2026-03-31'")
    d.backfill("fct", "2026-03-31", "2026-03-31", "--no-downstream")
    h.eq(stale_of(d, "mart_rolling_7d"), [("2026-03-31", [("fct", "2026-03-31")])],
         "stale: the closed mart day only")
    h.eq(d.status()["mart_rolling_7d"]["stale"], 1, "status's stale count")
    rebuild_stale(d, "mart_rolling_7d", ["2026-03-31"])
    d.stop()


if __name__ == "__main__":
    h.main([test_rolling_window_views, test_coarser_upstream_views,
            test_whole_table_views, test_unclosed_not_stale])
