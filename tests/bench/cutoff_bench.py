#!/usr/bin/env python3
"""cutoff_bench.py - early cut-off downstream (docs/cutoff.md): a 90-day
backfill of a day fact whose source changed on 10 of the days, with a
weekly mart and a monthly rollup downstream, with cut-off and with
--no-cutoff, alternating in the same run.

Each round first changes the source of the same 10 days again (so they
always come out different), then backfills the whole 90-day window with
--wait and measures: the wall time of the request (backfillctl's start to
its exit), the downstream runs that ran and were skipped, and the
downstream warehouse time (the wk and mo runs' durations from runs
--json).  The changed days are a burst of consecutive days (an incident
in the deploy window) or, with --scatter, spread over the window.
Prints the medians of each mode and the ratios; target: downstream runs
equal to the weeks and months that hold a changed day.  A second daemon
with the fact alone (no downstream, so no fingerprint read), backfilled
in the same rounds, gives the fingerprints' cost per fact run.

    BACKFILLD=build-release/daemon/backfilld \\
    BACKFILLCTL=build-release/daemon/backfillctl \\
        python3 tests/bench/cutoff_bench.py [--rounds 5] [--rows 2000] [--scatter]

--smoke (the bench suite, tests/bench/meson.build): a small warehouse,
one round each, and a failure when the marts differ between the modes or
the downstream runs are not the affected windows (no timing asserted).
"""
import argparse
import datetime
import os
import sqlite3
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness as h  # noqa: E402

FIRST = datetime.date(2026, 1, 5)   # a Monday
NDAYS = 90
NCHANGED = 10

JOBS = """
- name: fct
  warehouse: dw
  partition: day
  start: 2026-01-01
  catchup: false
  concurrency: 4
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT dt, store, item, v FROM src WHERE dt = :partition;
- name: wk
  warehouse: dw
  partition: week
  start: 2025-12-29
  upstream: [fct]
  concurrency: 4
  table: wk
  partition_column: week
  sql: |
    DELETE FROM wk WHERE week = :partition;
    INSERT INTO wk SELECT CAST(:partition AS TEXT), store, item, SUM(v),
        COUNT(*), MAX(v) - MIN(v)
      FROM fct WHERE dt >= :partition_start AND dt < :partition_end
      GROUP BY store, item;
- name: mo
  warehouse: dw
  partition: month
  start: 2026-01-01
  upstream: [wk]
  concurrency: 4
  table: mo
  partition_column: month
  sql: |
    DELETE FROM mo WHERE month = :partition;
    INSERT INTO mo SELECT CAST(:partition AS TEXT), store, SUM(total), SUM(n)
      FROM wk WHERE week >= :partition_start AND week < :partition_end
      GROUP BY store;
"""

SCHEMA = """
CREATE TABLE src (dt TEXT, store INTEGER, item INTEGER, v INTEGER);
CREATE INDEX src_dt ON src (dt);
CREATE TABLE fct (dt TEXT, store INTEGER, item INTEGER, v INTEGER);
CREATE INDEX fct_dt ON fct (dt);
CREATE TABLE wk (week TEXT, store INTEGER, item INTEGER, total INTEGER,
                 n INTEGER, spread INTEGER);
CREATE INDEX wk_week ON wk (week);
CREATE TABLE mo (month TEXT, store INTEGER, total INTEGER, n INTEGER);
CREATE INDEX mo_month ON mo (month);
"""


def days():
    return [(FIRST + datetime.timedelta(days=i)).isoformat() for i in range(NDAYS)]


def changed_days(scatter):
    ds = days()
    if scatter:
        return [ds[(i * 37 + 11) % NDAYS] for i in range(NCHANGED)]
    return ds[40:40 + NCHANGED]


def windows(changed):
    """The weeks and months that hold a changed day (a week straddling
    two months feeds both)."""
    weeks = sorted({h.week_of(x) for x in changed})
    months = set()
    for wk in weeks:
        for day in h.days(wk, h.days(wk, "2026-12-31")[6]):
            months.add(h.month_of(day))
    return weeks, sorted(months)


def seed(path, rows):
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO src VALUES (?, ?, ?, ?)",
                    ((dt, r % 50, r % 200, (r * 7 + i) % 1000)
                     for i, dt in enumerate(days()) for r in range(rows)))
    con.commit()
    con.close()


def change(path, changed, k):
    con = sqlite3.connect(path)
    con.execute("UPDATE src SET v = v + ? WHERE dt IN (%s)" % ",".join("?" * len(changed)),
                [k] + changed)
    con.commit()
    con.close()


def marts(path):
    con = sqlite3.connect(path)
    try:
        return (con.execute("SELECT * FROM wk ORDER BY 1, 2, 3").fetchall(),
                con.execute("SELECT * FROM mo ORDER BY 1, 2").fetchall())
    finally:
        con.close()


