#!/usr/bin/env python3
"""A job in its own upstream: a running total (issue 41; DESIGN, "A job in
its own upstream").  revenue_to_date's day D is day D-1's total plus the
lesson's fact of D (upstream [fct_daily_sales, {job: revenue_to_date,
lookback: 1}]).  Built from the buggy fact, then the fact's 2026-02-08..12
repaired: revenue_to_date is rebuilt from 02-08 to its newest built day
(02-22), each day once, strictly in order (each after the one before it
finished, and after its repaired fact day), with concurrency 4 on the job;
nothing else runs; the table then equals a recompute and nothing is stale;
--dry-run lists the cascade.  Cut-off stops the cascade at the first day
that comes out identical.  A cascade above the job's max_backfill is
refused whole, naming job, count and bound.  kill -9 during a cascade,
then a restart: the cascade resumes, in order, each day the result of one
clean run (a command job blocking on a FIFO gives the moment: no sleep)."""
import os
import re
import select
import signal

import harness as h

FIRST, LAST = h.ALL_DAYS                 # 2026-01-26 .. 2026-02-22
REPAIRED = h.days(*h.WINDOW)             # 2026-02-08 .. 2026-02-12
CASCADE = h.days("2026-02-08", LAST)     # what the repair rebuilds of the total

SEED_TOTAL = """
CREATE TABLE revenue_to_date (dt TEXT PRIMARY KEY, revenue_usd REAL);
"""

# the lesson's fact (no schedule: no start), fingerprinted (table,
# partition_column) for cut-off
FACT = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  concurrency: 4
  table: fct_daily_sales
  partition_column: dt
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
"""

TOTAL = """
- name: revenue_to_date
  warehouse: sales
  partition: day
  start: 2026-01-26
  concurrency: 4
  max_backfill: %(bound)d
  table: revenue_to_date
  partition_column: dt
  upstream:
    - fct_daily_sales
    - {job: revenue_to_date, lookback: 1}
  sql: |
    DELETE FROM revenue_to_date WHERE dt = :partition;
    INSERT INTO revenue_to_date (dt, revenue_usd)
    SELECT :partition,
      COALESCE((SELECT revenue_usd FROM revenue_to_date
                WHERE dt = date(:partition, '-1 day')), 0)
      + COALESCE((SELECT SUM(revenue_usd) FROM fct_daily_sales
                  WHERE dt = :partition), 0);
