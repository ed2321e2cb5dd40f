#!/usr/bin/env python3
"""Early cut-off downstream (docs/cutoff.md), on a SQLite warehouse, or on
PostgreSQL with --postgres (the throwaway cluster of test_postgres.py;
exit 77 without a server unless BACKFILLD_REQUIRE_POSTGRES=1).

A day fact, a weekly mart and a monthly rollup, each a SQL job with table:
and partition_column:.  The lesson's deploy window: the whole window of
days is rebuilt, only some days come out different from the fact as it
was; exactly the weeks and months holding a changed day are rebuilt, the
others are recorded `skipped` (inputs unchanged) in runs, audit, map and
the --wait summary, and nothing is left stale.  A chain with one changed
day; a week already stale is rebuilt though its days came out the same;
--no-cutoff rebuilds everything; --dry-run says the downstream is
conditional; a code change of the weekly mart rebuilds it whatever its
inputs did."""
import os
import re
import sys

import harness as h

PG = "--postgres" in sys.argv
if PG:
    import test_postgres as tp

# Text dates on both warehouses: the same SQL runs on each.
SEED = """
DROP TABLE IF EXISTS src;
DROP TABLE IF EXISTS fct;
DROP TABLE IF EXISTS wk;
DROP TABLE IF EXISTS mo;
CREATE TABLE src (dt TEXT, store TEXT, v INTEGER);
CREATE TABLE fct (dt TEXT, store TEXT, v INTEGER);
CREATE TABLE wk (week TEXT, total INTEGER);
CREATE TABLE mo (month TEXT, total INTEGER);
"""

FIRST, LAST = "2026-01-05", "2026-03-29"   # Monday .. Sunday: 12 ISO weeks


def jobs(wk_extra=""):
    return """
- name: fct
  warehouse: dw
  partition: day
  start: 2026-01-01
  catchup: false
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT dt, store, v FROM src WHERE dt = :partition;
- name: wk
  warehouse: dw
  partition: week
  start: 2025-12-29
  upstream: [fct]
  max_backfill: 12
  table: wk
  partition_column: week
  sql: |
    DELETE FROM wk WHERE week = :partition;
    INSERT INTO wk SELECT CAST(:partition AS TEXT), COALESCE(SUM(v), 0)%s
      FROM fct WHERE dt >= :partition_start AND dt < :partition_end;
- name: mo
  warehouse: dw
  partition: month
  start: 2026-01-01
  upstream: [wk]
  table: mo
  partition_column: month
  sql: |
    DELETE FROM mo WHERE month = :partition;
    INSERT INTO mo SELECT CAST(:partition AS TEXT), COALESCE(SUM(total), 0)
      FROM wk WHERE week >= :partition_start AND week < :partition_end;
- name: plain
  warehouse: dw
  partition: day
  start: 2026-01-01
  catchup: false
  sql: SELECT 1
- name: plainwk
  warehouse: dw
  partition: week
  start: 2025-12-29
  upstream: [plain]
  sql: SELECT 1
""" % wk_extra


class Warehouse:
    """The test's view of the warehouse, whichever it is."""

    def __init__(self):
        if PG:
            self.c = tp.cluster()
            self.c.fresh_db()
            self.c.as_etl(SEED)
        self.d = None

    def daemon(self, text):
        if PG:
            return tp.pg_daemon(text, tp.pg_warehouse("dw"), name="pgcutoff", clock=None,
                                settings={"max_concurrency": 4,
                                          "max_backfill": 500})
        return h.Daemon(jobs=text, warehouses={"dw": SEED}, clock=None, name="cutoff",
                        settings={"max_concurrency": 4, "max_backfill": 500,
                                  "metrics_file": "backfilld.prom"})

    def exec(self, sql):
        if PG:
            self.c.as_etl(sql)
        else:
            con = __import__("sqlite3").connect(self.d.warehouses["dw"])
            con.executescript(sql)
            con.commit()
            con.close()

    def rows(self, sql):
        if PG:
            return [tuple(r) for r in self.c.psql(sql)]
        return [tuple(str(x) for x in r) for r in self.d.query(sql, wh="dw")]


