#!/usr/bin/env python3
"""shapes_bench.py - a 90-day repair through a rolling window and a running
total (issue 41), against the set-based SQL that recomputes exactly the
same partitions and against a full-history recompute, in the same run.

The warehouse (gen.py's raw_sales: DAYS x ROWS_PER_DAY sales over 100
stores, deterministic) holds the lesson's daily fact and two jobs built on
it:

  fct_daily_sales  (dt, store_id, sales, revenue_usd), from raw_sales
  mart_rolling_7d  (dt, revenue_usd): the fact's last 7 days,
                   upstream [{job: fct_daily_sales, lookback: 6}]
  revenue_to_date  (dt, revenue_usd): the day's revenue plus yesterday's
                   row, upstream [fct_daily_sales,
                   {job: revenue_to_date, lookback: 1}] (a running total;
                   left out, and said so, while `backfilld --check-config`
                   refuses a job in its own upstream)

Everything is first built by backfilld itself (a backfill of the whole
history, so the state store knows every partition as built), while the
refunds of the repair window (90 days, --repair-days) are missing from
raw_sales; then they arrive, and each method repairs from a fresh copy of
that warehouse (and, for backfilld, of its state store):

  backfilld  a fresh daemon on the copy (its start not timed), then
             `backfillctl backfill fct_daily_sales --from F --to L
             --wait`, timed from the request to all done: the 90 fact days,
             the rolling mart's F..L+6 and the running total's F..newest,
             one transaction a partition
  batch      the same with the fact and the rolling mart `batch: true`
             (their SQL over backfill_manifest: one run each)
  batchall   the same with the running total `batch: true` too: its SQL
             set-based (a running SUM over the batch's days, over
             backfill_manifest, from the row before its first day), its
             cascade one run (SCHED-9)
  set-based  one sqlite3 process, one transaction (BEGIN IMMEDIATE), the
             statements a skilled user writes for exactly those partitions:
             the fact's days from a manifest table, the rolling mart's
             F..L+6 by a window function over the daily totals, the running
             total's F..newest by a running SUM() OVER from the total of
             F-1 (--print-sql prints it)
  full       the same statements over the whole history
  floor      the jobs' own statements, one transaction a partition, in
             backfilld's order, in one sqlite3 process: what the
             transactions cost without a daemon

All of them run on the same file with the same durability: the
warehouse's own journal (the rollback journal, journal_mode DELETE, or WAL
with --journal wal) and SQLite's default synchronous=FULL, which
backfilld's SQLite warehouse driver leaves alone;
the set-based scripts commit once, so they are more atomic than backfilld
(which makes each partition atomic), never less.  The methods alternate
(their order rotates each round); each measurement starts from the same
bytes, flushed to disk before the clock starts.  After every measurement
the three tables must equal, to the cent, those of the full-history
recompute (the truth) and differ from the warehouse before the repair;
backfilld's request must have run exactly the partitions above, each
once, the running total in order.  A wrong result fails the run (exit 1).

Prints the medians, the paired ratios (each round's backfilld time over
the other method's in the same round; their median) and the targets:
backfilld within 1.2 x of the set-based SQL and a fraction of the full
recompute.  Also where backfilld's time goes: its runs per job (count and
time, from the daemon's log), the time some run was running (`runs
--json`) and the rest of the request's wall time.  The warehouse and the
daemons' folders are made under $TMPDIR (TMPDIR=/dev/shm: on tmpfs, where
a commit costs no disk flush).

    BACKFILLD=$PWD/build-rel/daemon/backfilld BACKFILLCTL=$PWD/build-rel/daemon/backfillctl \\
        python3 tests/bench/shapes_bench.py [--rounds 5] [--rows-per-day 5000] \\
        [--journal wal] [--strace]

(absolute paths: each daemon runs in its own folder).  --strace then
repairs once more with each method under strace -f -c and prints the
fdatasync, pwrite64, pread64 and unlink calls per partition repaired.

--smoke (the bench suite, tests/bench/meson.build): a tiny warehouse in a
temporary folder, one round, the same checks, no timing asserted.
"""
import argparse
import datetime
import hashlib
import os
import platform
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import harness as h  # noqa: E402
import gen  # noqa: E402