"""


def daemon(name, bound=40, total=TOTAL):
    """On the real clock: staleness compares when partitions were built."""
    return h.Daemon(jobs=FACT + total % {"bound": bound},
                    warehouses={"sales": h.sales_seed() + SEED_TOTAL},
                    settings={"max_concurrency": 8}, name=name, clock=None)


def recompute(d, what):
    """Every day of revenue_to_date equals the fact summed up to it."""
    got = d.query("SELECT dt, revenue_usd FROM revenue_to_date ORDER BY dt")
    h.eq([r[0] for r in got], h.days(FIRST, LAST), "revenue_to_date days %s" % what)
    for dt, total in got:
        truth = d.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt <= ?",
                        (dt,))[0][0]
        h.check(abs(total - truth) < 0.005, "revenue_to_date %s %s: %.2f, a recompute"
                " says %.2f" % (dt, what, total, truth))


def build_from_bug(d):
    """revenue_to_date from the seeded fact (its 02-08..12 without refunds):
    a request of the total itself, every day in order."""
    d.backfill("revenue_to_date", FIRST, LAST)
    recompute(d, "from the buggy fact")


def in_order(runs, what):
    """Each run started after the one before it finished."""
    for a, b in zip(runs, runs[1:]):
        h.check(h.parse_iso(b["started_at"]) >= h.parse_iso(a["finished_at"]),
                "%s: %s started before %s finished" % (what, b["partition"],
                                                       a["partition"]))


def test_repair_cascades_in_order():
    d = daemon("rtd")
    h.eq({j["name"]: j["upstream"] for j in d.json("jobs")["jobs"]},
         {"fct_daily_sales": [], "revenue_to_date": ["fct_daily_sales",
                                                     "revenue_to_date"]},
         "jobs --json: upstream as written, the job itself included")
    build_from_bug(d)
    bug = d.query("SELECT revenue_usd FROM revenue_to_date WHERE dt = ?", (LAST,))[0][0]
    plan = d.json("backfill", "fct_daily_sales", "--from", REPAIRED[0], "--to",
                  REPAIRED[-1], "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"]) for e in plan],
         [("fct_daily_sales", x) for x in REPAIRED] +
         [("revenue_to_date", x) for x in CASCADE], "--dry-run of the repair")
    rc, text, _ = d.ctl("backfill", "fct_daily_sales", "--from", REPAIRED[0], "--to",
                        REPAIRED[-1], "--dry-run")
    h.eq(rc, 0, "the dry run's exit")
    h.check(re.search(r"(?m)^11 +revenue_to_date +2026-02-13 +revenue_to_date"
                      r" 2026-02-12$", text),
            "the dry run shows 02-13 waiting for 02-12:\n" + text)
    h.check("20 partitions: 5 of fct_daily_sales, 15 downstream" in text,
            "the dry run's count:\n" + text)
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "refund bug")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"]) for r in new),
         sorted([("fct_daily_sales", x) for x in REPAIRED] +
                [("revenue_to_date", x) for x in CASCADE]),
         "the runs of the repair (each day of the total once, nothing else)")
    for r in new:
        h.eq(r["state"], "succeeded", "run %s %s" % (r["job"], r["partition"]))
    total = sorted(h.by_job(new, "revenue_to_date"), key=lambda r: r["started_at"])
    h.eq([r["partition"] for r in total], CASCADE, "the total's runs, by start")
    in_order(total, "the cascade")
    fact_done = {r["partition"]: h.parse_iso(r["finished_at"])
                 for r in h.by_job(new, "fct_daily_sales")}
    for r in total:
        if r["partition"] in fact_done:
            h.check(h.parse_iso(r["started_at"]) >= fact_done[r["partition"]],
                    "revenue_to_date %s started before its fact day landed"
                    % r["partition"])
    h.assert_fact_repaired(d, FIRST, LAST)
    recompute(d, "after the repair")
    fixed = d.query("SELECT revenue_usd FROM revenue_to_date WHERE dt = ?", (LAST,))[0][0]
    h.check(abs(fixed - bug) > 1, "the newest total changed (%.2f, was %.2f)"
            % (fixed, bug))
    h.eq(d.json("stale")["stale"], [], "stale after the repair")
    # a rerun of one day of the total itself cascades too
    before = len(d.runs())
    d.backfill("revenue_to_date", "2026-02-20", "2026-02-20")
    h.eq([r["partition"] for r in sorted(d.runs()[before:],
                                          key=lambda r: r["started_at"])],
         h.days("2026-02-20", LAST), "a backfill of the total's 02-20")
    # --no-downstream leaves the cascade out: the day after is then stale,
    # older than the day it reads, and --stale rebuilds it and what follows
    plan = d.json("backfill", "revenue_to_date", "--from", "2026-02-10", "--to",
                  "2026-02-10", "--no-downstream", "--dry-run")["partitions"]
    h.eq([(e["job"], e["partition"]) for e in plan], [("revenue_to_date", "2026-02-10")],
         "--dry-run --no-downstream of the total's 02-10")
    con = d.wh("sales")     # the fact's day changed by hand: the total's changes
    con.execute("UPDATE fct_daily_sales SET revenue_usd = revenue_usd + 1"
                " WHERE dt = '2026-02-10'")
    con.commit()
    con.close()
    d.backfill("revenue_to_date", "2026-02-10", "2026-02-10", "--no-downstream")
    h.eq([(x["job"], x["partition"], [(i["job"], i["partition"]) for i in x["newer_inputs"]])
          for x in d.json("stale")["stale"]],
         [("revenue_to_date", "2026-02-11", [("revenue_to_date", "2026-02-10")])],
         "stale after 02-10 alone")
    before = len(d.runs())
    d.ok("backfill", "revenue_to_date", "--stale", "--wait")
    h.eq([r["partition"] for r in sorted(d.runs()[before:], key=lambda r: r["started_at"])],
         h.days("2026-02-11", LAST), "backfill --stale of the total")
    h.eq(d.json("stale")["stale"], [], "stale after backfill --stale")
    recompute(d, "after backfill --stale")
    # a mark of 02-18 and 02-20 (repaired by hand): the gap 02-19 and
    # the days after are rebuilt, nothing else is marked
    con = d.wh("sales")
    for day in ("2026-02-18", "2026-02-20"):
        con.execute("UPDATE revenue_to_date SET revenue_usd = (SELECT SUM(revenue_usd)"
                    " FROM fct_daily_sales WHERE dt <= ?) WHERE dt = ?", (day, day))
    con.commit()
    con.close()
    before = len(d.runs())
    req = d.enqueue("mark", "revenue_to_date", "2026-02-18", "2026-02-20", "--succeeded",
                    "--reason", "restored")
    d.wait_request(req)
    new = sorted(d.runs()[before:], key=lambda r: r["id"])
    h.eq([(r["partition"], r["state"], r["marked_by"] is not None) for r in new],
         [("2026-02-18", "succeeded", True), ("2026-02-20", "succeeded", True),
          ("2026-02-19", "succeeded", False), ("2026-02-21", "succeeded", False),
          ("2026-02-22", "succeeded", False)],
         "the mark: two days marked, the gap and the days after rebuilt")
    recompute(d, "after the mark")
    d.stop()


WEEKLY = """
- name: weekly_to_date
  warehouse: sales
  partition: week
  upstream: [revenue_to_date]
  sql: |
    DELETE FROM weekly_to_date WHERE week_start = :partition;
    INSERT INTO weekly_to_date (week_start, revenue_usd)
    SELECT :partition, revenue_usd FROM revenue_to_date
    WHERE dt = (SELECT MAX(dt) FROM revenue_to_date
                WHERE dt >= :partition_start AND dt < :partition_end);
