#!/usr/bin/env python3
"""kill9.py - the kill -9 soak (issue 12): kill the daemon at random
moments of a backfill, restart it, and check after every restart and at
the end that nothing was lost, doubled or left half done.

    tests/bench/kill9.py [--kills 100] [--seed N] [--command] [--keep]

Not part of `meson test` (it takes a few minutes); see tests/bench/README.md.
The binaries come from $BACKFILLD / $BACKFILLCTL, or build/daemon/.

The SQL soak (default): the lessons' sales warehouse (harness.sales_seed(),
every fact row's revenue then off by 1000, so that each day differs from a
clean run) with the daily fact job and the downstream weekly
mart (harness.fact_job(), WEEKLY_JOB), max_concurrency 2.  A backfill of
the 28 days (and so 4 weeks of mart) is queued; the daemon is killed with
SIGKILL after a random delay (within a clean request's duration 7 times in
10, up to 1.5 times it twice, right after READY once), restarted, and killed again, a new
request being queued whenever the previous one is finished.  Checked:

  - after every kill: each fact partition holds exactly the rows of one
    clean run, or (not rewritten yet) the seed's rows; never a mix, an
    empty partition or duplicates;
  - after every restart (READY=1): no run that was 'running' at the kill
    is still 'running' in the state store;
  - at every request found finished, and at the end (after a last restart
    and `wait`): no run 'running' anywhere, every partition of the request
    (28 days, 4 weeks) succeeded exactly once in it, the fact equals one
    clean run of every day computed here independently (python's sqlite3
    on the seed), and the mart equals its weekly sums;
  - the daemon ends on SIGTERM with status 0 and no sanitizer report.

--command: a command job instead, which appends "start" and "end" lines
with its partition, pid and a timestamp to a file around a short sleep.
After the soak, two runs of one partition by different processes whose
start..end intervals overlap are counted.  A restarted daemon does not yet
kill the process group a killed one left behind (being fixed elsewhere),
so this variant reports the overlaps and fails only with --strict.

Exit status: 0 all checks held, 1 a check failed, 77 no binaries.
Python 3 standard library only.
"""

import argparse
import os
import random
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import harness as h  # noqa: E402

FIRST, LAST = h.ALL_DAYS          # 2026-01-26 .. 2026-02-22: 28 days
WEEKS = sorted({h.week_of(d) for d in h.days(FIRST, LAST)})  # 4 ISO weeks

FACT_COLS = "dt, store_id, sales, revenue_usd"

CMD_SCRIPT = r"""#!/bin/sh
# $1 = the partition.  Appends start and end lines (partition, pid, time in
# ns) around a short sleep; the soak looks for overlapping runs.  A run
# without an end line was killed with SIGKILL and counts as never ending.
log="$(dirname "$0")/runs.log"
# ended by a signal (a restarted daemon ending what a crashed one left
# running, SIGTERM to the group): the run ends here too
trap 'echo "end $1 $$ $(date +%s%N) killed" >> "$log"; exit 143' TERM INT
echo "start $1 $$ $(date +%s%N)" >> "$log"
sleep 0.$(( ($$ % 5) + 1 ))
echo "end $1 $$ $(date +%s%N)" >> "$log"
"""

CMD_JOB = """
- name: export
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  concurrency: 2
  command: ["/bin/sh", "{dir}/job.sh", "{partition}"]
"""


class Soak:
    """Figures of one soak."""

    def __init__(self):
        self.kills = 0
        self.restarts = 0
        self.requests = 0
        self.requests_checked = 0
        self.partitions_checked = 0   # fact partitions compared, in all
        self.after_kill = 0           # of which right after a kill
        self.recovered_runs = 0       # runs 'running' at a kill, requeued
        self.seed_partitions = 0      # partitions found not rewritten yet


def state(d, sql, params=()):
    con = sqlite3.connect("file:%s?mode=ro" % d.state_db, uri=True, timeout=30)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def fact_by_day(con):
    out = {}
    for r in con.execute("SELECT %s FROM fct_daily_sales" % FACT_COLS):
        out.setdefault(r[0], []).append((r[1], r[2], round(r[3], 2)))
    return {k: sorted(v) for k, v in out.items()}


# The seed's fact, mid-incident, differs from a clean run on 5 days only;
# every day is made to differ, so that a kill that left a partition half
# rewritten could not pass for either.
SEED = h.sales_seed() + "\nUPDATE fct_daily_sales SET revenue_usd = revenue_usd + 1000;\n"


def reference():
    """(seed fact, clean fact, clean mart) computed without the daemon."""
    con = sqlite3.connect(":memory:")
    con.executescript(SEED)
    seed = fact_by_day(con)
    for day in h.days(FIRST, LAST):
        con.execute("DELETE FROM fct_daily_sales WHERE dt = ?", (day,))
        con.execute("INSERT INTO fct_daily_sales (%s) SELECT dt, store_id, "
                    "COUNT(*), SUM(amount_usd) FROM raw_sales WHERE dt = ? "
                    "GROUP BY dt, store_id" % FACT_COLS, (day,))
    clean = fact_by_day(con)
    con.close()
    mart = {}
    for day, rows in clean.items():
        w = h.week_of(day)
        if w in WEEKS:
            mart[w] = mart.get(w, 0.0) + sum(r[2] for r in rows)
    return seed, clean, {w: round(v, 2) for w, v in mart.items()}