def seed_src(w):
    vals = []
    for i, day in enumerate(h.days(FIRST, LAST)):
        for store in ("a", "b"):
            vals.append("('%s', '%s', %d)" % (day, store, i + (store == "b")))
    w.exec("DELETE FROM src; INSERT INTO src VALUES %s;" % ", ".join(vals))


def by_state(runs, job):
    """{state: sorted partitions} of a job's runs."""
    out = {}
    for r in h.by_job(runs, job):
        out.setdefault(r["state"], []).append(r["partition"])
    return {k: sorted(v) for k, v in out.items()}


def request_runs(d, req):
    return d.json("runs", "--request", str(req))


def wait_backfill(d, *args):
    """backfill ... --wait; (request id, stdout)."""
    out = d.ok("backfill", *args, "--wait")
    m = re.search(r"request (\d+)", out)
    h.check(m, "backfill --wait printed no request id:\n%s" % out)
    return int(m.group(1)), out


def weeks_of(days):
    return sorted({h.week_of(x) for x in days})


ALL_WEEKS = weeks_of(h.days(FIRST, LAST))
ALL_MONTHS = ["2026-01-01", "2026-02-01", "2026-03-01"]


def months_of_weeks(weeks):
    """The months a week feeds (a week straddling two feeds both)."""
    out = set()
    for wk in weeks:
        for day in h.days(wk, h.days(wk, "2026-12-31")[6]):
            out.add(h.month_of(day))
    return sorted(out)