"""


def test_downstream_of_the_cascade():
    """A weekly job reading the total (the week's last total): the repair
    rebuilds each week that holds a day of the cascade, once, after its
    last day of it."""
    d = h.Daemon(jobs=FACT + TOTAL % {"bound": 40} + WEEKLY,
                 warehouses={"sales": h.sales_seed() + SEED_TOTAL +
                             "CREATE TABLE weekly_to_date (week_start TEXT PRIMARY KEY,"
                             " revenue_usd REAL);"},
                 settings={"max_concurrency": 8}, name="rtdweek", clock=None)
    d.backfill("fct_daily_sales", FIRST, LAST)
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1])
    new = d.runs()[before:]
    weeks = ["2026-02-02", "2026-02-09", "2026-02-16"]
    h.eq(sorted((r["job"], r["partition"]) for r in new if r["job"] != "fct_daily_sales"),
         sorted([("revenue_to_date", x) for x in CASCADE] +
                [("weekly_to_date", w) for w in weeks]),
         "the total's cascade and the weeks it feeds, each once")
    done = {r["partition"]: h.parse_iso(r["finished_at"])
            for r in h.by_job(new, "revenue_to_date")}
    for r in h.by_job(new, "weekly_to_date"):
        last = min(h.days(r["partition"], "2026-02-28")[6], LAST)
        h.check(h.parse_iso(r["started_at"]) >= done[last], "week %s started before"
                " its last day %s of the cascade landed" % (r["partition"], last))
    for w, got in d.query("SELECT week_start, revenue_usd FROM weekly_to_date"
                          " WHERE week_start >= '2026-02-02' ORDER BY week_start"):
        truth = d.query("SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt <= ?",
                        (min(h.days(w, "2026-02-28")[6], LAST),))[0][0]
        h.check(abs(got - truth) < 0.005, "weekly_to_date %s: %.2f, a recompute says"
                " %.2f" % (w, got, truth))
    h.eq(d.json("stale")["stale"], [], "stale after the repair")
    d.stop()


def test_cutoff_stops_the_cascade():
    """One sale moved from 02-10 to 02-09: the totals of 02-09 change, and
    from 02-10 on they are what they were: 02-08 is skipped (its fact
    came out identical), 02-09 and 02-10 run, 02-11..22 are skipped."""
    d = daemon("rtdcut")
    d.backfill("fct_daily_sales", FIRST, LAST)
    recompute(d, "after the first build")
    con = d.wh("sales")
    con.execute("UPDATE raw_sales SET dt = '2026-02-09' WHERE sale_id ="
                " (SELECT min(sale_id) FROM raw_sales WHERE dt = '2026-02-10')")
    con.commit()
    con.close()
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "moved sale")
    new = d.runs()[before:]
    total = {r["partition"]: r["state"] for r in h.by_job(new, "revenue_to_date")}
    want = {x: "skipped" for x in CASCADE}
    want["2026-02-09"] = want["2026-02-10"] = "succeeded"
    h.eq(total, want, "the total's days: run where it changed, skipped from the"
         " first identical day on")
    h.eq(sorted(r["partition"] for r in h.by_job(new, "fct_daily_sales", "succeeded")),
         REPAIRED, "the fact's repaired days")
    recompute(d, "after the cut-off")
    h.eq(d.json("stale")["stale"], [], "stale after the cut-off")
    d.stop()


# batch (SCHED-9): the days of one run computed set-based, a running SUM
# over the batch's days (backfill_manifest) seeded from the day before its
# first day, which is built
TOTAL_BATCH = TOTAL[:TOTAL.index("  sql: |")] + """  batch: %(batch)s
  sql: |
    DELETE FROM revenue_to_date WHERE dt IN (SELECT partition_key FROM backfill_manifest);
    INSERT INTO revenue_to_date (dt, revenue_usd)
    SELECT m.partition_key,
      COALESCE((SELECT revenue_usd FROM revenue_to_date
                WHERE dt = date(:partition_start, '-1 day')), 0)
      + SUM(COALESCE(f.revenue_usd, 0)) OVER (ORDER BY m.partition_key
                                               ROWS UNBOUNDED PRECEDING)
    FROM backfill_manifest m
    LEFT JOIN (SELECT dt, SUM(revenue_usd) AS revenue_usd FROM fct_daily_sales
               WHERE dt >= :partition_start AND dt < :partition_end GROUP BY dt) f
      ON f.dt = m.partition_key;
"""


def batches(runs):
    """The runs' partitions grouped by run (the partitions of one batch
    share its start), in the order they started."""
    out = {}
    for r in sorted(runs, key=lambda r: (r["started_at"], r["partition"])):
        out.setdefault(r["started_at"], []).append(r)
    return list(out.values())


def batches_in_order(runs, sizes, what):
    """The runs form batches of `sizes` days, consecutive, in time order,
    each started after the one before it finished; returns the batches."""
    bs = batches(runs)
    h.eq([len(b) for b in bs], sizes, "%s: the days of each run" % what)
    h.eq([r["partition"] for b in bs for r in b], sorted(r["partition"] for r in runs),
         "%s: the runs in time order" % what)
    for a, b in zip(bs, bs[1:]):
        h.check(h.parse_iso(b[0]["started_at"]) >= h.parse_iso(a[-1]["finished_at"]),
                "%s: the run of %s started before the one of %s finished"
                % (what, b[0]["partition"], a[-1]["partition"]))
    return bs


def test_batch_cascade_is_one_run():
    """batch: true on the running total: its own days (the first build)
    and the repair's cascade each one run, in order, the cascade after
    every fact day of the repair; the table equals a recompute.  Cut-off
    skips the cascade's leading identical days; the rest is one run.
    batch: 4: ceil(days / 4) runs, in order, each after the one before."""
    d = daemon("rtdbatch", total=TOTAL_BATCH.replace("%(batch)s", "true"))
    build_from_bug(d)
    batches_in_order(d.runs(), [28], "the first build (batch: true)")
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "refund bug")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"], r["state"]) for r in new),
         sorted([("fct_daily_sales", x, "succeeded") for x in REPAIRED] +
                [("revenue_to_date", x, "succeeded") for x in CASCADE]),
         "the runs of the repair (batch: true)")
    total = h.by_job(new, "revenue_to_date")
    batches_in_order(total, [len(CASCADE)], "the cascade (batch: true)")
    fact_done = max(h.parse_iso(r["finished_at"]) for r in h.by_job(new, "fct_daily_sales"))
    h.check(h.parse_iso(total[0]["started_at"]) >= fact_done,
            "the cascade's batch started before the repair's last fact day landed")
    h.assert_fact_repaired(d, FIRST, LAST)
    recompute(d, "after the repair (batch: true)")
    h.eq(d.json("stale")["stale"], [], "stale after the repair (batch: true)")
    # a sale moved from 02-10 to 02-09: 02-08 is skipped (its fact day came
    # out identical), 02-09..22 are one run (a batch proves nothing)
    con = d.wh("sales")
    con.execute("UPDATE raw_sales SET dt = '2026-02-09' WHERE sale_id ="
                " (SELECT min(sale_id) FROM raw_sales WHERE dt = '2026-02-10')")
    con.commit()
    con.close()
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "moved sale")
    total = h.by_job(d.runs()[before:], "revenue_to_date")
    h.eq({r["partition"]: r["state"] for r in total},
         dict([("2026-02-08", "skipped")] + [(x, "succeeded") for x in CASCADE[1:]]),
         "the cascade after the moved sale (batch: true)")
    batches_in_order(h.by_job(total, "revenue_to_date", "succeeded"), [len(CASCADE) - 1],
                     "the cascade after the cut-off (batch: true)")
    recompute(d, "after the cut-off (batch: true)")
    d.stop()

    d = daemon("rtdbatch4", total=TOTAL_BATCH.replace("%(batch)s", "4"))
    build_from_bug(d)
    batches_in_order(d.runs(), [4] * 7, "the first build (batch: 4)")
    before = len(d.runs())
    d.backfill("fct_daily_sales", REPAIRED[0], REPAIRED[-1], "--reason", "refund bug")
    new = d.runs()[before:]
    bs = batches_in_order(h.by_job(new, "revenue_to_date"), [4, 4, 4, 3],
                          "the cascade (batch: 4)")
    h.eq([b[0]["partition"] for b in bs], CASCADE[::4], "the chunks' first days")
    recompute(d, "after the repair (batch: 4)")
    h.eq(d.json("stale")["stale"], [], "stale after the repair (batch: 4)")
    d.stop()


def test_cascade_bound():
    d = daemon("rtdbound", bound=10)
    for a, b in (("2026-01-26", "2026-02-04"), ("2026-02-05", "2026-02-14"),
                 ("2026-02-15", LAST)):
        d.backfill("revenue_to_date", a, b)
    before = len(d.runs())
    for extra in ((), ("--dry-run",)):
        rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", REPAIRED[0],
                             "--to", REPAIRED[-1], *extra)
        h.eq(rc, 2, "a repair whose cascade (15 days) is above max_backfill 10 %s"
             % (extra,))
        h.eq(err.strip(), "backfillctl: refused: the request rebuilds 15 partitions of"
             " revenue_to_date (it reads its own earlier partitions: each one from"
             " the earliest repaired to its newest built), above its max_backfill of"
             " 10; nothing was queued. Raise revenue_to_date's max_backfill",
             "the refusal %s" % (extra,))
    h.eq(len(d.runs()), before, "runs after the refused requests")
    d.stop()


# The total as a command job, to stop it at a known day: the script blocks
# in 2026-02-15 on a FIFO handshake (the test learns it runs: an event).
SCRIPT = r"""#!/bin/sh
set -e
dir="$(dirname "$0")"
p="$1"
echo "$p" >> "$dir/attempts.log"
if [ -e "$dir/fail-$p" ]; then echo "$p fails" >&2; exit 3; fi
hold="${HOLD:-2026-02-15}"
if [ "$p" = "$hold" ] && [ ! -e "$dir/release" ]; then
    echo "$$" > "$dir/started.fifo"
    read x < "$dir/hold.fifo"
