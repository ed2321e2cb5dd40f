#!/usr/bin/env python3
"""soak.py - a year of schedule on the test clock, and what history costs.

    tests/bench/soak.py [--build DIR] [--quick] [--days N] [--skip PARTS]

Parts (all by default; --skip year,dump,startup,prune leaves some out):

  year     30 hourly jobs (one SQLite warehouse each) plus a daily fact and
           its weekly mart, driven a day at a time through --days simulated
           days (default 360: 259,200 hourly runs) on the test clock.  At
           days 30, 180 and 360 (scaled with --days): the WAL's largest size
           so far, state store bytes per run kept, `status` latency (median
           of 21 answers over the raw protocol), daemon RSS and descriptors,
           runs per second over the period.
  dump     `backfillctl runs --json` of the whole history of `year` into a
           pipe: runs per second, and the daemon's RSS growth while it
           streams (sampled every 20 ms).
  startup  a state store holding a million finished runs (generated with
           SQL into the daemon's own schema): time from exec to READY=1,
           and `status` latency on it.
  prune    keep_runs: 2d and nine backfills of the same 8,640 hourly
           partitions a day apart on the clock, then a day more: the runs
           left (the contract: at most 4 x 8,640).

Targets (issue 11): WAL never above 64 MiB; status at day 360 <= 20 ms and
<= 3x day 30; RSS growth day 30 -> 360 <= 8 MiB; descriptors flat; runs
--json >= 200,000 runs/s with <= 16 MiB daemon growth; <= 400 bytes of
store per run kept; start-up with a million runs <= 1 s; prune <= 4 x 8,640.
Missed targets are reported, not failures; a wrong result (a partition
not run exactly once, a daemon that dies) exits 1.

Needs only Python 3 and the built binaries (--build, default build/).
Everything happens in a temporary folder (--workdir to choose; KEEP_TMP=1
keeps it).
"""

import argparse
import datetime
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench  # noqa: E402  (Daemon, proto_call, proc_status, kib, log)

MiB = 1024 * 1024
EPOCH = datetime.datetime(2026, 1, 1)


class ClockDaemon(bench.Daemon):
    """The bench daemon on a test clock file."""

    def __init__(self, args, workdir, config_text, clock):
        super().__init__(args, workdir, config_text)
        self.clock_file = os.path.join(workdir, "clock")
        self.set_clock(clock)

    def set_clock(self, when):
        tmp = self.clock_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(when.strftime("%Y-%m-%dT%H:%M:%SZ") + "\n")
        os.rename(tmp, self.clock_file)

    def env(self):
        e = super().env()
        e["BACKFILLD_TEST_CLOCK_FILE"] = self.clock_file
        return e

    def status(self):
        _, out = self.ctl("status", "--json")
        return json.loads(out)


def status_ms(dm, n=21):
    return statistics.median(bench.proto_call(dm.sock, {"cmd": "status", "json": "1"})[0]
                             for _ in range(n)) * 1000.0


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def wait_until(dm, pred, guard, what):
    deadline = time.monotonic() + guard
    while True:
        st = dm.status()
        if pred(st):
            return st
        if time.monotonic() > deadline:
            raise bench.BenchError("%s not reached within %.0f s (guard)\n%s"
                                   % (what, guard, dm.tail()))
        time.sleep(0.02)


# ---------------------------------------------------------------- the year

def year_config(njobs):
    lines = ["state_db: state.db", "socket: backfilld.sock", "max_concurrency: 4",
             "log_level: warning", "warehouses:"]
    for i in range(njobs):
        lines.append("  - {name: w%02d, sqlite: w%02d.db}" % (i, i))
    lines.append("  - {name: sales, sqlite: sales.db}")
    lines.append("jobs:")
    for i in range(njobs):
        lines += ["  - name: h%02d" % i, "    warehouse: w%02d" % i, "    partition: hour",
                  "    start: 2026-01-01", "    max_catchup: 48",
                  "    sql: INSERT INTO ran (k) VALUES (:partition)"]
    lines += ["  - name: fct", "    warehouse: sales", "    partition: day",
              "    start: 2026-01-01",
              "    sql: INSERT INTO fct (dt) VALUES (:partition)",
              "  - name: wk", "    warehouse: sales", "    partition: week",
              "    upstream: [fct]",
              "    sql: |",
              "      DELETE FROM wk WHERE week = :partition;",
              "      INSERT INTO wk SELECT :partition, COUNT(*) FROM fct",
              "      WHERE dt >= :partition_start AND dt < :partition_end;"]
    return "\n".join(lines) + "\n"