def check_fact_partitions(d, seed, clean, soak, settled):
    """Each day holds one clean run's rows (or, unless settled, the seed's)."""
    con = d.wh("sales")
    try:
        got = fact_by_day(con)
    finally:
        con.close()
    for day in h.days(FIRST, LAST):
        rows = got.get(day, [])
        soak.partitions_checked += 1
        if rows == clean.get(day, []):
            continue
        if not settled and rows == seed.get(day, []):
            soak.seed_partitions += 1
            continue
        h.fail("after kill %d: fct_daily_sales for %s holds %d rows that are "
               "neither one clean run (%d rows)%s"
               % (soak.kills, day, len(rows), len(clean.get(day, [])),
                  "" if settled else " nor the seed's (%d rows)" % len(seed.get(day, []))))


def check_settled(d, req, clean, mart, soak):
    """A finished request: nothing running, each partition succeeded once,
    the fact clean, the mart its weekly sums."""
    running = state(d, "SELECT id, job, partition_key FROM runs WHERE state = 'running'")
    h.eq(running, [], "runs left 'running' after request %d finished" % req)
    ok = state(d, "SELECT job, partition_key, count(*) FROM runs WHERE request_id = ? "
               "AND state = 'succeeded' GROUP BY job, partition_key", (req,))
    want = sorted([("fct_daily_sales", p, 1) for p in h.days(FIRST, LAST)]
                  + [("mart_weekly_sales", w, 1) for w in WEEKS])
    h.eq(sorted(ok), want, "succeeded runs per partition of request %d" % req)
    items = state(d, "SELECT state, count(*) FROM manifest WHERE request_id = ? "
                  "GROUP BY state", (req,))
    h.eq(items, [("succeeded", len(want))], "manifest states of request %d" % req)
    check_fact_partitions(d, None, clean, soak, settled=True)
    got = {w: round(v, 2) for w, v in d.query(
        "SELECT week_start, revenue_usd FROM mart_weekly_sales WHERE week_start BETWEEN ? AND ?",
        (WEEKS[0], WEEKS[-1]))}
    h.eq(got, mart, "mart_weekly_sales after request %d" % req)
    sums = {w: round(v, 2) for w, v in d.query(
        "SELECT date(dt, 'weekday 0', '-6 days'), SUM(revenue_usd) FROM fct_daily_sales "
        "WHERE dt BETWEEN ? AND ? GROUP BY 1", (FIRST, LAST))}
    h.eq(got, sums, "mart_weekly_sales against the fact's weekly sums")
    soak.requests_checked += 1


def request_done(d, req):
    rows = state(d, "SELECT finished_at FROM requests WHERE id = ?", (req,))
    return bool(rows) and rows[0][0] is not None


def start(d, stale, soak):
    """Restart after a kill; the runs that were running must not be."""
    d.start()
    soak.restarts += 1
    if stale:
        marks = ",".join("?" * len(stale))
        still = state(d, "SELECT id FROM runs WHERE state = 'running' AND id IN (%s)"
                      % marks, stale)
        h.eq(still, [], "runs 'running' at kill %d still 'running' after the restart"
             % soak.kills)
        soak.recovered_runs += len(stale)


def enqueue(d, soak, job):
    soak.requests += 1
    return d.enqueue("backfill", job, "--from", FIRST, "--to", LAST)