def one(d, cutoff):
    """One backfill of the window: (wall s, {job: {state: n}}, downstream
    warehouse s)."""
    argv = [d.backfillctl, "--socket", d.sock, "backfill", "fct", "--from", days()[0],
            "--to", days()[-1], "--wait"] + ([] if cutoff else ["--no-cutoff"])
    t = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t
    h.check(p.returncode == 0, "backfill failed: %s %s" % (p.stdout, p.stderr))
    req = int(p.stdout.split("request ")[1].split(":")[0])
    counts, down_s, fct = {}, 0.0, []
    for r in d.json("runs", "--request", str(req)):
        counts.setdefault(r["job"], {}).setdefault(r["state"], 0)
        counts[r["job"]][r["state"]] += 1
        if r["state"] != "succeeded":
            continue
        took = (h.parse_iso(r["finished_at"]) - h.parse_iso(r["started_at"])).total_seconds()
        if r["job"] == "fct":
            fct.append(took)
        else:
            down_s += took
    counts["fct_median_s"] = statistics.median(fct)
    return wall, counts, down_s


def fact_alone_daemon(rows):
    """The fact alone, without downstream jobs: no fingerprint is read."""
    d = h.Daemon(jobs=JOBS[:JOBS.index("- name: wk")], warehouses={"dw": None}, clock=None,
                 name="cutoffbench0", settings={"max_concurrency": 4, "max_backfill": 1000},
                 start=False)
    seed(d.warehouses["dw"], rows)
    d.start()
    d.ok("backfill", "fct", "--from", days()[0], "--to", days()[-1], "--wait")
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=2000, help="source rows per day")
    ap.add_argument("--scatter", action="store_true", help="changed days spread out")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.rows = 1, 20
    d = h.Daemon(jobs=JOBS, warehouses={"dw": None}, clock=None, name="cutoffbench",
                 settings={"max_concurrency": 4, "max_backfill": 1000}, start=False)
    seed(d.warehouses["dw"], a.rows)
    d.start()
    changed = changed_days(a.scatter)
    want_wk, want_mo = windows(changed)
    d.ok("backfill", "fct", "--from", days()[0], "--to", days()[-1], "--wait")
    d0 = None if a.smoke else fact_alone_daemon(a.rows)
    res = {True: [], False: []}
    alone = []
    k = 0
    for rnd in range(a.rounds):
        for cutoff in ((True, False) if rnd % 2 == 0 else (False, True)):
            k += 1
            change(d.warehouses["dw"], changed, k)
            wall, counts, down_s = one(d, cutoff)
            res[cutoff].append((wall, counts, down_s, marts(d.warehouses["dw"])))
        if d0 is not None:
            change(d0.warehouses["dw"], changed, k)
            alone.append(one(d0, True)[1]["fct_median_s"])
    if d0 is not None:
        d0.stop()
    # cut-off left the marts what a full rebuild makes of the same source
    change(d.warehouses["dw"], changed, k + 1)
    one(d, True)
    after_cutoff = marts(d.warehouses["dw"])
    one(d, False)
    h.eq(after_cutoff, marts(d.warehouses["dw"]), "marts after cut-off vs a full rebuild")
    d.stop()
    all_wk = len({h.week_of(x) for x in days()})
    all_mo = len(windows(days())[1])
    for cutoff in (True, False):
        for wall, counts, _, _ in res[cutoff]:
            ran = (counts["wk"].get("succeeded", 0), counts["mo"].get("succeeded", 0))
            want = (len(want_wk), len(want_mo)) if cutoff else (all_wk, all_mo)
            h.eq(ran, want, "downstream runs (weeks, months) with%s cut-off"
                 % ("" if cutoff else "out"))
    if a.smoke:
        print("smoke: downstream runs with cut-off %d weeks + %d months (of %d + %d),"
              " marts equal to a full rebuild" % (len(want_wk), len(want_mo), all_wk, all_mo))
        return
    med = {c: (statistics.median(r[0] for r in res[c]),
               statistics.median(r[2] for r in res[c])) for c in res}
    print("90-day backfill, %d changed days (%s), %d source rows a day, %d rounds each:"
          % (NCHANGED, "scattered" if a.scatter else "a burst", a.rows, a.rounds))
    print("  downstream runs: with cut-off %d weeks + %d months (the affected windows),"
          " without %d + %d: %.2fx fewer"
          % (len(want_wk), len(want_mo), all_wk, all_mo,
             (all_wk + all_mo) / max(1, len(want_wk) + len(want_mo))))
    print("  downstream warehouse time: median %.3f s with, %.3f s without: %.2fx less"
          % (med[True][1], med[False][1], med[False][1] / max(med[True][1], 1e-9)))
    print("  request wall time: median %.2f s with, %.2f s without: %.2fx (%.0f%% saved)"
          % (med[True][0], med[False][0], med[False][0] / med[True][0],
             100 * (1 - med[True][0] / med[False][0])))
    alone = statistics.median(alone)
    withfp = statistics.median(r[1]["fct_median_s"] for c in res for r in res[c])
    print("  fingerprints: a fact run takes median %.1f ms reading them, %.1f ms without"
          " downstream (none read): %.2fx" % (withfp * 1000, alone * 1000, withfp / alone))


if __name__ == "__main__":
    main()