def year(args, work, report):
    d = os.path.join(work, "year")
    os.makedirs(d)
    for i in range(args.jobs):
        con = sqlite3.connect(os.path.join(d, "w%02d.db" % i))
        con.execute("CREATE TABLE ran (k TEXT)")
        con.close()
    con = sqlite3.connect(os.path.join(d, "sales.db"))
    con.executescript("CREATE TABLE fct (dt TEXT); CREATE TABLE wk (week TEXT, n INTEGER);")
    con.close()
    dm = ClockDaemon(args, d, year_config(args.jobs), EPOCH).start()
    wal = dm.state_db + "-wal"
    marks = sorted({max(1, round(args.days * m / 360)) for m in (30, 180, 360)})
    rows, max_wal = [], 0
    t_prev, runs_prev = time.monotonic(), 0
    try:
        for day in range(1, args.days + 1):
            when = EPOCH + datetime.timedelta(days=day)
            want = (when - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H")
            dm.set_clock(when)
            st = wait_until(dm, lambda s: s["queued"] == 0 and s["running"] == 0 and all(
                j["watermark"] == want for j in s["jobs"] if j["grain"] == "hour"),
                600, "day %d done" % day)
            if os.path.exists(wal):
                max_wal = max(max_wal, os.path.getsize(wal))
            if day in marks:
                now = time.monotonic()
                kept = st["runs_kept"]
                rss, _ = dm.rss_kib()
                row = {"day": day, "runs_kept": kept, "max_wal_bytes": max_wal,
                       "store_bytes": st["store_bytes"] + st["wal_bytes"],
                       "bytes_per_run": round(st["store_bytes"] / max(kept, 1), 1),
                       "status_ms": round(status_ms(dm), 3), "rss_kib": rss,
                       "fds": fds(dm.pid),
                       "runs_per_s": round((kept - runs_prev) / (now - t_prev), 1)}
                rows.append(row)
                bench.log("  day %(day)d: %(runs_kept)d runs, WAL max %(max_wal_bytes)d B, "
                          "%(bytes_per_run).0f B/run, status %(status_ms).2f ms, "
                          "RSS %(rss_kib)d KiB, %(fds)d fds, %(runs_per_s).0f runs/s" % row)
                t_prev, runs_prev = time.monotonic(), kept
        # every partition ran once, the mart matches the fact
        for i in range(args.jobs):
            con = sqlite3.connect(os.path.join(d, "w%02d.db" % i))
            n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT k) FROM ran").fetchone()
            con.close()
            if n != distinct or n != args.days * 24:
                raise bench.BenchError("job h%02d: %d runs of %d partitions, expected %d once"
                                       % (i, n, distinct, args.days * 24))
        con = sqlite3.connect(os.path.join(d, "sales.db"))
        n = con.execute("SELECT COUNT(*) FROM fct").fetchone()[0]
        total = con.execute("SELECT COALESCE(SUM(n), 0) FROM wk").fetchone()[0]
        con.close()
        if n != args.days or total != args.days:
            raise bench.BenchError("fct %d rows, weeks sum %d, expected %d" % (n, total, args.days))
        if "dump" not in args.skip:
            dump(dm, report)
    finally:
        dm.stop()
    report["year"] = {"days": args.days, "jobs": args.jobs, "marks": rows,
                      "max_wal_bytes": max_wal}
    report["_year_dir"] = d