fi
sqlite3 -cmd ".timeout 20000" "$dir/sales.db" "BEGIN IMMEDIATE;
DELETE FROM revenue_to_date WHERE dt = '$p';
INSERT INTO revenue_to_date SELECT '$p',
  COALESCE((SELECT revenue_usd FROM revenue_to_date WHERE dt = date('$p', '-1 day')), 0)
  + COALESCE((SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = '$p'), 0);
COMMIT;"
"""

TOTAL_CMD = """
- name: revenue_to_date
  partition: day
  start: 2026-01-26
  concurrency: 4
  max_backfill: %(bound)d
  upstream:
    - fct_daily_sales
    - {job: revenue_to_date, lookback: 1}
  command: ["/bin/sh", "{dir}/job.sh", "{partition}"]
"""


def cmd_daemon(name, jobs=None):
    """The command total's daemon, its job.sh written, not started."""
    d = h.Daemon(jobs=jobs or FACT + TOTAL_CMD % {"bound": 40},
                 warehouses={"sales": h.sales_seed() + SEED_TOTAL},
                 settings={"max_concurrency": 8}, name=name, start=False)
    with open(os.path.join(d.dir, "job.sh"), "w") as f:
        f.write(SCRIPT)
    return d


def lines(path):
    try:
        with open(path) as f:
            return [x.strip() for x in f if x.strip()]
    except FileNotFoundError:
        return []