def test_deploy_window(w, d):
    # the window built once from scratch: everything ran
    req, _ = wait_backfill(d, "fct", "--from", FIRST, "--to", LAST)
    runs = request_runs(d, req)
    h.eq(by_state(runs, "wk"), {"succeeded": ALL_WEEKS}, "first build: every week ran")
    h.eq(by_state(runs, "mo"), {"succeeded": ALL_MONTHS}, "first build: every month ran")

    # the deploy changed the source of two days, both in January
    changed = ["2026-01-14", "2026-01-27"]
    w.exec("UPDATE src SET v = v + 100 WHERE dt IN ('%s')" % "', '".join(changed))
    before_wk = w.rows("SELECT week, total FROM wk ORDER BY week")
    req, out = wait_backfill(d, "fct", "--from", FIRST, "--to", LAST,
                             "--reason", "deploy window")
    runs = request_runs(d, req)
    days = h.days(FIRST, LAST)
    h.eq(by_state(runs, "fct"), {"succeeded": days}, "every day of the window rebuilt")
    want_wk = weeks_of(changed)
    h.eq(by_state(runs, "wk"), {"succeeded": want_wk,
                                "skipped": [x for x in ALL_WEEKS if x not in want_wk]},
         "exactly the weeks with a changed day rebuilt, the others skipped")
    want_mo = months_of_weeks(want_wk)
    h.eq(by_state(runs, "mo"), {"succeeded": want_mo,
                                "skipped": [x for x in ALL_MONTHS if x not in want_mo]},
         "exactly the months with a changed week rebuilt (chain)")
    for r in runs:
        if r["state"] == "skipped":
            h.eq(r["error"], "inputs unchanged", "a skipped run's reason in runs --json")
            h.check(r["id"] is not None and r["finished_at"], "a skip is a runs row: %r" % r)
    skipped = sum(1 for r in runs if r["state"] == "skipped")
    h.check(re.search(r"\b%d skipped \(inputs unchanged\)" % skipped, out),
            "--wait's summary names the skipped:\n%s" % out)
    # the rebuilt weeks hold the new totals, the skipped ones what they held
    after_wk = dict(w.rows("SELECT week, total FROM wk ORDER BY week"))
    for wk, total in before_wk:
        if wk in want_wk:
            h.check(after_wk[wk] != total, "week %s was rebuilt with its change" % wk)
        else:
            h.eq(after_wk[wk], total, "skipped week %s unchanged" % wk)
    # runs (text), audit (text and JSON), map, stale, status
    text = d.ok("runs", "--request", str(req), "--state", "skipped")
    h.check("inputs unchanged" in text and "skipped" in text,
            "runs --state skipped lists the skips:\n%s" % text)
    audit = d.json("audit", "--request", str(req))
    sk = sorted((p["job"], p["partition"]) for p in audit["partitions"]
                if p.get("state") == "skipped")
    h.eq(sk, sorted((r["job"], r["partition"]) for r in runs if r["state"] == "skipped"),
         "audit --json: the skipped partitions")
    for p in audit["partitions"]:
        if p.get("state") == "skipped":
            h.eq(p.get("reason"), "inputs unchanged", "audit --json reason of %r" % p)
        if p["job"] == "fct" and p["partition"] in changed:
            h.check(p["checksum_before"] != p["checksum_after"],
                    "a changed day's checksums differ: %r" % p)
        elif p["job"] == "fct":
            h.check(p["checksum_before"] and p["checksum_before"] == p["checksum_after"],
                    "an unchanged day's checksums are equal: %r" % p)
    atext = d.ok("audit", "--request", str(req))
    h.check("skipped" in atext and "inputs unchanged" in atext,
            "audit's table shows the skips:\n%s" % atext)
    m = d.json("map", "wk", "--from", ALL_WEEKS[0], "--to", ALL_WEEKS[-1])
    h.eq(sum(r["count"] for r in m["ranges"] if r["state"] == "skipped"),
         len(ALL_WEEKS) - len(want_wk), "map --json: skipped weeks")
    mtext = d.ok("map", "wk", "--from", ALL_WEEKS[0], "--to", ALL_WEEKS[-1])
    h.check(re.search(r"u skipped %d" % (len(ALL_WEEKS) - len(want_wk)), mtext),
            "map's legend: u skipped N:\n%s" % mtext)
    h.eq(d.json("stale")["stale"], [],
         "nothing stale after the skips (an unchanged input makes nothing stale)")
    # the log line of each skip, and the report page's columns
    with open(d.log) as f:
        log = f.read()
    for r in runs:
        if r["state"] == "skipped":
            h.check("job=%s partition=%s request=%d run=%d skipped: inputs unchanged"
                    % (r["job"], r["partition"], req, r["id"]) in log,
                    "the log names the skip of %s %s" % (r["job"], r["partition"]))
    page = os.path.join(d.dir, "report.html")
    d.ok("report", "--html", page)
    with open(page) as f:
        html = f.read()
    h.check(html.count("<th>skipped</th>") == 2, "the report's request tables have a skipped column")
    h.check(re.search(r"<tr><td>%d</td>.*?</td><td>%d</td><td>%d</td><td>0</td>"
                      % (req, len(days) + len(want_wk) + len(want_mo), skipped), html),
            "the report's audit row of request %d: succeeded %d, skipped %d"
            % (req, len(days) + len(want_wk) + len(want_mo), skipped))
    boot = {r["partition"] for r in d.runs(include_boot=True)
            if r["request"] in d.boot_requests and r["job"] == "wk"}
    h.eq(d.status()["wk"]["succeeded"], len(set(ALL_WEEKS) | boot),
         "status: a skipped week's build stands (counted succeeded)")
    return req


def test_chain_one_day(w, d):
    # one changed day in February: its week and month only
    w.exec("UPDATE src SET v = v + 7 WHERE dt = '2026-02-11'")
    req, _ = wait_backfill(d, "fct", "--from", "2026-02-02", "--to", "2026-03-08")
    runs = request_runs(d, req)
    h.eq(by_state(runs, "wk"), {"succeeded": ["2026-02-09"],
                                "skipped": ["2026-02-02", "2026-02-16", "2026-02-23",
                                            "2026-03-02"]},
         "chain: the changed day's week only")
    h.eq(by_state(runs, "mo"), {"succeeded": ["2026-02-01"], "skipped": ["2026-03-01"]},
         "chain: an unchanged week skips its month unless another week of it changed")