FACT_SQL = """\
DELETE FROM fct_daily_sales WHERE dt = :partition;
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
"""
ROLLING_SQL = """\
DELETE FROM mart_rolling_7d WHERE dt = :partition;
INSERT INTO mart_rolling_7d (dt, revenue_usd)
SELECT :partition, SUM(revenue_usd) FROM fct_daily_sales
WHERE dt >= date(:partition_start, '-6 days') AND dt < :partition_end;
"""
TOTAL_SQL = """\
DELETE FROM revenue_to_date WHERE dt = :partition;
INSERT INTO revenue_to_date (dt, revenue_usd)
SELECT :partition,
       COALESCE((SELECT revenue_usd FROM revenue_to_date
                 WHERE dt = date(:partition, '-1 day')), 0)
     + COALESCE((SELECT SUM(revenue_usd) FROM fct_daily_sales
                 WHERE dt = :partition), 0);
"""
# batch: true (docs/budgets-and-chunks.md): the request's partitions of
# the job in one run, one transaction, over the temporary backfill_manifest.
FACT_BATCH_SQL = """\
DELETE FROM fct_daily_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest);
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest)
GROUP BY dt, store_id;
"""
ROLLING_BATCH_SQL = """\
DELETE FROM mart_rolling_7d WHERE dt IN (SELECT partition_key FROM backfill_manifest);
INSERT INTO mart_rolling_7d (dt, revenue_usd)
SELECT m.partition_key, (SELECT SUM(revenue_usd) FROM fct_daily_sales
                         WHERE dt >= date(m.partition_start, '-6 days')
                           AND dt < m.partition_end)
FROM backfill_manifest m;
"""
# The running total as a batch: the row before the batch's first day plus a
# running SUM of the daily totals over the batch's days (contiguous: the
# request's days from the first repaired one to the newest).
TOTAL_BATCH_SQL = """\
DELETE FROM revenue_to_date WHERE dt IN (SELECT partition_key FROM backfill_manifest);
INSERT INTO revenue_to_date (dt, revenue_usd)
SELECT m.partition_key,
       COALESCE((SELECT revenue_usd FROM revenue_to_date
                 WHERE dt = date((SELECT MIN(partition_key) FROM backfill_manifest),
                                 '-1 day')), 0)
     + SUM(COALESCE(f.revenue_usd, 0)) OVER (ORDER BY m.partition_key
                                              ROWS UNBOUNDED PRECEDING)
FROM backfill_manifest m
LEFT JOIN (SELECT dt, SUM(revenue_usd) AS revenue_usd FROM fct_daily_sales
           WHERE dt IN (SELECT partition_key FROM backfill_manifest) GROUP BY dt) f
  ON f.dt = m.partition_key;
"""

SCHEMA = """
DROP TABLE mart_weekly_sales;
DELETE FROM fct_daily_sales;
CREATE TABLE mart_rolling_7d (dt TEXT PRIMARY KEY, revenue_usd REAL);
CREATE TABLE revenue_to_date (dt TEXT PRIMARY KEY, revenue_usd REAL);
"""


def indent(text, n):
    return "".join(" " * n + line + "\n" for line in text.splitlines())


def jobs_yaml(first, last, total, concurrency, batch=False):
    """The three jobs (the running total only when `total`; with `batch`,
    the fact and the rolling mart as batch: true jobs)."""
    common = ("  warehouse: sales\n  partition: day\n  start: %s\n  end: %s\n"
              "  catchup: false\n  concurrency: %d\n  retries: 0\n  max_backfill: 5000\n"
              % (first, last, concurrency))
    b = "  batch: true\n" if batch else ""
    tb = "  batch: true\n" if batch == "all" else ""
    out = ("- name: fct_daily_sales\n" + common + b + "  sql: |\n"
           + indent(FACT_BATCH_SQL if batch else FACT_SQL, 4))
    out += ("- name: mart_rolling_7d\n" + common + b
            + "  upstream:\n    - job: fct_daily_sales\n      lookback: 6\n"
            + "  sql: |\n" + indent(ROLLING_BATCH_SQL if batch else ROLLING_SQL, 4))
    if total:
        out += ("- name: revenue_to_date\n" + common + tb
                + "  upstream:\n    - fct_daily_sales\n"
                + "    - job: revenue_to_date\n      lookback: 1\n"
                + "  sql: |\n" + indent(TOTAL_BATCH_SQL if tb else TOTAL_SQL, 4))
    return out