def test_kill9_during_cascade():
    d = cmd_daemon("rtdkill")
    open(os.path.join(d.dir, "release"), "w").close()
    d.start()
    build_from_bug(d)
    os.unlink(os.path.join(d.dir, "release"))
    os.unlink(os.path.join(d.dir, "attempts.log"))
    os.mkfifo(os.path.join(d.dir, "started.fifo"))
    os.mkfifo(os.path.join(d.dir, "hold.fifo"))
    fd = os.open(os.path.join(d.dir, "started.fifo"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        req = d.enqueue("backfill", "fct_daily_sales", "--from", REPAIRED[0],
                        "--to", REPAIRED[-1])
        with d.draining():
            r, _, _ = select.select([fd], [], [], 60)
        h.check(r, "2026-02-15 did not start within 60 s (guard)\n" + d.log_tail())
        data = os.read(fd, 100).decode().strip()
    finally:
        os.close(fd)
    h.check(data.isdigit(), "the job sent %r instead of its pid" % data)
    h.eq(lines(os.path.join(d.dir, "attempts.log")), h.days("2026-02-08", "2026-02-15"),
         "the cascade's days started before the kill (in order, one at a time)")
    d.kill9()
    try:
        os.kill(int(data), signal.SIGKILL)
    except ProcessLookupError:
        pass
    open(os.path.join(d.dir, "release"), "w").close()
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    h.eq(lines(os.path.join(d.dir, "attempts.log")),
         h.days("2026-02-08", "2026-02-15") + CASCADE[CASCADE.index("2026-02-15"):],
         "executions: the interrupted day again, then the rest in order")
    runs = [r for r in d.runs() if r["request"] == req]
    for p in CASCADE:
        ok = [r for r in runs if r["job"] == "revenue_to_date" and r["partition"] == p
              and r["state"] == "succeeded"]
        h.eq(len(ok), 1, "succeeded runs of revenue_to_date %s" % p)
    in_order(sorted([r for r in runs if r["job"] == "revenue_to_date"
                     and r["state"] == "succeeded"], key=lambda r: r["started_at"]),
             "the resumed cascade")
    h.assert_fact_repaired(d, FIRST, LAST)
    recompute(d, "after kill -9 and the restart")
    d.stop()


def test_failed_day_blocks_the_cascade():
    """02-15 of the cascade fails: 02-16..22 are blocked, naming it; a
    later success of 02-15 (a rerun, another request) releases them, and
    each runs once, in order."""
    d = cmd_daemon("rtdfail")
    open(os.path.join(d.dir, "release"), "w").close()
    d.start()
    build_from_bug(d)
    open(os.path.join(d.dir, "fail-2026-02-15"), "w").close()
    req = d.enqueue("backfill", "fct_daily_sales", "--from", REPAIRED[0], "--to",
                    REPAIRED[-1])
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "1", "the repair with a failed day: %r" % resp)
    runs = [r for r in d.runs() if r["request"] == req and r["job"] == "revenue_to_date"]
    states = {r["partition"]: r["state"] for r in runs}
    want = {x: "succeeded" for x in h.days("2026-02-08", "2026-02-14")}
    want["2026-02-15"] = "failed"
    want.update({x: "blocked" for x in h.days("2026-02-16", LAST)})
    h.eq(states, want, "the cascade after 02-15 failed")
    h.eq(d.status()["revenue_to_date"]["blocked"], 7, "status: blocked days")
    os.unlink(os.path.join(d.dir, "fail-2026-02-15"))
    os.unlink(os.path.join(d.dir, "attempts.log"))
    d.ok("rerun", "revenue_to_date", "2026-02-15", "--wait")
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "the repair's request (its failed day landed by the"
         " rerun)")
    h.eq(lines(os.path.join(d.dir, "attempts.log")), h.days("2026-02-15", LAST),
         "executions after the rerun: 02-15, then each later day once, in order")
    h.eq({r["partition"]: r["state"] for r in d.runs()
          if r["request"] == req and r["job"] == "revenue_to_date"
          and r["partition"] > "2026-02-15"},
         {x: "succeeded" for x in h.days("2026-02-16", LAST)},
         "the repair's blocked days, released")
    h.assert_fact_repaired(d, FIRST, LAST)
    recompute(d, "after the failed day's rerun")
    d.stop()