def soak_sql(args, rnd):
    soak = Soak()
    seed, clean, mart = reference()
    jobs = h.fact_job(1) + h.WEEKLY_JOB
    # a clean request on a daemon of its own first: its duration scales
    # the kill delays, and the soak's warehouse starts from the seed
    d = h.Daemon(jobs=jobs, warehouses={"sales": SEED},
                 settings={"max_concurrency": 2}, name="kill9-clean")
    t0 = time.monotonic()
    req = d.enqueue("backfill", "fct_daily_sales", "--from", FIRST, "--to", LAST)
    d.wait_request(req)
    span = time.monotonic() - t0
    check_settled(d, req, clean, mart, Soak())
    d.stop()
    print("clean request: %.0f ms; killing at random in 0..%.0f ms"
          % (span * 1000, span * 1500), flush=True)
    d = h.Daemon(jobs=jobs, warehouses={"sales": SEED},
                 settings={"max_concurrency": 2}, name="kill9")
    req = None
    stale = []
    while soak.kills < args.kills:
        if not d.alive():
            start(d, stale, soak)
        if req is None:
            if rnd.random() < 0.1:
                pass          # kill during start-up, before any request
            else:
                req = enqueue(d, soak, "fct_daily_sales")
        x = rnd.random()
        if x >= 0.1:       # else: at once, start-up recovery in flight
            time.sleep(rnd.uniform(0, span) if x < 0.8 else rnd.uniform(span, span * 1.5))
        d.kill9()
        soak.kills += 1
        stale = [r[0] for r in state(d, "SELECT id FROM runs WHERE state = 'running'")]
        check_fact_partitions(d, seed, clean, soak, settled=False)
        soak.after_kill += len(h.days(FIRST, LAST))
        if req is not None and request_done(d, req):
            check_settled(d, req, clean, mart, soak)
            req = None
        if soak.kills % 10 == 0:
            print("%d kills, %d requests (%d checked), %d runs recovered"
                  % (soak.kills, soak.requests, soak.requests_checked,
                     soak.recovered_runs), flush=True)
    start(d, stale, soak)
    if req is None:
        req = enqueue(d, soak, "fct_daily_sales")
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "the last request after the last restart: %r" % resp)
    check_settled(d, req, clean, mart, soak)
    d.stop()
    print("SQL soak: %d kills -9 survived, %d restarts; %d requests, each checked "
          "complete (%d partitions: %d days, %d weeks); %d fact partitions checked "
          "right after a kill (%d of them still held the seed's rows, the others one clean run's), %d in all; %d runs "
          "interrupted by a kill, each requeued and found not 'running' after "
          "the restart"
          % (soak.kills, soak.restarts, soak.requests, 28 + len(WEEKS), 28,
             len(WEEKS), soak.after_kill, soak.seed_partitions,
             soak.partitions_checked, soak.recovered_runs))
    h.eq(soak.requests_checked, soak.requests, "requests checked complete")
    return d


def overlaps(log):
    """Pairs of runs of one partition by different pids whose start..end
    intervals overlap; runs without an end line (killed) run to the end."""
    spans = {}
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) not in (4, 5):   # "end ... killed": ended by a signal
                continue
            what, part, pid, ns = parts[:4]
            key = (part, pid)
            s = spans.setdefault(key, [None, None])
            s[0 if what == "start" else 1] = int(ns)
    by_part = {}
    for (part, pid), (s, e) in spans.items():
        if s is not None:
            by_part.setdefault(part, []).append((s, e if e is not None else float("inf"), pid))
    found = []
    for part, runs in sorted(by_part.items()):
        runs.sort()
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                if runs[j][0] < runs[i][1] and runs[j][2] != runs[i][2]:
                    found.append((part, runs[i][2], runs[j][2]))
    return found, len(spans)


def soak_command(args, rnd):
    soak = Soak()
    d = h.Daemon(jobs=CMD_JOB, settings={"max_concurrency": 2}, name="kill9cmd", start=False)
    with open(os.path.join(d.dir, "job.sh"), "w") as f:
        f.write(CMD_SCRIPT)
    d.start()
    t0 = time.monotonic()
    req = enqueue(d, soak, "export")
    d.wait_request(req)
    span = time.monotonic() - t0
    req = None
    stale = []
    while soak.kills < args.kills:
        if not d.alive():
            start(d, stale, soak)
        if req is None:
            req = enqueue(d, soak, "export")
        time.sleep(rnd.uniform(0, span * 1.5))
        d.kill9()          # its job processes live on: that is the point
        soak.kills += 1
        stale = [r[0] for r in state(d, "SELECT id FROM runs WHERE state = 'running'")]
        if request_done(d, req):
            req = None
    start(d, stale, soak)
    if req is not None:
        d.wait_request(req)
    running = state(d, "SELECT id FROM runs WHERE state = 'running'")
    h.eq(running, [], "runs left 'running' at the end of the command soak")
    d.stop()
    time.sleep(1.0)        # let the orphans write their end lines
    d.kill_leftovers()
    found, nruns = overlaps(os.path.join(d.dir, "runs.log"))
    print("command soak: %d kills -9, %d restarts, %d requests, %d runs logged, "
          "%d overlapping runs of one partition by different processes%s"
          % (soak.kills, soak.restarts, soak.requests, nruns, len(found),
             (": " + ", ".join("%s (pids %s, %s)" % f for f in found[:5])) if found else ""))
    if found and args.strict:
        h.fail("%d partitions ran twice at once after a kill -9" % len(found))
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    ap.add_argument("--command", action="store_true", help="the command job variant")
    ap.add_argument("--strict", action="store_true",
                    help="--command: fail on overlapping runs instead of reporting them")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    h.binaries()
    seed = args.seed if args.seed is not None else int(time.time())
    print("seed %d (rerun with --seed %d)" % (seed, seed), flush=True)
    rnd = random.Random(seed)
    t0 = time.monotonic()
    d = None
    try:
        d = (soak_command if args.command else soak_sql)(args, rnd)
    except Exception as e:
        import traceback
        traceback.print_exc()
        for x in h._ALL:
            print(x.log_tail(60))
            x.close(keep=True)
        print("FAIL (%s) after %.0f s, seed %d" % (type(e).__name__, time.monotonic() - t0, seed))
        sys.exit(1)
    for x in h._ALL:
        x.close(keep=args.keep)
    print("ok in %.0f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