def set_sql(first, last, newest, total, full):
    """The hand-written set-based repair of first..last: one transaction,
    exactly the partitions the repair affects (full: every partition)."""
    rolled_hi = min(newest, (datetime.date.fromisoformat(last)
                             + datetime.timedelta(6)).isoformat())
    s = ["BEGIN IMMEDIATE;"]
    if full:
        s.append("DELETE FROM fct_daily_sales;")
        s.append("INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)\n"
                 "SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales\n"
                 "GROUP BY dt, store_id;")
        daily_where, rolled, totalled = "", "", ""
    else:
        s.append("CREATE TEMP TABLE backfill_manifest (run_date TEXT PRIMARY KEY);")
        s.append("INSERT INTO backfill_manifest (run_date)\n"
                 "WITH RECURSIVE d(x) AS (SELECT '%s' UNION ALL\n"
                 "  SELECT date(x, '+1 day') FROM d WHERE x < '%s') SELECT x FROM d;"
                 % (first, last))
        s.append("DELETE FROM fct_daily_sales WHERE dt IN (SELECT run_date FROM backfill_manifest);")
        s.append("INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)\n"
                 "SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales\n"
                 "WHERE dt IN (SELECT run_date FROM backfill_manifest)\n"
                 "GROUP BY dt, store_id;")
        daily_where = "WHERE dt >= date('%s', '-6 days') AND dt <= '%s' " % (first, rolled_hi)
        rolled = " WHERE dt >= '%s' AND dt <= '%s'" % (first, rolled_hi)
        totalled = " WHERE dt >= '%s'" % first
    # The rolling mart: each day's sum over its 7 days, by a window function
    # over the daily totals of the days it reads (6 before the first one).
    s.append("CREATE TEMP TABLE daily AS\n"
             "SELECT dt, SUM(revenue_usd) AS revenue_usd FROM fct_daily_sales\n"
             "%sGROUP BY dt;" % daily_where)
    s.append("DELETE FROM mart_rolling_7d%s;" % rolled)
    s.append("INSERT INTO mart_rolling_7d (dt, revenue_usd)\n"
             "SELECT dt, w FROM (SELECT dt, SUM(revenue_usd) OVER (ORDER BY julianday(dt)\n"
             "  RANGE BETWEEN 6 PRECEDING AND CURRENT ROW) AS w FROM daily)%s;" % rolled)
    if total:
        # The running total: the row before the first day rebuilt, plus a
        # running SUM of the daily totals from that day to the newest.
        base = "0" if full else ("COALESCE((SELECT revenue_usd FROM revenue_to_date\n"
                                 "                 WHERE dt = date('%s', '-1 day')), 0)" % first)
        s.append("DELETE FROM revenue_to_date%s;" % totalled)
        s.append("INSERT INTO revenue_to_date (dt, revenue_usd)\n"
                 "SELECT dt, %s\n"
                 "     + SUM(revenue_usd) OVER (ORDER BY dt ROWS UNBOUNDED PRECEDING)\n"
                 "FROM (SELECT dt, SUM(revenue_usd) AS revenue_usd FROM fct_daily_sales%s\n"
                 "      GROUP BY dt);" % (base, totalled))
    s.append("COMMIT;")
    return "\n".join(s) + "\n"