# a balance that reads only its own day before: a clock-driven job
BALANCE = """
- name: balance
  partition: day
  start: 2026-03-01
  concurrency: 2
  upstream: [{job: balance, lookback: 1}]
  command: ["/bin/sh", "{dir}/job.sh", "{partition}"]
"""


def wait_for(d, cond, what, guard=30):
    """Until cond(d.runs()) holds (the daemon's answer), within guard."""
    import time
    end = time.monotonic() + guard
    while True:
        rs = d.runs(include_boot=True)
        if cond(rs):
            return rs
        h.check(time.monotonic() < end, "%s: not within %d s (guard)\n%s"
                % (what, guard, d.log_tail()))
        time.sleep(0.05)


def test_schedule_waits_for_the_day_before():
    """A running total with only itself upstream keeps its clock schedule;
    the schedule's run of 03-02 waits for 03-01, still running in the
    request of the day before, though its concurrency is 2; a catchup of
    three days runs them one after the other."""
    d = cmd_daemon("rtdclock", jobs=BALANCE.replace("2026-02-15", "x"))
    d.extra_env["HOLD"] = "2026-03-01"
    d.set_clock("2026-03-01T12:00:00Z")
    os.mkfifo(os.path.join(d.dir, "started.fifo"))
    os.mkfifo(os.path.join(d.dir, "hold.fifo"))
    d.start()
    fd = os.open(os.path.join(d.dir, "started.fifo"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        d.set_clock("2026-03-02T00:00:01Z")
        with d.draining():
            r, _, _ = select.select([fd], [], [], 60)
        h.check(r, "2026-03-01 did not start within 60 s (guard)\n" + d.log_tail())
        os.read(fd, 100)
    finally:
        os.close(fd)
    d.set_clock("2026-03-03T00:00:01Z")
    rs = wait_for(d, lambda rs: any(r["partition"] == "2026-03-02" for r in rs),
                  "the schedule's request of 2026-03-02")
    h.eq(sorted((r["partition"], r["state"]) for r in rs),
         [("2026-03-01", "running"), ("2026-03-02", "queued")],
         "03-02 queued while 03-01 runs (concurrency 2)")
    h.check(len({r["request"] for r in rs}) == 2, "two schedule requests: %r" % rs)
    with open(os.path.join(d.dir, "hold.fifo"), "w") as f:
        f.write("go\n")
    rs = wait_for(d, lambda rs: sorted((r["partition"], r["state"]) for r in rs) ==
                  [("2026-03-01", "succeeded"), ("2026-03-02", "succeeded")],
                  "both days succeeded")
    in_order(sorted(rs, key=lambda r: r["partition"]), "the schedule")
    h.eq(lines(os.path.join(d.dir, "attempts.log")), ["2026-03-01", "2026-03-02"],
         "executions")
    # three days missed: one catchup request, its days one after the other
    d.set_clock("2026-03-06T00:00:01Z")
    days = h.days("2026-03-01", "2026-03-05")
    rs = wait_for(d, lambda rs: sorted((r["partition"], r["state"]) for r in rs) ==
                  [(x, "succeeded") for x in days], "the catchup of 03-03..05")
    h.eq(len({r["request"] for r in rs if r["partition"] >= "2026-03-03"}), 1,
         "one catchup request")
    in_order(sorted(rs, key=lambda r: r["partition"]), "the catchup")
    d.stop()


if __name__ == "__main__":
    h.main([test_repair_cascades_in_order, test_downstream_of_the_cascade,
            test_cutoff_stops_the_cascade, test_batch_cascade_is_one_run,
            test_cascade_bound, test_kill9_during_cascade,
            test_failed_day_blocks_the_cascade, test_schedule_waits_for_the_day_before])