def test_already_stale(w, d):
    # a day rebuilt identical without its downstream leaves nothing stale
    d.ok("backfill", "fct", "--from", "2026-03-17", "--to", "2026-03-17",
         "--no-downstream", "--wait")
    h.eq(d.json("stale")["stale"], [], "an identical rebuild with --no-downstream: not stale")
    # a changed day rebuilt without its downstream leaves its week stale ...
    w.exec("UPDATE src SET v = v + 1 WHERE dt = '2026-03-18'")
    req, _ = wait_backfill(d, "fct", "--from", "2026-03-18", "--to", "2026-03-18",
                           "--no-downstream")
    [p] = d.json("audit", "--request", str(req))["partitions"]
    h.check(p["checksum_before"] != p["checksum_after"], "the day came out changed: %r" % p)
    h.eq(sorted((p["job"], p["partition"]) for p in d.json("stale")["stale"]),
         [("wk", "2026-03-16")], "the week left stale")
    # ... so a window whose days all come out the same still rebuilds it
    req, _ = wait_backfill(d, "fct", "--from", "2026-03-16", "--to", "2026-03-29")
    runs = request_runs(d, req)
    h.eq(by_state(runs, "wk"), {"succeeded": ["2026-03-16"], "skipped": ["2026-03-23"]},
         "a stale week is rebuilt, never skipped")
    h.eq(by_state(runs, "mo"), {"succeeded": ["2026-03-01"]},
         "the rebuilt week came out changed: its month runs")


def test_no_cutoff_and_dry_run(w, d):
    out = d.ok("backfill", "fct", "--from", "2026-01-05", "--to", "2026-01-18", "--dry-run")
    h.check(re.search(r"cutoff: 3 of the 3 downstream partitions are conditional", out),
            "--dry-run says the downstream is conditional:\n%s" % out)
    plan = d.json("backfill", "fct", "--from", "2026-01-05", "--to", "2026-01-18", "--dry-run")
    h.eq((plan["cutoff"], plan["conditional"]), (True, 3), "--dry-run --json cutoff")
    h.eq(sorted(p["partition"] for p in plan["partitions"] if p["conditional"]),
         ["2026-01-01", "2026-01-05", "2026-01-12"], "conditional partitions in --json")
    out = d.ok("backfill", "fct", "--from", "2026-01-05", "--to", "2026-01-18", "--dry-run",
               "--no-cutoff")
    h.check("cutoff: off (--no-cutoff)" in out, "--dry-run --no-cutoff:\n%s" % out)
    req, out = wait_backfill(d, "fct", "--from", "2026-01-05", "--to", "2026-01-18",
                             "--no-cutoff")
    runs = request_runs(d, req)
    h.eq(by_state(runs, "wk"), {"succeeded": ["2026-01-05", "2026-01-12"]},
         "--no-cutoff rebuilds the unchanged weeks")
    h.eq(by_state(runs, "mo"), {"succeeded": ["2026-01-01"]}, "--no-cutoff: and the month")
    h.check("skipped" not in out, "--no-cutoff's summary has no skip:\n%s" % out)
    h.check("; no cutoff: every downstream partition is rebuilt" in out,
            "--no-cutoff's answer says so:\n%s" % out)
    ans = d.json("backfill", "fct", "--from", "2026-01-05", "--to", "2026-01-05",
                 "--no-cutoff")
    h.eq(ans["cutoff"], False, "backfill --no-cutoff --json: cutoff")
    d.ok("wait", str(ans["request"]))
    # the same window without the flag: nothing downstream runs
    req, _ = wait_backfill(d, "fct", "--from", "2026-01-05", "--to", "2026-01-18")
    runs = request_runs(d, req)
    h.eq((by_state(runs, "wk"), by_state(runs, "mo")),
         ({"skipped": ["2026-01-05", "2026-01-12"]}, {"skipped": ["2026-01-01"]}),
         "the same window with cut-off: all skipped")