def floor_sql(a, total):
    """The floor: the jobs' own statements, one transaction a partition as
    backfilld runs them (the fact's days, the rolling mart's, the running
    total's in order), in one sqlite3 process: what one transaction a
    partition costs without a daemon."""
    s = []
    for job, sql in (("fct_daily_sales", FACT_SQL), ("mart_rolling_7d", ROLLING_SQL),
                     ("revenue_to_date", TOTAL_SQL)):
        for day in expected_runs(a, total).get(job, []):
            end = (datetime.date.fromisoformat(day) + datetime.timedelta(1)).isoformat()
            s.append("BEGIN IMMEDIATE;\n" + sql.replace(":partition_start", "'%s'" % day)
                     .replace(":partition_end", "'%s'" % end)
                     .replace(":partition", "'%s'" % day) + "COMMIT;")
    return "\n".join(s) + "\n"


# ------------------------------------------------------------------ the warehouse

TABLES = (("fct_daily_sales", "SELECT dt, store_id, sales, printf('%.2f', revenue_usd)"
           " FROM fct_daily_sales ORDER BY dt, store_id"),
          ("mart_rolling_7d", "SELECT dt, printf('%.2f', revenue_usd) FROM mart_rolling_7d"
           " ORDER BY dt"),
          ("revenue_to_date", "SELECT dt, printf('%.2f', revenue_usd) FROM revenue_to_date"
           " ORDER BY dt"))


def digests(path):
    """{table: sha256 of its rows, revenue to the cent} (the order of a
    floating-point SUM may differ between plans; the cents may not)."""
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        out = {}
        for name, q in TABLES:
            dg = hashlib.sha256()
            n = 0
            for row in con.execute(q):
                dg.update(repr(row).encode())
                n += 1
            out[name] = (n, dg.hexdigest()[:16])
        return out
    finally:
        con.close()