def dump(dm, report):
    """runs --json of the whole history into a pipe."""
    import threading
    rss0, _ = dm.rss_kib()
    peak = [rss0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], dm.rss_kib()[0])
            time.sleep(0.02)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.monotonic()
    p = subprocess.Popen([dm.args.backfillctl, "--socket", dm.sock, "runs", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks = []
    while True:
        b = p.stdout.read(1 << 20)
        if not b:
            break
        chunks.append(b)
    err = p.stderr.read()
    rc = p.wait()
    dt = time.monotonic() - t0
    stop.set()
    th.join()
    if rc != 0:
        raise bench.BenchError("runs --json: exit %d: %s" % (rc, err.decode()[-500:]))
    runs = json.loads(b"".join(chunks))
    res = {"runs": len(runs), "seconds": round(dt, 3), "runs_per_s": round(len(runs) / dt),
           "bytes": sum(map(len, chunks)), "rss_growth_kib": peak[0] - rss0}
    report["dump"] = res
    bench.log("  runs --json: %(runs)d runs in %(seconds).2f s = %(runs_per_s)d runs/s, "
              "%(bytes)d bytes, daemon RSS +%(rss_growth_kib)d KiB" % res)


# ---------------------------------------------------------------- start-up

def startup(args, work, report, n=1000000):
    d = os.path.join(work, "startup")
    os.makedirs(d)
    jobs = 30
    conf = ["state_db: state.db", "socket: backfilld.sock", "log_level: warning", "jobs:"]
    for i in range(jobs):
        conf += ["  - name: h%02d" % i, "    partition: hour", "    command: [\"true\"]"]
    dm = ClockDaemon(args, d, "\n".join(conf) + "\n", EPOCH).start()
    dm.stop()
    per_job = n // jobs
    t0 = time.monotonic()
    con = sqlite3.connect(dm.state_db)
    # one request per job and 240 partitions (10 days), every run succeeded
    con.executescript("""
        PRAGMA synchronous = OFF;
        BEGIN;
        CREATE TEMP TABLE seq AS WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL
            SELECT i + 1 FROM s WHERE i + 1 < %(per_job)d) SELECT i FROM s;
        CREATE TEMP TABLE jb AS WITH RECURSIVE j(n) AS (SELECT 0 UNION ALL
            SELECT n + 1 FROM j WHERE n + 1 < %(jobs)d) SELECT n, printf('h%%02d', n) AS job FROM j;
        INSERT INTO requests (id, job, kind, reprocess, created_at, finished_at)
            SELECT jb.n * 100000 + s.i / 240 + 1, jb.job, 'backfill', 'all',
                   1700000000000 + s.i * 1000, 1700000000000 + s.i * 1000 + 240000
            FROM jb, seq s WHERE s.i %% 240 = 0;
        INSERT INTO manifest (id, request_id, job, partition_key, seq, state, attempts,
                              created_at, updated_at)
            SELECT jb.n * %(per_job)d + s.i + 1, jb.n * 100000 + s.i / 240 + 1, jb.job,
                   strftime('%%Y-%%m-%%dT%%H', 1600000000 + s.i * 3600, 'unixepoch'),
                   s.i %% 240, 'succeeded', 1, 1700000000000, 1700000000000
            FROM jb, seq s;
        INSERT INTO runs (id, manifest_id, request_id, job, partition_key, attempt, state,
                          started_at, finished_at, rows_changed, code_version)
            SELECT id, id, request_id, job, partition_key, 1, 'succeeded', created_at,
                   created_at + 5, 1, '0123456789abcdef' FROM manifest;
        INSERT INTO partition_latest (job, partition_key, run_id, state)
            SELECT job, partition_key, id, 'succeeded' FROM runs;
        INSERT INTO partitions (job, partition_key, built_at, run_id, code_version)
            SELECT job, partition_key, finished_at, id, code_version FROM runs;
        COMMIT;
    """ % {"per_job": per_job, "jobs": jobs})
    total = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    gen_s = time.monotonic() - t0
    subprocess.run(["sync"])
    times = []
    for _ in range(3):
        dm.start()
        times.append(dm.ready_s)
        st = status_ms(dm)
        kept = dm.status()["runs_kept"]
        dm.stop()
    if kept != total:
        raise bench.BenchError("status says %d runs kept, the store holds %d" % (kept, total))
    res = {"runs": total, "generate_s": round(gen_s, 1), "ready_s": [round(t, 3) for t in times],
           "ready_median_s": round(statistics.median(times), 3), "status_ms": round(st, 3)}
    report["startup"] = res
    bench.log("  start-up with %(runs)d runs: READY=1 in %(ready_median_s).3f s (median of 3), "
              "status %(status_ms).2f ms" % res)


# ---------------------------------------------------------------- pruning

def prune(args, work, report, hours=8640, backfills=9):
    d = os.path.join(work, "prune")
    os.makedirs(d)
    con = sqlite3.connect(os.path.join(d, "w.db"))
    con.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    con.close()
    conf = ("state_db: state.db\nsocket: backfilld.sock\nlog_level: warning\n"
            "keep_runs: 2d\nmax_backfill: %d\nmax_concurrency: 2\n"
            "warehouses:\n  - {name: w, sqlite: w.db}\n"
            "jobs:\n  - name: h\n    warehouse: w\n    partition: hour\n    concurrency: 2\n"
            "    sql: INSERT OR REPLACE INTO t (k) VALUES (:partition)\n" % hours)
    day0 = datetime.datetime(2027, 1, 1)
    dm = ClockDaemon(args, d, conf, day0).start()
    last = (datetime.date(2025, 1, 1) + datetime.timedelta(hours=hours - 1)).isoformat()
    kept_after = []
    try:
        t0 = time.monotonic()
        for i in range(backfills):
            dm.set_clock(day0 + datetime.timedelta(days=i))
            dm.ctl("backfill", "h", "--from", "2025-01-01", "--to", last, "--wait",
                   timeout=3600)
            kept_after.append(dm.status()["runs_kept"])
        dm.set_clock(day0 + datetime.timedelta(days=backfills))
        st = wait_until(dm, lambda s: s["runs_kept"] <= 2 * hours, 300, "pruning")
        dt = time.monotonic() - t0
    finally:
        dm.stop()
    res = {"partitions": hours, "backfills": backfills, "runs_kept_each_day": kept_after,
           "runs_kept_end": st["runs_kept"], "bound": 4 * hours, "seconds": round(dt, 1)}
    report["prune"] = res
    bench.log("  keep_runs 2d, %d backfills of %d partitions: at most %d runs kept on any day, "
              "%d at the end (bound %d)" % (backfills, hours, max(kept_after),
                                            st["runs_kept"], 4 * hours))


# ---------------------------------------------------------------- targets

def targets(report):
    out = []

    def t(name, ok, detail):
        out.append((name, ok, detail))
    y = report.get("year")
    if y and y["marks"]:
        first, last = y["marks"][0], y["marks"][-1]
        t("WAL never above 64 MiB", y["max_wal_bytes"] <= 64 * MiB,
          "max %.1f MiB" % (y["max_wal_bytes"] / MiB))
        t("status at the last mark <= 20 ms and <= 3x the first",
          last["status_ms"] <= 20 and last["status_ms"] <= 3 * max(first["status_ms"], 0.001),
          "%.2f ms at day %d, %.2f ms at day %d" % (last["status_ms"], last["day"],
                                                    first["status_ms"], first["day"]))
        t("RSS growth first -> last mark <= 8 MiB", last["rss_kib"] - first["rss_kib"] <= 8192,
          "%+d KiB" % (last["rss_kib"] - first["rss_kib"]))
        t("descriptors flat", last["fds"] <= first["fds"], "%d -> %d" % (first["fds"], last["fds"]))
        t("<= 400 bytes of store per run kept", last["bytes_per_run"] <= 400,
          "%.0f B/run" % last["bytes_per_run"])
    dmp = report.get("dump")
    if dmp:
        t("runs --json >= 200,000 runs/s", dmp["runs_per_s"] >= 200000, "%d runs/s" % dmp["runs_per_s"])
        t("runs --json daemon growth <= 16 MiB", dmp["rss_growth_kib"] <= 16384,
          "%+d KiB" % dmp["rss_growth_kib"])
    su = report.get("startup")
    if su:
        t("start-up with a million runs <= 1 s", su["ready_median_s"] <= 1.0,
          "%.3f s" % su["ready_median_s"])
    pr = report.get("prune")
    if pr:
        t("keep_runs 2d: at most 4 x 8,640 runs remain",
          max(pr["runs_kept_each_day"] + [pr["runs_kept_end"]]) <= pr["bound"],
          "max %d" % max(pr["runs_kept_each_day"] + [pr["runs_kept_end"]]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--days", type=int, default=360)
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="36 days, 10 jobs")
    ap.add_argument("--skip", default="")
    ap.add_argument("--workdir")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    args.skip = set(filter(None, args.skip.split(",")))
    if args.quick:
        args.days, args.jobs = 36, 10
    args.backfilld = os.path.abspath(os.environ.get("BACKFILLD") or
                                     os.path.join(args.build, "daemon", "backfilld"))
    args.backfillctl = os.path.abspath(os.environ.get("BACKFILLCTL") or
                                       os.path.join(args.build, "daemon", "backfillctl"))
    for b in (args.backfilld, args.backfillctl):
        if not os.access(b, os.X_OK):
            print("soak.py: %s is not built: meson setup build && meson compile -C build" % b,
                  file=sys.stderr)
            return 2
    work = tempfile.mkdtemp(prefix="bfd-soak-", dir=args.workdir)
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    ok = False
    try:
        if "year" not in args.skip:
            bench.log("year: %d hourly jobs + a daily fact and its weekly mart, %d days"
                      % (args.jobs, args.days))
            year(args, work, report)
        if "startup" not in args.skip:
            startup(args, work, report)
        if "prune" not in args.skip:
            prune(args, work, report)
        ok = True
    except bench.BenchError as e:
        print("soak.py: %s" % e, file=sys.stderr)
    finally:
        report.pop("_year_dir", None)
        if ok and not os.environ.get("KEEP_TMP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("soak.py: kept %s" % work, file=sys.stderr)
    res = targets(report)
    report["targets"] = [{"target": n, "met": m, "measured": dt} for n, m, dt in res]
    print("\ntargets:")
    for n, m, dt in res:
        print("  %-55s %-6s %s" % (n, "met" if m else "MISSED", dt))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