def built_weeks(d):
    return sorted(r[0] for r in d.state_rows(
        "SELECT partition_key FROM partitions WHERE job = 'wk'"))


def test_code_change(w, d):
    # the weekly mart's SQL changes: its weeks rebuild although their
    # inputs came out the same (its own code version differs)
    weeks = built_weeks(d)
    d.write_config(d.config_text.replace("COALESCE(SUM(v), 0)\n", "COALESCE(SUM(v), 0) + 0\n"))
    for args in (("--dry-run",), ()):
        out = d.ok("reload", *args)
        h.check(re.search(r"wk: %d partitions built by older code versions; rebuild them:"
                          r" backfillctl backfill wk --changed --from D --to D \(they are"
                          r" above its max_backfill" % len(weeks), out),
                "reload %s names what the old version built:\n%s" % (args, out))
        h.check("estimate:" not in out.split("wk:")[1],
                "no estimate of a request that would be refused:\n%s" % out)
    rep = d.json("reload", "--dry-run")
    h.eq(rep["rebuild"], [], "reload --dry-run --json: nothing changed since")
    req, _ = wait_backfill(d, "fct", "--from", "2026-01-05", "--to", "2026-01-18")
    runs = request_runs(d, req)
    h.eq(by_state(runs, "wk"), {"succeeded": ["2026-01-05", "2026-01-12"]},
         "a code change rebuilds the week though its days came out the same")
    h.eq(by_state(runs, "mo"), {"skipped": ["2026-01-01"]},
         "... and the month above it, whose weeks came out the same, is skipped")
    return weeks