def fresh_copy(src, dst):
    """dst := the bytes of src, on disk (no method pays for our writeback)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(dst + suffix)
        except FileNotFoundError:
            pass
    shutil.copyfile(src, dst)
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.sync()


def total_supported(work, a):
    """Whether this backfilld accepts a job in its own upstream (the
    running total): --check-config on the three jobs."""
    folder = os.path.join(work, "check")
    os.makedirs(folder, exist_ok=True)
    sqlite3.connect(os.path.join(folder, "sales.db")).close()
    conf = os.path.join(folder, "backfilld.yaml")
    with open(conf, "w") as f:
        f.write("state_db: state.db\nsocket: s.sock\nwarehouses:\n  - name: sales\n"
                "    sqlite: sales.db\njobs:\n"
                + indent(jobs_yaml(a.first, a.newest, True, 1), 2))
    p = subprocess.run([h.binaries()[0], "--check-config", "--config", conf],
                       capture_output=True, text=True)
    if p.returncode == 0:
        return True, ""
    return False, (p.stdout + p.stderr).strip()


def daemon(a, folder_name, total, batch=False):
    return h.Daemon(jobs=jobs_yaml(a.first, a.newest, total, a.concurrency, batch),
                    warehouses={"sales": None}, clock=None, name=folder_name, start=False,
                    settings={"max_concurrency": a.max_concurrency, "max_backfill": 5000})


def prepare(a, work, total):
    """The warehouse and state store every measurement starts from: raw
    sales (gen.py), everything built by backfilld while the repair window's
    refunds were missing, then the refunds arrived.  Returns (warehouse,
    state store, digests before the repair)."""
    raw = os.path.join(a.data, "shapes-raw-d%d-r%d-s%d-%s.db"
                       % (a.days, a.rows_per_day, a.stores, a.first))
    if not os.path.exists(raw):
        os.makedirs(a.data, exist_ok=True)
        h.check(gen.main([raw, "--days", str(a.days), "--rows-per-day", str(a.rows_per_day),
                          "--stores", str(a.stores), "--start", a.first] +
                         (["--quiet"] if a.smoke else [])) == 0, "gen.py failed")
    d = daemon(a, "shapesprep", total)
    wh = d.warehouses["sales"]
    fresh_copy(raw, wh)
    con = sqlite3.connect(wh, isolation_level=None)
    con.executescript(SCHEMA)
    con.execute("CREATE TABLE late_refunds AS SELECT * FROM raw_sales"
                " WHERE dt BETWEEN ? AND ? AND amount_usd < 0", (a.rfirst, a.rlast))
    con.execute("DELETE FROM raw_sales WHERE sale_id IN (SELECT sale_id FROM late_refunds)")
    con.close()
    d.start()
    t0 = time.monotonic()
    d.backfill("fct_daily_sales", a.first, a.newest)
    log("built the history by backfilld in %.1f s" % (time.monotonic() - t0))
    d.stop()
    con = sqlite3.connect(wh, isolation_level=None)
    con.execute("INSERT INTO raw_sales SELECT * FROM late_refunds")
    con.execute("DROP TABLE late_refunds")
    con.execute("VACUUM")
    con.close()
    if a.journal == "wal":
        con = sqlite3.connect(wh, isolation_level=None)
        h.eq(con.execute("PRAGMA journal_mode = WAL").fetchone()[0], "wal", "journal_mode")
        con.close()
    con = sqlite3.connect(d.state_db, isolation_level=None)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    wh_copy, st_copy = os.path.join(work, "sales.db"), os.path.join(work, "state.db")
    shutil.copyfile(wh, wh_copy)
    shutil.copyfile(d.state_db, st_copy)
    d.close()
    return wh_copy, st_copy, digests(wh_copy)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the methods

def expected_runs(a, total):
    """{job: [partitions]} the repair must run, each once."""
    rolled_hi = min(a.newest, (datetime.date.fromisoformat(a.rlast)
                               + datetime.timedelta(6)).isoformat())
    want = {"fct_daily_sales": h.days(a.rfirst, a.rlast),
            "mart_rolling_7d": h.days(a.rfirst, rolled_hi)}
    if total:
        want["revenue_to_date"] = h.days(a.rfirst, a.newest)
    return want


def run_backfilld(a, base, total, batch=False, strace_out=None):
    """A fresh daemon on copies of base (its start not timed); the repair's
    wall time, from the request to all done.  Returns (seconds, {job: sum
    of its runs' durations in s}, the tables' digests)."""
    d = daemon(a, "shapesbf", total, batch)
    fresh_copy(base[0], d.warehouses["sales"])
    shutil.copyfile(base[1], os.path.join(d.dir, "state.db"))
    d.start()
    argv = [d.backfillctl, "--socket", d.sock, "backfill", "fct_daily_sales",
            "--from", a.rfirst, "--to", a.rlast, "--reason", "late refunds", "--wait"]
    tracer = None
    if strace_out:
        tracer = subprocess.Popen(["strace"] + STRACE_FLAGS + ["-o", strace_out, "-e",
                                   "trace=" + ",".join(CALLS), "-p", str(d.proc.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        h.check("attached" in tracer.stderr.readline(), "strace did not attach")
    with d.draining():   # its sd_notify STATUS lines: a full queue blocks the daemon
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, env=d.env())
        wall = time.monotonic() - t0
    if tracer:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=60)
    h.check(p.returncode == 0, "backfill failed (exit %d): %s %s\n%s"
            % (p.returncode, p.stdout, p.stderr, d.log_tail()))
    req = int(p.stdout.split("request ")[1].split(":")[0])
    runs = d.json("runs", "--request", str(req))
    d.stop()
    ran = {}
    for r in sorted(runs, key=lambda r: r["id"]):
        h.eq(r["state"], "succeeded", "run %s %s" % (r["job"], r["partition"]))
        ran.setdefault(r["job"], []).append(r)
    took = log_runs(d.log, req)
    took["busy"], took["span"] = busy(runs)
    want = expected_runs(a, total)
    h.eq({j: sorted(x["partition"] for x in rs) for j, rs in ran.items()}, want,
         "the partitions backfilld's repair ran (each once)")
    if total:
        # the running total strictly in order: each day after the one before,
        # or in the same batch run as it (batch: SCHED-9, one start and end)
        rs = ran["revenue_to_date"]
        h.eq([x["partition"] for x in rs], want["revenue_to_date"], "running total order")
        for prev, cur in zip(rs, rs[1:]):
            same = (cur["started_at"], cur["finished_at"]) == (prev["started_at"],
                                                               prev["finished_at"])
            h.check(same or h.parse_iso(cur["started_at"]) >= h.parse_iso(prev["finished_at"]),
                    "revenue_to_date %s started before %s finished"
                    % (cur["partition"], prev["partition"]))
    result = digests(d.warehouses["sales"])
    d.close()
    return wall, took, result


def log_runs(path, req):
    """{job: [runs, ms]} of the request, from the daemon's log: a run's
    "started" line (one for a batch) and its "succeeded in N ms" (the
    loop's time from its start to its end)."""
    out = {}
    tag = " request=%d run=" % req
    with open(path, errors="replace") as f:
        for line in f:
            if tag not in line or "job=" not in line:
                continue
            job = line.split("job=")[1].split()[0]
            if " started" in line:
                out.setdefault(job, [0, 0])[0] += 1
            elif " succeeded in " in line:
                out.setdefault(job, [0, 0])[1] += int(line.split(" succeeded in ")[1].split()[0])
    return out


STRACE_FLAGS = ["-f", "-c"]   # -f -y: every call with its file (by hand)
CALLS = ("fdatasync", "fsync", "pwrite64", "pread64", "unlink")


def strace_counts(path):
    """{call: count} from an strace -c -f summary."""
    counts = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5 and p[-1] in CALLS:
                counts[p[-1]] = int(p[3])
    return counts


def strace_report(a, base, work, total, npart):
    """One more repair of each method under strace -f -c: the calls per
    partition repaired (the daemon's threads, or sqlite3's)."""
    n = sum(npart.values())
    print()
    print("system calls per partition (%d partitions; strace -f -c, one repair each)" % n)
    print("| method | %s |" % " | ".join(CALLS))
    print("|---|%s|" % "|".join("--:" for _ in CALLS))
    for m in ("backfilld", "batch", "set", "floor"):
        out = os.path.join(work, "strace-%s.txt" % m)
        if m in ("backfilld", "batch"):
            run_backfilld(a, base, total, m == "batch", strace_out=out)
        else:
            run_sql(a, base, work, total, m, strace_out=out)
        c = strace_counts(out)
        print("| %s | %s |" % (LABEL[m], " | ".join("%.2f" % (c.get(x, 0) / n) for x in CALLS)))


def busy(runs):
    """(seconds some run of the request was running, seconds from its first
    run's start to its last one's end), from runs --json."""
    iv = sorted({(h.parse_iso(r["started_at"]), h.parse_iso(r["finished_at"]))
                 for r in runs})
    total, cur = 0.0, None
    for t0, t1 in iv:
        if cur and t0 <= cur[1]:
            cur = (cur[0], max(cur[1], t1))
            continue
        if cur:
            total += (cur[1] - cur[0]).total_seconds()
        cur = (t0, t1)
    total += (cur[1] - cur[0]).total_seconds()
    return total, (max(x[1] for x in iv) - iv[0][0]).total_seconds()


def run_sql(a, base, work, total, method, strace_out=None):
    """One sqlite3 process on a fresh copy; seconds from its start to its exit."""
    db = os.path.join(work, "run.db")
    fresh_copy(base[0], db)
    if method == "floor":
        sql = floor_sql(a, total)
    else:
        sql = set_sql(a.rfirst, a.rlast, a.newest, total, method == "full")
    t0 = time.monotonic()
    pre = (["strace"] + STRACE_FLAGS + ["-o", strace_out, "-e", "trace=" + ",".join(CALLS)]
           if strace_out else [])
    p = subprocess.run(pre + ["sqlite3", "-bail", db], input=sql, capture_output=True,
                       text=True)
    wall = time.monotonic() - t0
    h.check(p.returncode == 0, "sqlite3 (%s) exited %d: %s"
            % (method, p.returncode, p.stderr[-2000:]))
    result = digests(db)
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(db + suffix)
        except FileNotFoundError:
            pass
    return wall, result


METHODS = ("backfilld", "batch", "batchall", "set", "full", "floor")
LABEL = {"backfilld": "backfilld --wait", "batch": "backfilld, fact and mart batch: true",
         "batchall": "backfilld, every job batch: true",
         "set": "set-based SQL, same partitions",
         "full": "full-history recompute",
         "floor": "floor: its statements, a transaction a partition, one process"}


def paired(times, m, other):
    return statistics.median(x / y for x, y in zip(times[m], times[other]))


def git_head():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                            "daemon", "sql"], capture_output=True, text=True).stdout.strip()
    return (p.stdout.strip() or "?") + (" + uncommitted changes in daemon/" if dirty else "")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--days", type=int, default=730, help="history, days (default 2 years)")
    ap.add_argument("--rows-per-day", type=int, default=5000)
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--first", default="2024-11-01", help="the history's first day")
    ap.add_argument("--repair-days", type=int, default=90)
    ap.add_argument("--repair-from", type=int, default=500,
                    help="the repair's first day, as days after --first (default 500)")
    ap.add_argument("--concurrency", type=int, default=1, help="each job's concurrency")
    ap.add_argument("--max-concurrency", type=int, default=1)
    ap.add_argument("--journal", choices=("delete", "wal"), default="delete",
                    help="the warehouse's journal mode, for every method (default the"
                    " rollback journal, as gen.py leaves it)")
    ap.add_argument("--no-total", action="store_true", help="leave the running total out")
    ap.add_argument("--data", default=os.path.join(HERE, "data"),
                    help="where the generated raw warehouse is cached")
    ap.add_argument("--print-sql", action="store_true",
                    help="print the set-based and full scripts and exit")
    ap.add_argument("--source", help="the source the binaries were built from, for the"
                    " report (default: this tree's HEAD)")
    ap.add_argument("--strace", action="store_true",
                    help="then one more repair of each method under strace -f -c")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    if a.smoke:
        a.rounds, a.days, a.rows_per_day, a.stores = 1, 60, 20, 5
        a.repair_days, a.repair_from, a.first = 10, 30, "2025-01-01"
    h.check(a.repair_from + a.repair_days <= a.days, "the repair window ends after the history")
    d0 = datetime.date.fromisoformat(a.first)
    a.newest = (d0 + datetime.timedelta(a.days - 1)).isoformat()
    a.rfirst = (d0 + datetime.timedelta(a.repair_from)).isoformat()
    a.rlast = (d0 + datetime.timedelta(a.repair_from + a.repair_days - 1)).isoformat()
    return a


def report(a, total, times, took, npart):
    med = {m: statistics.median(times[m]) for m in METHODS}
    print("shapes_bench: %s, %d rounds; source %s; %s, %d CPUs; load average %s"
          % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             a.rounds, a.source or git_head(), platform.node(), os.cpu_count(), loadavg()))
    print("history %s..%s (%d days x %d sales); repair %s..%s (%d days): %s partitions;"
          " warehouse journal_mode %s, synchronous FULL, in %s"
          % (a.first, a.newest, a.days, a.rows_per_day, a.rfirst, a.rlast, a.repair_days,
             " + ".join("%d %s" % (n, j) for j, n in npart.items()),
             a.journal, tempfile.gettempdir()))
    if not total:
        print("running total LEFT OUT (this backfilld refuses a job in its own upstream)")
    print()
    forms = ("backfilld", "batch", "batchall")
    print("| method | median ms | %s |" % " | ".join(
        "%s / it, paired" % {"backfilld": "per partition", "batch": "fact, mart batch",
                             "batchall": "all batch"}[f] for f in forms))
    print("|---|--:|--:|--:|--:|")
    for m in METHODS:
        print("| %s | %.0f | %s |" % (LABEL[m], med[m] * 1000, " | ".join(
            "" if m == f else "%.2f" % paired(times, f, m) for f in forms)))
    print()
    print("| target | measured | bound | |")
    print("|---|--:|--:|---|")
    for m in forms:
        r_set = paired(times, m, "set")
        r_full = paired(times, m, "full")
        print("| %s vs set-based SQL, same partitions | %.2f | <= 1.20 | %s |"
              % (LABEL[m], r_set, "met" if r_set <= 1.2 else "MISSED"))
        print("| %s vs full-history recompute | %.2f | < 1.00 | %s |"
              % (LABEL[m], r_full, "met" if r_full < 1.0 else "MISSED"))
    print("| set-based vs full-history recompute | %.2f | | |"
          % paired(times, "set", "full"))
    print("| floor vs set-based SQL (a commit a partition) | %.2f | | |"
          % paired(times, "floor", "set"))
    print()
    for m in ("backfilld", "batch", "batchall"):
        tk = took[m]
        jobs = [j for j in tk[0] if j not in ("busy", "span")]
        runs = {j: statistics.median(t[j][0] for t in tk) for j in jobs}
        ms = {j: statistics.median(t[j][1] for t in tk) for j in jobs}
        bz = statistics.median(t["busy"] for t in tk)
        sp = statistics.median(t["span"] for t in tk)
        print("%s, medians: wall %.0f ms; runs (the daemon's log: count, ms from start to"
              " end) %s; some run running %.0f ms of the %.0f ms from the first run's start"
              " to the last one's end (runs --json); %.0f ms before and after (client,"
              " request, plan, answer)"
              % (LABEL[m], med[m] * 1000,
                 ", ".join("%s %d, %.0f" % (j, runs[j], ms[j]) for j in jobs),
                 bz * 1000, sp * 1000, (med[m] - sp) * 1000))