def test_changed(w, d, weeks):
    # backfill wk --changed: the weeks whose newest build used an older
    # version; refused whole above max_backfill, like any request (wk's
    # bound lowered to 10 here: its 12 weeks downstream of the 12-week
    # window above count against it too)
    d.write_config(d.config_text.replace("max_backfill: 12", "max_backfill: 10"))
    d.ok("reload")
    left = [x for x in weeks if x not in ("2026-01-05", "2026-01-12")]
    h.check(len(left) > 10, "more weeks left than wk's max_backfill: %r" % left)
    rc, out, err = d.ctl("backfill", "wk", "--changed")
    e = h.one_line_error(rc, out, err, 2, "--changed above max_backfill")
    h.check("refused: the set built by other code versions is %d partitions" % len(left) in e
            and "nothing was queued" in e, "refusal: %r" % e)
    # within bounds
    plan = d.json("backfill", "wk", "--changed", "--from", "2026-01-19", "--to", "2026-02-15",
                  "--dry-run")
    h.eq([p["partition"] for p in plan["partitions"] if not p["downstream"]],
         ["2026-01-19", "2026-01-26", "2026-02-02", "2026-02-09"], "--changed --from --to")
    req, _ = wait_backfill(d, "wk", "--changed", "--from", "2026-01-19", "--to", "2026-02-15")
    runs = request_runs(d, req)
    h.eq(by_state(runs, "wk"), {"succeeded": ["2026-01-19", "2026-01-26", "2026-02-02",
                                              "2026-02-09"]}, "--changed within bounds ran")
    h.eq(sorted(set(r["code_version"] for r in h.by_job(runs, "wk"))),
         [j["code_version"] for j in d.json("jobs")["jobs"] if j["name"] == "wk"],
         "rebuilt by the current version")
    h.eq(sorted(set(r["state"] for r in h.by_job(runs, "mo"))), ["skipped"],
         "the months above came out the same: skipped")
    # the rest, without bounds, then nothing
    rest = [x for x in left if x not in ("2026-01-19", "2026-01-26", "2026-02-02",
                                         "2026-02-09")]
    req, _ = wait_backfill(d, "wk", "--changed")
    h.eq(by_state(request_runs(d, req), "wk"), {"succeeded": rest}, "--changed: the rest")
    out = d.ok("backfill", "wk", "--changed")
    h.check("nothing to run" in out and "other than" in out, "--changed once all rebuilt: %r" % out)
    out = d.ok("reload")
    h.check("wk:" not in out, "a reload without a code change names no rebuild:\n%s" % out)
    # the fact's code changes: reload --dry-run names the command and its
    # estimate (within max_backfill: wk's too, for its weeks downstream)
    days = [r[0] for r in d.state_rows("SELECT partition_key FROM partitions WHERE job = 'fct'")]
    d.write_config(d.config_text.replace("max_backfill: 10", "max_backfill: 20"))
    d.ok("reload")
    d.write_config(d.config_text.replace("SELECT dt, store, v FROM src",
                                         "SELECT dt, store, v + 0 FROM src"))
    out = d.ok("reload", "--dry-run")
    h.check(re.search(r"fct: %d partitions built by older code versions; rebuild them:"
                      r" backfillctl backfill fct --changed\n  estimate: \d" % len(days), out),
            "reload --dry-run: the command and its estimate:\n%s" % out)
    [rb] = d.json("reload", "--dry-run")["rebuild"]
    h.eq((rb["job"], rb["partitions"], rb["command"], rb["above_max_backfill"]),
         ("fct", len(days), "backfillctl backfill fct --changed", False),
         "reload --dry-run --json: rebuild")
    h.check(rb["estimate"] and rb["estimate"]["seconds"] >= 0, "an estimate: %r" % rb)
    d.ok("reload")
    plan = d.json("backfill", "fct", "--changed", "--dry-run")
    h.eq(sum(1 for p in plan["partitions"] if not p["downstream"]), len(days),
         "backfill fct --changed --dry-run: every day the old version built")
    h.check(plan["estimate"] is not None, "backfill --changed --dry-run has its estimate")


def test_no_fingerprint(w, d):
    # an input without table: and partition_column: has no fingerprint:
    # what it feeds always runs
    for _ in range(2):
        req, _ = wait_backfill(d, "plain", "--from", "2026-01-05", "--to", "2026-01-06")
        h.eq(by_state(request_runs(d, req), "plainwk"), {"succeeded": ["2026-01-05"]},
             "the downstream of an input without a fingerprint runs")
    plan = d.json("backfill", "plain", "--from", "2026-01-05", "--to", "2026-01-06",
                  "--dry-run")
    h.eq(plan["conditional"], 0, "... and --dry-run calls none of it conditional")


def run_all():
    w = Warehouse()
    d = w.d = w.daemon(jobs())
    seed_src(w)
    test_deploy_window(w, d)
    test_no_fingerprint(w, d)
    test_chain_one_day(w, d)
    test_already_stale(w, d)
    test_no_cutoff_and_dry_run(w, d)
    weeks = test_code_change(w, d)
    test_changed(w, d, weeks)
    skipped = len(d.json("runs", "--job", "wk", "--state", "skipped"))
    d.stop()
    if not PG:
        # the metrics count the skips (written at shutdown)
        with open(os.path.join(d.dir, "backfilld.prom")) as f:
            prom = f.read()
        h.check('backfilld_runs_total{job="wk",state="skipped"} %d\n' % skipped in prom,
                "backfilld_runs_total counts the %d skips of wk:\n%s" % (skipped, prom[:3000]))


def main():
    if PG:
        if not os.environ.get("BACKFILLD"):
            h.binaries()
        try:
            tp.cluster()
            h.main([run_all])
        finally:
            if tp.CLUSTER is not None:
                tp.CLUSTER.close()
    else:
        h.main([run_all])


if __name__ == "__main__":
    main()