def main(argv=None):
    a = parse(argv)
    if shutil.which("sqlite3") is None:
        print("shapes_bench: needs the sqlite3 CLI (apt-get install sqlite3)", file=sys.stderr)
        return 77 if a.smoke else 2
    work = tempfile.mkdtemp(prefix="shapesbench-")
    try:
        if a.smoke:
            a.data = work
        total, why = total_supported(work, a)
        if a.no_total:
            total = False
        elif not total:
            log("the running total is left out: --check-config says:\n  " + why)
        if a.print_sql:
            print("-- set-based\n" + set_sql(a.rfirst, a.rlast, a.newest, total, False))
            print("-- full\n" + set_sql(a.rfirst, a.rlast, a.newest, total, True))
            return 0
        base_wh, base_st, before = prepare(a, work, total)
        base = (base_wh, base_st)
        want = {m: [] for m in METHODS}
        times, truth = {m: [] for m in METHODS}, None
        took = {"backfilld": [], "batch": [], "batchall": []}
        for rnd in range(a.rounds):
            k = rnd % len(METHODS)
            order = METHODS[k:] + METHODS[:k]
            for m in order:
                if m in ("backfilld", "batch", "batchall"):
                    t, tk, res = run_backfilld(a, base, total,
                                               {"batch": True, "batchall": "all"}.get(m))
                    took[m].append(tk)
                else:
                    t, res = run_sql(a, base, work, total, m)
                log("round %d: %s %.0f ms" % (rnd + 1, m, t * 1000))
                times[m].append(t)
                want[m].append(res)
                if m == "full" and truth is None:
                    truth = res
        for m in METHODS:
            for res in want[m]:
                h.eq(res, truth, "%s's tables against the full-history recompute's" % LABEL[m])
        for name, _ in TABLES:
            if name == "revenue_to_date" and not total:
                continue
            h.check(truth[name] != before[name], "the repair left %s as it was" % name)
        npart = {j: len(p) for j, p in expected_runs(a, total).items()}
        if a.smoke:
            print("smoke: %s; every table equal to a full-history recompute%s"
                  % (", ".join("%d %s" % (n, j) for j, n in npart.items()),
                     "" if total else " (running total left out: not supported yet)"))
            return 0
        report(a, total, times, took, npart)
        if a.strace:
            strace_report(a, base, work, total, npart)
        return 0
    finally:
        if os.environ.get("KEEP_TMP"):
            log("kept " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
