#!/usr/bin/env python3
"""run.py - backfilld against what users do by hand (issue 6).

    tests/bench/run.py [--quick | --smoke] [--runs N] [--build DIR] ...

Measures, in ONE run, alternating the methods and repeating each N times
(default 5), a per-date backfill of the lesson's sales warehouse (365 days
x 100 stores x 27,000 rows a day) of 30 and 90 days, fact plus the affected
weeks of the weekly mart, with and without a covering index, by:

  hand loop   hand_loop.sh: one sqlite3 process per date, then per week
  xargs -P 2  xargs_p.sh: the same, two processes at a time
  set-based   set_based.sh: one process, manifest table, two statements
  floor       floor.sh: the per-partition transactions in one process
  backfilld   the daemon: backfillctl backfill ... --wait, end to end
  batch       backfilld with `batch: true` (measured only if the daemon
              really runs a request as one run; otherwise "not available")
  chunks      backfilld with `batch: 7`: a week of days per run, each its
              own transaction (measured with batch)

Every method starts from the same bytes (a cp of a cached, generated
warehouse, flushed to disk before the clock starts) and its result is
checked: the fact and the mart must be identical (revenue to the cent)
across methods, the rebuilt partitions must equal raw_sales, and nothing
outside the window may change.  A wrong result makes the run fail.

Then the issue's other targets: 10,000 one-row partitions of an hourly job
(partitions/s, every run counted in the state store), an idle daemon with
100 jobs (VmRSS, context switches over 5 s), a ten-thousand-year request
refused (client round trip), a reload of a 1,000-job configuration
(`backfillctl reload` round trip) and 100,000 queued partitions (enqueue
time, RSS growth, `status` latency while they run).

Modes: default (about 10-15 min on 2 cores), --quick (one run each, about
3 min), --smoke (a tiny warehouse in a temporary folder, one run, no timing
assertions; fails on wrong results: the test suite's bench_smoke).

Exit codes: 0 done (targets missed are reported, not failures), 1 a method
produced a wrong result or the daemon misbehaved, 2 bad usage or a missing
tool (the message says what to install; 77 instead under --smoke, which
meson reports as a skip).
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import select
import shutil
import signal
import socket
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77

READY_TIMEOUT = 60.0      # guards only: nothing waits on a timer to see progress
CTL_TIMEOUT = 1800.0

FACT_SQL = """\
DELETE FROM fct_daily_sales WHERE dt = :partition;
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
"""
WEEK_SQL = """\
DELETE FROM mart_weekly_sales WHERE week_start = :partition;
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT :partition, SUM(revenue_usd) FROM fct_daily_sales
WHERE dt >= :partition_start AND dt < :partition_end;
"""
# batch: true (backfilld.yaml(5), batch): the daemon fills the
# temporary table backfill_manifest(partition_key, partition_start,
# partition_end) and runs the SQL once for the whole request.
FACT_BATCH_SQL = """\
DELETE FROM fct_daily_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest);
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE dt IN (SELECT partition_key FROM backfill_manifest)
GROUP BY dt, store_id;
"""
WEEK_BATCH_SQL = """\
DELETE FROM mart_weekly_sales WHERE week_start IN (SELECT partition_key FROM backfill_manifest);
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT m.partition_key,
       (SELECT SUM(revenue_usd) FROM fct_daily_sales
        WHERE dt >= m.partition_start AND dt < m.partition_end)
FROM backfill_manifest m;
"""
HOURLY_SQL = """\
DELETE FROM hourly WHERE hour = :partition;
INSERT INTO hourly (hour, n) VALUES (:partition, 1);
"""

METHODS = ["hand", "xargs2", "set", "floor", "backfilld"]
LABEL = {
    "hand": "hand loop (sqlite3 per date)",
    "xargs2": "xargs -P 2 of the same",
    "set": "set-based (manifest, 2 stmts)",
    "floor": "floor: per-date tx, 1 process",
    "backfilld": "backfilld --wait",
    "batch": "backfilld batch: true",
    "chunk": "backfilld batch: 7 (chunks)",
}
CHUNK = 7   # batch: N of the "chunk" method: a week of days per run
SCRIPT = {"hand": "hand_loop.sh", "xargs2": "xargs_p.sh", "set": "set_based.sh",
          "floor": "floor.sh"}


class BenchError(Exception):
    """A wrong result or a misbehaving daemon: the run fails (exit 1)."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def indent(text, n=2):
    return "\n".join(" " * n + line for line in text.splitlines())


# ------------------------------------------------------------------ tools

def missing_tools(args):
    """[(what, how to install)] of what this run needs and lacks."""
    out = []
    for tool, pkg in (("bash", "install bash"), ("sqlite3", "install the sqlite3 CLI (apt-get install sqlite3)"),
                      ("xargs", "install findutils"), ("sed", "install sed"), ("cp", "install coreutils")):
        if not shutil.which(tool):
            out.append((tool, pkg))
    for p in (args.backfilld, args.backfillctl):
        if not os.access(p, os.X_OK):
            out.append((p, "build it: meson setup build-bench --buildtype=release "
                           "-Dtests=true && meson compile -C build-bench "
                           "(or pass --build DIR, or BACKFILLD/BACKFILLCTL)"))
    if args.profile and not shutil.which("valgrind"):
        out.append(("valgrind", "install valgrind (apt-get install valgrind) for --profile"))
    if args.profile and not shutil.which("callgrind_annotate"):
        out.append(("callgrind_annotate", "install valgrind (apt-get install valgrind) for --profile"))
    if sys.version_info < (3, 8):
        out.append(("python >= 3.8", "install python3 3.8 or newer"))
    return out


# ------------------------------------------------------------------ warehouses

def date_range(first, n):
    d0 = datetime.date.fromisoformat(first)
    return [(d0 + datetime.timedelta(i)).isoformat() for i in range(n)]


def monday(d):
    x = datetime.date.fromisoformat(d)
    return (x - datetime.timedelta(x.weekday())).isoformat()


def cached_warehouse(args, covering):
    """The generated warehouse for these options (generated once, then
    reused: gen.py refuses to overwrite it)."""
    name = "sales-d%d-r%d-s%d-seed%d%s.db" % (args.days, args.rows_per_day, args.stores,
                                             args.seed, "-covering" if covering else "")
    path = os.path.join(args.data, name)
    if not os.path.exists(path):
        os.makedirs(args.data, exist_ok=True)
        log("generating %s (once; cached for later runs) ..." % path)
        t0 = time.monotonic()
        cmd = [sys.executable, os.path.join(HERE, "gen.py"), path, "--days", str(args.days),
               "--rows-per-day", str(args.rows_per_day), "--stores", str(args.stores),
               "--seed", str(args.seed), "--start", args.year_start]
        if covering:
            cmd.append("--covering-index")
        if args.smoke:
            cmd.append("--quiet")
        r = subprocess.run(cmd)
        if r.returncode != 0:
            raise BenchError("gen.py failed (exit %d)" % r.returncode)
        log("  generated in %.1f s" % (time.monotonic() - t0))
    return path


def fresh_copy(src, dst):
    """dst := the bytes of src, on disk (so no method pays for our writeback)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(dst + suffix)
        except FileNotFoundError:
            pass
    subprocess.run(["cp", src, dst], check=True)
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.sync()


FACT_Q = ("SELECT dt, store_id, sales, printf('%.2f', revenue_usd) "
          "FROM fct_daily_sales ORDER BY dt, store_id")
MART_Q = "SELECT week_start, printf('%.2f', revenue_usd) FROM mart_weekly_sales ORDER BY week_start"


def ro(path):
    return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=60)


def digest(path):
    """sha256 of the fact and mart tables, revenue to the cent (the order of
    a floating-point SUM may differ between plans; the cents may not)."""
    con = ro(path)
    try:
        h = hashlib.sha256()
        for q in (FACT_Q, MART_Q):
            for row in con.execute(q):
                h.update(repr(row).encode())
            h.update(b"|")
        return h.hexdigest()
    finally:
        con.close()


def outside_digest(path, first, last, weeks):
    con = ro(path)
    try:
        h = hashlib.sha256()
        for row in con.execute("SELECT dt, store_id, sales, printf('%.2f', revenue_usd) "
                               "FROM fct_daily_sales WHERE dt < ? OR dt > ? "
                               "ORDER BY dt, store_id", (first, last)):
            h.update(repr(row).encode())
        marks = ",".join("?" * len(weeks))
        for row in con.execute("SELECT week_start, printf('%%.2f', revenue_usd) "
                               "FROM mart_weekly_sales WHERE week_start NOT IN (%s) "
                               "ORDER BY week_start" % marks, weeks):
            h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        con.close()


def check_truth(path, first, last, weeks, pristine_outside, what):
    """The rebuilt partitions equal raw_sales (refunds included), the weeks
    equal the fact, and nothing else moved."""
    con = ro(path)
    try:
        groups, good = con.execute(
            "SELECT COUNT(*), SUM(f.sales = t.c AND printf('%.2f', f.revenue_usd) = t.r) "
            "FROM (SELECT dt, store_id, COUNT(*) AS c, printf('%.2f', SUM(amount_usd)) AS r "
            "      FROM raw_sales WHERE dt BETWEEN ? AND ? GROUP BY dt, store_id) t "
            "LEFT JOIN fct_daily_sales f USING (dt, store_id)", (first, last)).fetchone()
        nfact = con.execute("SELECT COUNT(*) FROM fct_daily_sales WHERE dt BETWEEN ? AND ?",
                            (first, last)).fetchone()[0]
        if not groups or good != groups or nfact != groups:
            raise BenchError("%s: fct_daily_sales %s..%s does not match raw_sales "
                             "(%s of %s groups right, %s rows)" % (what, first, last, good,
                                                                   groups, nfact))
        for w in weeks:
            m, f = con.execute(
                "SELECT (SELECT printf('%.2f', revenue_usd) FROM mart_weekly_sales "
                "        WHERE week_start = :w), "
                "       (SELECT printf('%.2f', SUM(revenue_usd)) FROM fct_daily_sales "
                "        WHERE dt >= :w AND dt < date(:w, '+7 days'))", {"w": w}).fetchone()
            if m != f:
                raise BenchError("%s: mart_weekly_sales %s is %s, its days sum to %s "
                                 "(the mart still lies)" % (what, w, m, f))
    finally:
        con.close()
    if outside_digest(path, first, last, weeks) != pristine_outside:
        raise BenchError("%s: rows outside %s..%s (or weeks not affected) changed"
                         % (what, first, last))


# ------------------------------------------------------------------ the daemon

def proc_status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def kib(v):
    return int(v.split()[0]) if v else 0


def ctxt_switches(pid):
    """(main thread, all threads) voluntary + nonvoluntary switches."""
    st = proc_status(pid)
    main = int(st.get("voluntary_ctxt_switches", 0)) + int(st.get("nonvoluntary_ctxt_switches", 0))
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        tids = []
    for t in tids:
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split(":")[1])
        except OSError:
            pass
    return main, total, len(tids)


class Daemon:
    """backfilld --config DIR/backfilld.yaml in the foreground; ready when
    it sends READY=1 to our NOTIFY_SOCKET, which a thread keeps draining
    while it runs (the kernel queues only a few datagrams, and sd_notify
    would block the daemon on a full queue)."""

    def __init__(self, args, workdir, config_text, wrapper=None):
        self.args = args
        self.dir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.conf = os.path.join(workdir, "backfilld.yaml")
        self.sock = os.path.join(workdir, "backfilld.sock")
        self.state_db = os.path.join(workdir, "state.db")
        self.log = os.path.join(workdir, "backfilld.log")
        with open(self.conf, "w") as f:
            f.write(config_text)
        self.wrapper = wrapper or []
        self.proc = None
        self.notify = None
        self.notifications = 0
        self._stop = threading.Event()
        self._thread = None
        self.ready_s = None

    def env(self):
        e = dict(os.environ)
        for k in ("WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM",
                  "BACKFILLD_TEST_CLOCK_FILE"):
            e.pop(k, None)
        e["NOTIFY_SOCKET"] = self.notify_path
        return e

    def start(self):
        self.notify_path = os.path.join(self.dir, "notify.sock")
        try:
            os.unlink(self.notify_path)
        except FileNotFoundError:
            pass
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        logf = open(self.log, "a")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.wrapper + [self.args.backfilld, "--config", self.conf],
                                     stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                     env=self.env(), cwd=self.dir)
        logf.close()
        deadline = t0 + READY_TIMEOUT * (20 if self.wrapper else 1)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise BenchError("backfilld sent no READY=1 within the guard\n" + self.tail())
            r, _, _ = select.select([self.notify], [], [], min(left, 0.2))
            if r:
                msg = self.notify.recv(65536).decode("utf-8", "replace")
                self.notifications += 1
                if "READY=1" in msg.split("\n"):
                    break
            elif self.proc.poll() is not None:
                raise BenchError("backfilld exited with %s before READY=1\n%s"
                                 % (self.proc.returncode, self.tail()))
        self.ready_s = time.monotonic() - t0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()
        return self

    def _drain(self):
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([self.notify], [], [], 0.1)
            except (OSError, ValueError):
                return
            if r:
                try:
                    self.notify.recv(65536)
                    self.notifications += 1
                except OSError:
                    return

    @property
    def pid(self):
        return self.proc.pid

    def ctl(self, *argv, expect=0, timeout=CTL_TIMEOUT):
        """backfillctl --socket S ARGV: (seconds, stdout), exit code checked."""
        cmd = [self.args.backfillctl, "--socket", self.sock] + [str(a) for a in argv]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=timeout, cwd=self.dir)
        dt = time.monotonic() - t0
        if expect is not None and p.returncode != expect:
            raise BenchError("backfillctl %s: exit %d, expected %d\nstdout: %s\nstderr: %s\n%s"
                             % (" ".join(map(str, argv)), p.returncode, expect,
                                p.stdout[-2000:], p.stderr[-2000:], self.tail()))
        if self.proc.poll() is not None:
            raise BenchError("backfilld exited (%s) during backfillctl %s\n%s"
                             % (self.proc.returncode, " ".join(map(str, argv)), self.tail()))
        return dt, p.stdout + p.stderr

    def runs(self, **where):
        """{(job, state): count} from the state store."""
        con = ro(self.state_db)
        try:
            return {(j, s): n for j, s, n in con.execute(
                "SELECT job, state, COUNT(*) FROM runs GROUP BY job, state")}
        finally:
            con.close()

    def rss_kib(self):
        st = proc_status(self.pid)
        return kib(st.get("VmRSS")), kib(st.get("VmHWM"))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.kill()
                raise BenchError("backfilld did not stop on SIGTERM\n" + self.tail())
        self._stop.set()
        if self._thread:
            self._thread.join()
        if self.notify:
            self.notify.close()
            self.notify = None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def tail(self, n=30):
        try:
            with open(self.log, errors="replace") as f:
                return "---- %s (last %d lines)\n%s" % (self.log, n, "".join(f.readlines()[-n:]))
        except OSError:
            return "(no daemon log)"


PROTO_MAGIC, PROTO_VERSION, PROTO_REQUEST, PROTO_RESPONSE = 0x42464C44, 2, 1, 2
PROTO_DATA = 4


def proto_call(sock_path, fields):
    """One request on the control socket without backfillctl (docs/protocol.md:
    12-byte header, then NUL-terminated key=value pairs): (seconds, response)."""
    body = b"".join(b"%s=%s\0" % (k.encode(), str(v).encode()) for k, v in fields.items())
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    try:
        s.connect(sock_path)
        s.sendall(struct.pack(">IHHI", PROTO_MAGIC, PROTO_VERSION, PROTO_REQUEST, len(body)) + body)
        streamed = b""
        while True:
            hdr = _recv_exact(s, 12)
            magic, _, typ, n = struct.unpack(">IHHI", hdr)
            data = _recv_exact(s, n) if n else b""
            if typ == PROTO_DATA:  # a chunk of stdout: "out=...\0"
                streamed += data[4:-1]
            if typ == PROTO_RESPONSE:
                break
    finally:
        s.close()
    dt = time.monotonic() - t0
    out = {}
    for part in data.split(b"\0")[:-1]:
        k, _, v = part.partition(b"=")
        out[k.decode()] = v.decode("utf-8", "replace")
    if streamed:
        out["out"] = streamed.decode("utf-8", "replace") + out.get("out", "")
    return dt, out


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise BenchError("the daemon closed the control connection mid-frame")
        buf += chunk
    return buf


def spawn_baseline(args, n):
    """Median seconds to run `backfillctl --version` from here: what starting
    any process costs on this machine, to read the round trips against."""
    ts = []
    for _ in range(n):
        t0 = time.monotonic()
        subprocess.run([args.backfillctl, "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ts.append(time.monotonic() - t0)
    return median(ts)


def sales_config(args, batch=False):
    fact, week = (FACT_BATCH_SQL, WEEK_BATCH_SQL) if batch else (FACT_SQL, WEEK_SQL)
    b = ("    batch: %s\n" % ("true" if batch is True else batch)) if batch else ""
    return ("state_db: state.db\nsocket: backfilld.sock\n"
            "max_concurrency: %d\nmax_backfill: 100000\n"
            "warehouses:\n  - name: sales\n    sqlite: sales.db\n"
            "jobs:\n"
            "  - name: fct_daily_sales\n    warehouse: sales\n    partition: day\n"
            "    catchup: false\n    concurrency: %d\n    retries: 0\n    max_backfill: 1000\n%s"
            "    sql: |\n%s"
            "  - name: mart_weekly_sales\n    warehouse: sales\n    partition: week\n"
            "    upstream: [fct_daily_sales]\n    concurrency: 1\n    retries: 0\n%s"
            "    sql: |\n%s"
            % (args.max_concurrency, args.fact_concurrency, b, indent(fact, 6) + "\n",
               b, indent(week, 6) + "\n"))


def hourly_config(max_backfill=200000, concurrency=1):
    return ("state_db: state.db\nsocket: backfilld.sock\n"
            "max_concurrency: 2\nmax_backfill: %d\n"
            "warehouses:\n  - name: hourly\n    sqlite: %s\n"
            "jobs:\n"
            "  - name: hourly_rows\n    warehouse: hourly\n    partition: hour\n"
            "    catchup: false\n    concurrency: %d\n    retries: 0\n    max_backfill: %d\n"
            "    sql: |\n%s\n"
            % (max_backfill, "{HOURLY_DB}", concurrency, max_backfill, indent(HOURLY_SQL, 6)))


def many_jobs_config(n, tiny_db, throttle_every=None):
    lines = ["state_db: state.db", "socket: backfilld.sock", "max_concurrency: 2",
             "max_backfill: 366", "warehouses:", "  - name: tiny", "    sqlite: %s" % tiny_db]
    if throttle_every:
        # held throttled: the query answers above max at every check
        lines += ["    throttle:", "      sql: SELECT 100", "      max: 10",
                  "      every: %ds" % throttle_every]
    lines += ["jobs:"]
    for i in range(n):
        lines += ["  - name: job_%04d" % i, "    warehouse: tiny", "    partition: day",
                  "    catchup: false", "    concurrency: 1",
                  "    sql: |",
                  "      DELETE FROM t WHERE k = :partition;",
                  "      INSERT INTO t (k, job) VALUES (:partition, %d);" % i]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ one measurement

class Case:
    def __init__(self, ndays, covering, first, src):
        self.ndays = ndays
        self.covering = covering
        self.dates = date_range(first, ndays)
        self.first, self.last = self.dates[0], self.dates[-1]
        self.weeks = sorted({monday(d) for d in self.dates})
        self.src = src
        self.name = "%d days, %s" % (ndays, "covering index" if covering else "index on dt")
        self.times = {}
        self.digest = None
        self.truth_checked = set()
        self.pristine = None
        self.pristine_outside = None
        self.notifications = []
        self.run_sums = {}


def window_args(doc, days):
    """The options pg_bench.py and ch_bench.py share: an ArgumentParser."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one run of each, 30 days only")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny warehouse, one run, no timing claims: checks the results only")
    ap.add_argument("--runs", type=int, help="runs of each method (default 3; --quick 1)")
    ap.add_argument("--windows", help="backfill sizes in days (default 30,90; --quick 30)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"),
                    help="meson build folder holding daemon/backfilld (default build-bench)")
    ap.add_argument("--days", type=int, default=days, help="days in the warehouse")
    ap.add_argument("--rows-per-day", type=int, default=27000)
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--json", help="write every figure to this file")
    return ap


class WindowCase:
    """A backfill window of ndays from first (pg_bench.py, ch_bench.py):
    its dates, the ISO weeks they touch, and each method's times."""

    def __init__(self, ndays, first):
        self.ndays = ndays
        self.dates = date_range(first, ndays)
        self.first, self.last = self.dates[0], self.dates[-1]
        self.weeks = sorted({monday(d) for d in self.dates})
        self.name = "%d days" % ndays
        self.times = {}
        self.run_sums = {}
        self.digest = None
        self.truth_checked = set()

    def backfill(self, args, rundir, config_text, method, what):
        """A fresh daemon on config_text in rundir (its start not timed):
        `backfillctl backfill fct_daily_sales --from --to --wait` of the
        window, timed; the state store must hold one succeeded run per day
        and per affected week.  Seconds."""
        shutil.rmtree(rundir, ignore_errors=True)
        d = Daemon(args, rundir, config_text).start()
        try:
            dt, out = d.ctl("backfill", "fct_daily_sales", "--from", self.first,
                            "--to", self.last, "--wait")
            runs = d.runs()
        finally:
            d.stop()
        self.run_sums.setdefault(method, []).append(run_time_sum(d.log))
        bad = {k: v for k, v in runs.items() if k[1] != "succeeded"}
        nf = runs.get(("fct_daily_sales", "succeeded"), 0)
        nw = runs.get(("mart_weekly_sales", "succeeded"), 0)
        if bad or nf != self.ndays or nw != len(self.weeks):
            raise BenchError("%s: runs in the state store %r; expected %d fact and %d week "
                             "runs, all succeeded\n%s\n%s" % (what, runs, self.ndays,
                                                              len(self.weeks), out[-1500:],
                                                              d.tail()))
        shutil.rmtree(rundir, ignore_errors=True)
        return dt

    def as_json(self):
        """Every time of this window, for --json."""
        return {"case": self.name, "weeks": len(self.weeks), "window": [self.first, self.last],
                "times_ms": {m: [round(t * 1000, 1) for t in ts] for m, ts in self.times.items()},
                "median_ms": {m: round(median(ts) * 1000, 1) for m, ts in self.times.items()},
                "daemon_run_time_sum_ms": {m: [round(t * 1000) for t in ts]
                                           for m, ts in self.run_sums.items()}}

    def record(self, method, dt, dg, pristine, what, label, check_truth):
        """After one measurement of method: its result (digest dg) changed
        the warehouse, equals the first method's, and has been checked
        against the truth (check_truth(), once a method); its time kept."""
        if dg == pristine:
            raise BenchError("%s: the fact and mart did not change (nothing was rebuilt)" % what)
        if self.digest is None:
            self.digest = (dg, method)
        elif dg != self.digest[0]:
            raise BenchError("%s: fct_daily_sales/mart_weekly_sales differ from those of %s"
                             % (what, label[self.digest[1]]))
        if method not in self.truth_checked:
            check_truth()
            self.truth_checked.add(method)
        self.times.setdefault(method, []).append(dt)
        return dt


def run_time_sum(logfile):
    """Seconds the runs themselves took, by the daemon's log ("succeeded in N ms")."""
    total = 0
    try:
        with open(logfile, errors="replace") as f:
            for line in f:
                i = line.find(" succeeded in ")
                if i >= 0:
                    total += int(line[i + 14:].split()[0])
    except (OSError, ValueError):
        pass
    return total / 1000.0


def measure(args, case, method, work, run_no):
    """Time one method on a fresh copy; check its result; return seconds."""
    rundir = os.path.join(work, "run")
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    db = os.path.join(rundir, "sales.db")
    fresh_copy(case.src, db)
    dates = os.path.join(work, "dates.txt")
    weeks = os.path.join(work, "weeks.txt")
    what = "%s, %s (run %d)" % (case.name, LABEL[method], run_no)
    daemon = None
    if method in ("backfilld", "batch", "chunk"):
        batch = {"batch": True, "chunk": CHUNK}.get(method, False)
        daemon = Daemon(args, rundir, sales_config(args, batch=batch)).start()
        try:
            n0 = daemon.notifications
            dt, out = daemon.ctl("backfill", "fct_daily_sales", "--from", case.first,
                                 "--to", case.last, "--wait")
            case.notifications.append(daemon.notifications - n0)
            runs = daemon.runs()
        finally:
            daemon.stop()
        case.run_sums.setdefault(method, []).append(run_time_sum(daemon.log))
        bad = {k: v for k, v in runs.items() if k[1] != "succeeded"}
        nf = runs.get(("fct_daily_sales", "succeeded"), 0)
        nw = runs.get(("mart_weekly_sales", "succeeded"), 0)
        # batch: one run, recorded as one runs row per partition
        want_f = case.ndays
        if bad or nf != want_f or nw < 1 or (method == "backfilld" and nw != len(case.weeks)):
            raise BenchError("%s: runs in the state store %r; expected %d fact and %d week "
                             "runs, all succeeded\n%s" % (what, runs, want_f, len(case.weeks),
                                                          out[-1500:]))
    else:
        env = dict(os.environ, XARGS_P="2")
        t0 = time.monotonic()
        p = subprocess.run([os.path.join(HERE, SCRIPT[method]), db, dates, weeks],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            raise BenchError("%s: %s exited %d\n%s" % (what, SCRIPT[method], p.returncode,
                                                       (p.stdout + p.stderr)[-2000:]))
    dg = digest(db)
    if dg == case.pristine:
        raise BenchError("%s: the fact and mart did not change (nothing was rebuilt)" % what)
    if case.digest is None:
        case.digest = (dg, method)
    elif dg != case.digest[0]:
        raise BenchError("%s: fct_daily_sales/mart_weekly_sales differ from those of %s "
                         "on the same case" % (what, LABEL[case.digest[1]]))
    if method not in case.truth_checked or args.smoke:
        check_truth(db, case.first, case.last, case.weeks, case.pristine_outside, what)
        case.truth_checked.add(method)
    case.times.setdefault(method, []).append(dt)
    shutil.rmtree(rundir, ignore_errors=True)
    return dt


def probe_batch(args, work):
    """Does `batch: true` run a request as ONE run? (tiny warehouse)"""
    d = os.path.join(work, "probe-batch")
    os.makedirs(d)
    db = os.path.join(d, "sales.db")
    r = subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), db, "--days", "14",
                        "--rows-per-day", "200", "--stores", "5", "--start", args.year_start,
                        "--quiet"], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError("gen.py failed: %s" % r.stderr)
    dm = Daemon(args, d, sales_config(args, batch=True))
    try:
        dm.start()
    except BenchError as e:
        return False, "the daemon does not start with batch: true (%s)" % str(e).split("\n")[0]
    try:
        first = date_range(args.year_start, 10)
        _, out = dm.ctl("backfill", "fct_daily_sales", "--from", first[2], "--to", first[8],
                        "--wait", expect=None)
        runs = dm.runs()
        con = ro(dm.state_db)
        try:
            # a batch run records one runs row per partition, all with the
            # batch's start time: count the distinct executions
            execs = con.execute("SELECT COUNT(DISTINCT started_at) FROM runs"
                                " WHERE job = 'fct_daily_sales'").fetchone()[0]
        finally:
            con.close()
    finally:
        dm.stop()
    nf = sum(v for (j, s), v in runs.items() if j == "fct_daily_sales")
    ok = sum(v for (j, s), v in runs.items() if j == "fct_daily_sales" and s == "succeeded")
    if execs == 1 and nf == ok == 7:
        return True, "one run for a request of 7 partitions (7 runs rows, one start)"
    return False, ("batch: true did not run the request as one run: %d executions for "
                   "7 partitions (%d runs rows, %d succeeded)" % (execs, nf, ok))


# ------------------------------------------------------------------ sales table

def sales_bench(args, work, report):
    cases = []
    for covering in args.coverings:
        src = cached_warehouse(args, covering)
        for nd in args.windows:
            c = Case(nd, covering, args.window_start, src)
            c.pristine = digest(src)
            c.pristine_outside = outside_digest(src, c.first, c.last, c.weeks)
            cases.append(c)
    methods = list(METHODS)
    batch_ok, batch_note = probe_batch(args, work)
    report["batch"] = {"available": batch_ok, "note": batch_note}
    log("batch: true: %s" % batch_note)
    if batch_ok:
        methods += ["batch", "chunk"]
    with open(os.path.join(work, "dates.txt"), "w"):
        pass
    total = args.runs * len(cases) * len(methods)
    k = 0
    t_start = time.monotonic()
    for i in range(args.runs):
        for c in cases:
            with open(os.path.join(work, "dates.txt"), "w") as f:
                f.write("\n".join(c.dates) + "\n")
            with open(os.path.join(work, "weeks.txt"), "w") as f:
                f.write("\n".join(c.weeks) + "\n")
            # Alternate: a different method goes first on every run.
            order = methods[i % len(methods):] + methods[:i % len(methods)]
            for m in order:
                k += 1
                dt = measure(args, c, m, work, i + 1)
                log("[%3d/%d %5.0f s] %-34s %-30s %8.1f ms"
                    % (k, total, time.monotonic() - t_start, c.name, LABEL[m], dt * 1000))
    report["sales"] = [{"case": c.name, "days": c.ndays, "covering": c.covering,
                        "weeks": len(c.weeks), "window": [c.first, c.last],
                        "times_ms": {m: [round(t * 1000, 1) for t in ts]
                                     for m, ts in c.times.items()},
                        "median_ms": {m: round(median(ts) * 1000, 1)
                                      for m, ts in c.times.items()},
                        "notify_datagrams": c.notifications,
                        "daemon_run_time_sum_ms": {m: [round(t * 1000) for t in ts]
                                                   for m, ts in c.run_sums.items()}}
                       for c in cases]
    return cases, methods


def sales_table(cases, methods, runs):
    lines = ["Per-date backfill, fact + affected weeks (medians of %d run%s, ms):"
             % (runs, "" if runs == 1 else "s"), ""]
    hdr = "| %-34s | %-30s | %9s | %7s | %7s | %7s |" % (
        "case", "method", "median ms", "vs set", "vs floor", "vs hand")
    lines += [hdr, "|" + "|".join("-" * (len(x)) for x in hdr.split("|")[1:-1]) + "|"]
    for c in cases:
        med = {m: median(c.times[m]) for m in methods if m in c.times}
        for m in methods:
            if m not in med:
                continue
            lines.append("| %-34s | %-30s | %9.1f | %7.2f | %7.2f | %7.2f |" % (
                "%s (%d weeks)" % (c.name, len(c.weeks)), LABEL[m], med[m] * 1000,
                med[m] / med["set"], med[m] / med["floor"], med[m] / med["hand"]))
    for c in cases:
        for m, ts in sorted(c.run_sums.items()):
            lines.append("%s, %s: the runs themselves took %.0f ms (median of the sums of "
                         "\"succeeded in\" in its log); the rest of its %.0f ms is start of the "
                         "request, dispatch, state store and --wait" % (
                             c.name, LABEL[m], median(ts) * 1000, median(c.times[m]) * 1000))
    return "\n".join(lines)


# ------------------------------------------------------------------ other targets

def hour_keys(first, n):
    t0 = datetime.datetime.fromisoformat(first)
    return [(t0 + datetime.timedelta(hours=i)).strftime("%Y-%m-%dT%H") for i in range(n)]


def make_hourly_db(path, wal=False):
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE hourly (hour TEXT PRIMARY KEY, n INTEGER)")
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
    con.commit()
    con.close()


def hourly_bench(args, work, report, where, dbdir, n, runs, wal=False, per_process=False):
    """n one-row partitions of an hourly job: daemon vs one-process floors."""
    keys = hour_keys("2000-01-01T00", n)
    kf = os.path.join(work, "keys.txt")
    with open(kf, "w") as f:
        f.write("\n".join(keys) + "\n")
    db = os.path.join(dbdir, "bench-hourly-%d.db" % os.getpid())
    times = {"daemon": [], "insert": [], "select": []}
    if per_process:
        times["process"] = []
    recorded = []
    try:
        for i in range(runs):
            order = list(times)
            order = order[i % len(order):] + order[:i % len(order)]
            for m in order:
                make_hourly_db(db, wal)
                if m == "daemon":
                    d = os.path.join(work, "hourly-daemon")
                    shutil.rmtree(d, ignore_errors=True)
                    dm = Daemon(args, d, hourly_config().replace("{HOURLY_DB}", db)).start()
                    try:
                        dt, out = dm.ctl("backfill", "hourly_rows", "--from", keys[0],
                                         "--to", keys[-1], "--wait")
                        runs_ = dm.runs()
                    finally:
                        dm.stop()
                    ok = runs_.get(("hourly_rows", "succeeded"), 0)
                    recorded.append(ok)
                    if ok != n or len(runs_) != 1:
                        raise BenchError("hourly (%s): %d partitions but runs %r"
                                         % (where, n, runs_))
                    shutil.rmtree(d, ignore_errors=True)
                else:
                    if m == "select":   # the SELECT floor reads the rows the insert wrote
                        con = sqlite3.connect(db)
                        con.executemany("INSERT INTO hourly VALUES (?, 1)", ((k,) for k in keys))
                        con.commit()
                        con.close()
                    t0 = time.monotonic()
                    p = subprocess.run([os.path.join(HERE, "trivial.sh"), db, kf, m],
                                       capture_output=True, text=True)
                    dt = time.monotonic() - t0
                    if p.returncode != 0:
                        raise BenchError("trivial.sh %s: exit %d: %s"
                                         % (m, p.returncode, p.stderr[-1000:]))
                con = ro(db)
                cnt = con.execute("SELECT COUNT(*), SUM(n) FROM hourly").fetchone()
                con.close()
                if cnt != (n, n):
                    raise BenchError("hourly (%s, %s): table holds %r rows, expected %d"
                                     % (where, m, cnt, n))
                times[m].append(dt)
                log("  hourly %-28s %-8s %8.1f ms  %7.0f partitions/s"
                    % (where, m, dt * 1000, n / dt))
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(db + suffix)
            except FileNotFoundError:
                pass
    med = {m: median(ts) for m, ts in times.items()}
    report.setdefault("hourly", []).append({
        "where": where, "partitions": n, "runs": runs,
        "median_ms": {m: round(v * 1000, 1) for m, v in med.items()},
        "partitions_per_s": {m: round(n / v) for m, v in med.items()},
        "runs_recorded": recorded})
    return med


def tiny_db(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, job INTEGER)")
    con.commit()
    con.close()


def rt(dm, argv, n, expect=0):
    ts = []
    out = ""
    for _ in range(n):
        dt, out = dm.ctl(*argv, expect=expect)
        ts.append(dt)
    return ts, out


def idle_throttled(args, work, report):
    """The idle daemon again, its warehouse held throttled (a check every
    `every`): what the checks cost an otherwise idle daemon."""
    d = os.path.join(work, "idle_throttled")
    os.makedirs(d)
    tiny_db(os.path.join(d, "tiny.db"))
    every = 5
    dm = Daemon(args, d, many_jobs_config(100, "tiny.db", throttle_every=every)).start()
    try:
        time.sleep(args.idle_settle)
        m0, t0, nthreads = ctxt_switches(dm.pid)
        time.sleep(args.idle_throttled_seconds)
        m1, t1, nthreads = ctxt_switches(dm.pid)
        rss, hwm = dm.rss_kib()
        st = json.loads(dm.ctl("status", "--json")[1])
        thr = [w for w in st["warehouses"] if w["name"] == "tiny"][0]["throttle"]
        if not thr or thr["state"] != "throttled":
            raise BenchError("the idle warehouse is not throttled: %r" % (thr,))
        if dm.runs():
            raise BenchError("the throttled idle daemon ran something")
    finally:
        dm.stop()
    checks = max(1, args.idle_throttled_seconds / every)
    report["idle_throttled"] = {"jobs": 100, "every_s": every, "rss_kib": rss, "hwm_kib": hwm,
                                "threads": nthreads, "seconds": args.idle_throttled_seconds,
                                "ctxt_main": m1 - m0, "ctxt_all_threads": t1 - t0,
                                "ctxt_per_check": round((t1 - t0) / checks, 1)}
    log("  idle, throttled (a check every %ds): VmRSS %d KiB, %d threads, ctxt switches over"
        " %g s: %d (main), %d (all)" % (every, rss, nthreads, args.idle_throttled_seconds,
                                        m1 - m0, t1 - t0))


def idle_and_refusal(args, work, report):
    d = os.path.join(work, "idle")
    os.makedirs(d)
    tiny_db(os.path.join(d, "tiny.db"))
    dm = Daemon(args, d, many_jobs_config(100, "tiny.db")).start()
    try:
        time.sleep(args.idle_settle)
        rss, hwm = dm.rss_kib()
        m0, t0, nthreads = ctxt_switches(dm.pid)
        time.sleep(args.idle_seconds)
        m1, t1, _ = ctxt_switches(dm.pid)
        rss2, hwm2 = dm.rss_kib()
        status_ts, _ = rt(dm, ["status"], args.rt_n)
        refuse_ts, out = rt(dm, ["backfill", "job_0000", "--from", "0001-01-01",
                                 "--to", "9999-12-31"], args.rt_n, expect=2)
        if "refused" not in out:
            raise BenchError("the ten-thousand-year request was not refused as such: %r" % out)
        proto_ts = []
        for _ in range(args.rt_n):
            dt, resp = proto_call(dm.sock, {"cmd": "backfill", "job": "job_0000",
                                            "from": "0001-01-01", "to": "9999-12-31"})
            proto_ts.append(dt)
        if "refused" not in json.dumps(resp):
            raise BenchError("protocol: the ten-thousand-year request answered %r" % resp)
        pstatus = [proto_call(dm.sock, {"cmd": "status"})[0] for _ in range(args.rt_n)]
        spawn = spawn_baseline(args, args.rt_n)
        runs = dm.runs()
        if runs:
            raise BenchError("the idle daemon ran something: %r" % runs)
    finally:
        dm.stop()
    report["idle"] = {"jobs": 100, "rss_kib": rss2, "hwm_kib": hwm2, "threads": nthreads,
                      "seconds": args.idle_seconds, "ctxt_main": m1 - m0,
                      "ctxt_all_threads": t1 - t0, "ready_s": round(dm.ready_s, 3)}
    report["refusal"] = {"median_ms": round(median(refuse_ts) * 1000, 2),
                         "max_ms": round(max(refuse_ts) * 1000, 2),
                         "status_rt_median_ms": round(median(status_ts) * 1000, 2),
                         "protocol_median_ms": round(median(proto_ts) * 1000, 3),
                         "protocol_status_median_ms": round(median(pstatus) * 1000, 3),
                         "spawn_ctl_version_ms": round(spawn * 1000, 2),
                         "message": out.strip().split("\n")[0][:200], "n": len(refuse_ts)}
    log("  idle: VmRSS %d KiB, %d threads, ctxt switches over %g s: %d (main), %d (all)"
        % (rss2, nthreads, args.idle_seconds, m1 - m0, t1 - t0))
    log("  ten-thousand-year request: refused in %.2f ms (median of %d; status round trip %.2f ms;"
        " over the socket without backfillctl %.3f ms; backfillctl --version alone %.2f ms)"
        % (median(refuse_ts) * 1000, len(refuse_ts), median(status_ts) * 1000,
           median(proto_ts) * 1000, spawn * 1000))


def reload_bench(args, work, report):
    d = os.path.join(work, "reload")
    os.makedirs(d)
    tiny_db(os.path.join(d, "tiny.db"))
    dm = Daemon(args, d, many_jobs_config(args.reload_jobs, "tiny.db")).start()
    try:
        rss, _ = dm.rss_kib()
        ts, out = rt(dm, ["reload"], args.rt_n)
        proto_ts = []
        for _ in range(args.rt_n):
            dt, resp = proto_call(dm.sock, {"cmd": "reload"})
            proto_ts.append(dt)
        if "reloaded" not in json.dumps(resp):
            raise BenchError("protocol reload answered %r" % resp)
        rss2, hwm2 = dm.rss_kib()
        status_ts, _ = rt(dm, ["status"], args.rt_n)
    finally:
        dm.stop()
    report["reload"] = {"jobs": args.reload_jobs, "median_ms": round(median(ts) * 1000, 2),
                        "max_ms": round(max(ts) * 1000, 2), "n": len(ts),
                        "protocol_median_ms": round(median(proto_ts) * 1000, 2),
                        "ready_s": round(dm.ready_s, 3), "rss_kib": rss2, "hwm_kib": hwm2,
                        "status_rt_median_ms": round(median(status_ts) * 1000, 2)}
    log("  reload of %d jobs: %.2f ms (median of %d; %.2f ms over the socket); start to READY=1 "
        "%.3f s; status %.2f ms" % (args.reload_jobs, median(ts) * 1000, len(ts),
                                   median(proto_ts) * 1000, dm.ready_s, median(status_ts) * 1000))
    reload_include_bench(args, work, report)


def reload_include_bench(args, work, report, nfiles=100):
    """The same reload with one file per job: `include: [jobs.d/*.yaml]`
    and nfiles job files (issue 17), as backfillctl reload times it."""
    d = os.path.join(work, "reload-include")
    os.makedirs(os.path.join(d, "jobs.d"))
    tiny_db(os.path.join(d, "tiny.db"))
    text = many_jobs_config(nfiles, "tiny.db")
    head, jobs = text.split("jobs:\n", 1)
    items = ["  - name:" + j for j in jobs.split("  - name:")[1:]]
    for i, item in enumerate(items):
        with open(os.path.join(d, "jobs.d", "job_%04d.yaml" % i), "w") as f:
            f.write("jobs:\n" + item)
    dm = Daemon(args, d, head + "include: [jobs.d/*.yaml]\n").start()
    try:
        ts, out = rt(dm, ["reload"], args.rt_n)
        if "reloaded" not in out:
            raise BenchError("reload of the included files answered %r" % out)
    finally:
        dm.stop()
    report["reload_include"] = {"files": nfiles, "jobs": len(items),
                                "median_ms": round(median(ts) * 1000, 2),
                                "max_ms": round(max(ts) * 1000, 2), "n": len(ts)}
    log("  reload of %d jobs in %d included files: %.2f ms (median of %d, max %.2f ms)"
        % (len(items), nfiles, median(ts) * 1000, len(ts), max(ts) * 1000))


def queue_bench(args, work, report, dbdir):
    n = args.queue_n
    d = os.path.join(work, "queue")
    os.makedirs(d)
    db = os.path.join(dbdir, "bench-queue-%d.db" % os.getpid())
    make_hourly_db(db)
    keys = hour_keys("2000-01-01T00", n)
    dm = Daemon(args, d, hourly_config(max_backfill=max(n, 1000)).replace("{HOURLY_DB}", db))
    dm.start()
    try:
        rss0, _ = dm.rss_kib()
        t_enq, out = dm.ctl("backfill", "hourly_rows", "--from", keys[0], "--to", keys[-1])
        rss1, _ = dm.rss_kib()
        req = None
        for w in out.split():
            if w.rstrip(":").isdigit():
                req = int(w.rstrip(":"))
                break
        lat = []
        plat = []
        peak = rss1
        for _ in range(args.status_samples):
            dt, _ = dm.ctl("status")
            lat.append(dt)
            plat.append(proto_call(dm.sock, {"cmd": "status"})[0])
            peak = max(peak, dm.rss_kib()[0])
            time.sleep(0.05)
        _, status_out = dm.ctl("status", "--json")
        st = json.loads(status_out)
        job = [j for j in st["jobs"] if j["name"] == "hourly_rows"][0]
        done = job["succeeded"]
        if req is not None:
            dm.ctl("cancel", req)
        _, hwm = dm.rss_kib()
    finally:
        dm.stop()
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(db + suffix)
            except FileNotFoundError:
                pass
    report["queue"] = {"partitions": n, "enqueue_ms": round(t_enq * 1000, 1),
                       "rss_before_kib": rss0, "rss_after_enqueue_kib": rss1,
                       "rss_peak_sampled_kib": peak, "hwm_kib": hwm,
                       "growth_kib": max(rss1, peak) - rss0,
                       "status_median_ms": round(median(lat) * 1000, 2),
                       "status_max_ms": round(max(lat) * 1000, 2),
                       "status_protocol_median_ms": round(median(plat) * 1000, 2),
                       "status_protocol_max_ms": round(max(plat) * 1000, 2),
                       "status_samples": len(lat), "succeeded_while_sampling": done,
                       "queued_when_sampled": job["queued"]}
    log("  %d queued: enqueued in %.1f ms, RSS %d -> %d KiB (peak %d, HWM %d), status %.2f ms "
        "median / %.2f ms max while running (%d done meanwhile)"
        % (n, t_enq * 1000, rss0, rss1, peak, hwm, median(lat) * 1000, max(lat) * 1000, done))


# ------------------------------------------------------------------ profile

def profile(args, work, report):
    """backfilld under callgrind on the 90-day case: where its time goes."""
    nd = max(args.windows)
    out = {}
    for covering in args.coverings:
        c = Case(nd, covering, args.window_start, cached_warehouse(args, covering))
        d = os.path.join(work, "profile-%s" % ("cover" if covering else "dt"))
        os.makedirs(d)
        fresh_copy(c.src, os.path.join(d, "sales.db"))
        cg = os.path.join(d, "callgrind.out")
        dm = Daemon(args, d, sales_config(args),
                    wrapper=["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg,
                             "--separate-threads=no"])
        dm.start()
        try:
            dt, _ = dm.ctl("backfill", "fct_daily_sales", "--from", c.first, "--to", c.last,
                           "--wait")
        finally:
            dm.stop()
        ann = subprocess.run(["callgrind_annotate", "--inclusive=no", cg],
                             capture_output=True, text=True).stdout
        inc = subprocess.run(["callgrind_annotate", "--inclusive=yes", cg],
                             capture_output=True, text=True).stdout
        keep = os.path.join(args.data, "callgrind-%s-%dd.out" % (
            "covering" if covering else "dt", nd))
        shutil.copy(cg, keep)
        # The floor (one sqlite3 process, same transactions) under callgrind.
        dates = os.path.join(d, "dates.txt")
        weeks = os.path.join(d, "weeks.txt")
        with open(dates, "w") as f:
            f.write("\n".join(c.dates) + "\n")
        with open(weeks, "w") as f:
            f.write("\n".join(c.weeks) + "\n")
        sqlf = os.path.join(d, "floor.sql")
        subprocess.run(["bash", "-c", '. "$0"; while read -r x; do printf "%s\\n" '
                        '"${FACT_TMPL//@D@/$x}"; done < "$1"; while read -r x; do '
                        'printf "%s\\n" "${WEEK_TMPL//@D@/$x}"; done < "$2"',
                        os.path.join(HERE, "common.sh"), dates, weeks],
                       stdout=open(sqlf, "w"), check=True)
        fresh_copy(c.src, os.path.join(d, "floor.db"))
        fcg = os.path.join(d, "callgrind-floor.out")
        with open(sqlf) as f:
            subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + fcg,
                            "sqlite3", "-bail", os.path.join(d, "floor.db")], stdin=f,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out[c.name] = {"wall_s_under_callgrind": round(dt, 1), "file": keep,
                       "daemon_ir": total_ir(cg), "floor_ir": total_ir(fcg),
                       "self": top_lines(ann, 25), "inclusive": top_lines(inc, 40)}
        log("profile %s: %s (kept %s)" % (c.name, "done", keep))
    # The scheduler's own cost: one-row hourly partitions on tmpfs.
    n = args.profile_hourly_n
    d = os.path.join(work, "profile-hourly")
    os.makedirs(d)
    db = os.path.join(args.hourly_dir or d, "bench-profile-hourly-%d.db" % os.getpid())
    make_hourly_db(db)
    cg = os.path.join(d, "callgrind.out")
    keys = hour_keys("2000-01-01T00", n)
    dm = Daemon(args, d, hourly_config().replace("{HOURLY_DB}", db),
                wrapper=["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg,
                         "--separate-threads=no"])
    dm.start()
    try:
        dt, _ = dm.ctl("backfill", "hourly_rows", "--from", keys[0], "--to", keys[-1], "--wait")
    finally:
        dm.stop()
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(db + suffix)
            except FileNotFoundError:
                pass
    ann = subprocess.run(["callgrind_annotate", "--inclusive=no", cg],
                         capture_output=True, text=True).stdout
    inc = subprocess.run(["callgrind_annotate", "--inclusive=yes", cg],
                         capture_output=True, text=True).stdout
    keep = os.path.join(args.data, "callgrind-hourly-%d.out" % n)
    shutil.copy(cg, keep)
    out["%d one-row hourly partitions" % n] = {
        "wall_s_under_callgrind": round(dt, 1), "file": keep,
        "self": top_lines(ann, 25), "inclusive": top_lines(inc, 40)}
    report["profile"] = out


def total_ir(cg):
    try:
        with open(cg) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def top_lines(text, n):
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.strip().startswith("Ir") and "file:function" in l:
            body = [x for x in lines[i + 2:] if x.strip()]
            return body[:n]
    return lines[:n]


# ------------------------------------------------------------------ targets

def targets(report):
    rows = []

    def add(name, value, limit, ok):
        rows.append((name, value, limit, "met" if ok else "MISSED"))

    for c in report.get("sales", []):
        med = c["median_ms"]
        if "backfilld" in med:
            r_floor = med["backfilld"] / med["floor"]
            r_hand = med["backfilld"] / med["hand"]
            add("%s: backfilld / floor" % c["case"], "%.2f" % r_floor, "<= 1.10", r_floor <= 1.10)
            add("%s: backfilld / hand loop" % c["case"], "%.2f" % r_hand, "<= 0.95",
                r_hand <= 0.95)
        if "batch" in med:
            r = med["batch"] / med["set"]
            add("%s: batch / set-based" % c["case"], "%.2f" % r, "<= 1.05", r <= 1.05)
    if "batch" in report and not report["batch"]["available"]:
        rows.append(("batch: true <= 1.05 x set-based", "not available", "<= 1.05",
                     "not measured"))
    for h in report.get("hourly", []):
        ps = h["partitions_per_s"]["daemon"]
        add("%d one-row hourly partitions (%s)" % (h["partitions"], h["where"]),
            "%d/s, %s recorded" % (ps, "all" if all(x == h["partitions"] for x in
                                                     h["runs_recorded"]) else "NOT all"),
            ">= 5000/s", ps >= 5000)
    if "idle" in report:
        i = report["idle"]
        add("idle, 100 jobs: VmRSS", "%.1f MiB" % (i["rss_kib"] / 1024), "<= 8 MiB",
            i["rss_kib"] <= 8 * 1024)
        add("idle, 100 jobs: context switches in %gs" % i["seconds"],
            "%d (all threads; main %d)" % (i["ctxt_all_threads"], i["ctxt_main"]), "<= 2",
            i["ctxt_all_threads"] <= 2)
    if "idle_throttled" in report:
        i = report["idle_throttled"]
        add("idle, 100 jobs, warehouse throttled: VmRSS", "%.1f MiB" % (i["rss_kib"] / 1024),
            "<= 8 MiB", i["rss_kib"] <= 8 * 1024)
        add("idle, throttled: context switches per check (every %ds)" % i["every_s"],
            "%.1f (all threads)" % i["ctxt_per_check"], "<= 8", i["ctxt_per_check"] <= 8)
    if "refusal" in report:
        r = report["refusal"]
        add("ten-thousand-year request refused", "%.2f ms" % r["median_ms"], "<= 10 ms",
            r["median_ms"] <= 10)
    if "reload" in report:
        r = report["reload"]
        add("reload of %d jobs" % r["jobs"], "%.2f ms" % r["median_ms"], "<= 50 ms",
            r["median_ms"] <= 50)
    if "reload_include" in report:
        r = report["reload_include"]
        add("reload of %d jobs in %d included files" % (r["jobs"], r["files"]),
            "%.2f ms" % r["median_ms"], "<= 50 ms", r["median_ms"] <= 50)
    if "queue" in report:
        q = report["queue"]
        add("%d partitions enqueued" % q["partitions"], "%.0f ms" % q["enqueue_ms"], "<= 1000 ms",
            q["enqueue_ms"] <= 1000)
        add("%d queued: memory growth" % q["partitions"], "%.1f MiB" % (q["growth_kib"] / 1024),
            "<= 32 MiB", q["growth_kib"] <= 32 * 1024)
        add("%d queued: status while running" % q["partitions"],
            "%.2f ms (max %.2f)" % (q["status_median_ms"], q["status_max_ms"]), "<= 50 ms",
            q["status_median_ms"] <= 50)
    if not rows:
        return "(no targets measured)"
    w = max([len(r[0]) for r in rows] + [6])
    v = max([len(r[1]) for r in rows] + [5])
    out = ["| %-*s | %-*s | %-9s | %-12s |" % (w, "target", v, "measured", "bound", "")]
    out.append("|%s|%s|%s|%s|" % ("-" * (w + 2), "-" * (v + 2), "-" * 11, "-" * 14))
    for r in rows:
        out.append("| %-*s | %-*s | %-9s | %-12s |" % (w, r[0], v, r[1], r[2], r[3]))
    return "\n".join(out)


# ------------------------------------------------------------------ main

def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def git_describe():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                                "daemon", "sql"], capture_output=True, text=True).stdout.strip()
        return (rev or "?") + (" + uncommitted changes in daemon/ or sql/" if dirty else "")
    except OSError:
        return "?"


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one run of each (about 3 min)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny warehouse in a temporary folder, no timing (test suite)")
    ap.add_argument("--runs", type=int, help="runs of each method (default 5; quick/smoke 1)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"),
                    help="meson build folder holding daemon/backfilld (default build-bench)")
    ap.add_argument("--data", default=os.path.join(HERE, "data"),
                    help="cache of generated warehouses and scratch space (default tests/bench/data)")
    ap.add_argument("--days", type=int, default=365, help="days in the warehouse")
    ap.add_argument("--rows-per-day", type=int, default=27000)
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--windows", default="30,90", help="backfill sizes in days (default 30,90)")
    ap.add_argument("--index", choices=["both", "dt", "covering"], default="both",
                    help="warehouses to measure: index on dt, covering index, or both")
    ap.add_argument("--max-concurrency", type=int, default=1,
                    help="max_concurrency of the sales daemon (default 1: one writer on one "
                         "SQLite file; with 2 a week of the mart runs beside the next day of "
                         "the fact and waits on its lock; max_connections is not enforced "
                         "for SQLite warehouses)")
    ap.add_argument("--fact-concurrency", type=int, default=1)
    ap.add_argument("--hourly-n", type=int, default=10000)
    ap.add_argument("--hourly-disk-n", type=int, default=500,
                    help="partitions for the hourly job on a disk warehouse (fsync per commit)")
    ap.add_argument("--hourly-dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="tmpfs folder for the 10,000-partition hourly warehouse")
    ap.add_argument("--per-process", action="store_true",
                    help="also time one sqlite3 process per hourly partition")
    ap.add_argument("--queue-n", type=int, default=100000)
    ap.add_argument("--reload-jobs", type=int, default=1000)
    ap.add_argument("--skip", default="", help="comma list of: sales,hourly,idle,reload,queue")
    ap.add_argument("--profile", action="store_true",
                    help="also run backfilld under callgrind on the largest window")
    ap.add_argument("--profile-hourly-n", type=int, default=2000,
                    help="hourly partitions run under callgrind by --profile")
    ap.add_argument("--json", help="write every figure to this file")
    args = ap.parse_args(argv)
    args.year_start = "2025-01-01"
    args.window_start = "2025-03-05"   # a Wednesday: partial weeks at both ends
    args.idle_settle = 1.0
    args.idle_seconds = 5.0
    args.idle_throttled_seconds = 20.0
    args.rt_n = 20
    args.status_samples = 20
    if args.smoke:
        args.runs = args.runs or 1
        args.days, args.rows_per_day, args.stores = 28, 300, 10
        args.windows = "3,10"
        args.hourly_n, args.hourly_disk_n, args.queue_n = 200, 50, 2000
        args.reload_jobs = 1000
        args.idle_settle, args.idle_seconds = 0.2, 1.0
        args.idle_throttled_seconds = 5.0
        args.rt_n = args.status_samples = 3
        args.window_start = "2025-01-08"
    elif args.quick:
        args.runs = args.runs or 1
        args.rt_n = 10
    args.runs = args.runs or 5
    args.windows = sorted(int(x) for x in args.windows.split(","))
    args.coverings = {"both": [False, True], "dt": [False], "covering": [True]}[args.index]
    args.skip = set(x for x in args.skip.split(",") if x)
    b = os.environ.get("BACKFILLD")
    c = os.environ.get("BACKFILLCTL")
    args.backfilld = os.path.abspath(b or os.path.join(args.build, "daemon", "backfilld"))
    args.backfillctl = os.path.abspath(c or os.path.join(args.build, "daemon", "backfillctl"))
    return args


def main(argv=None):
    args = parse(argv)
    miss = missing_tools(args)
    if miss:
        for what, how in miss:
            print("run.py: missing %s: %s" % (what, how), file=sys.stderr)
        return SKIP if args.smoke else 2
    tmp_root = None
    if args.smoke:
        tmp_root = tempfile.mkdtemp(prefix="backfilld-bench-smoke-")
        args.data = tmp_root
        args.hourly_dir = tmp_root
    os.makedirs(args.data, exist_ok=True)
    work = tempfile.mkdtemp(prefix="work-", dir=args.data)
    hourly_dir = args.hourly_dir or work
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": "%s, %d cores, %s" % (platform.node(), os.cpu_count(), platform.release()),
              "sqlite3": subprocess.run(["sqlite3", "--version"], capture_output=True,
                                        text=True).stdout.split()[0],
              "runs": args.runs, "warehouse": {"days": args.days, "rows_per_day": args.rows_per_day,
                                               "stores": args.stores, "seed": args.seed},
              "config": {"max_concurrency": args.max_concurrency,
                         "fact_concurrency": args.fact_concurrency}}
    report["source"] = git_describe()
    report["binary_built"] = time.strftime("%Y-%m-%d %H:%M UTC",
                                           time.gmtime(os.stat(args.backfilld).st_mtime))
    report["loadavg_start"] = loadavg()
    rc = 0
    t0 = time.monotonic()
    try:
        if "sales" not in args.skip:
            cases, methods = sales_bench(args, work, report)
        if "hourly" not in args.skip:
            log("hourly job, %d one-row partitions, warehouse in %s:" % (args.hourly_n, hourly_dir))
            hourly_bench(args, work, report, "warehouse on %s" % hourly_dir, hourly_dir,
                         args.hourly_n, args.runs, per_process=args.per_process)
            if args.hourly_disk_n:
                log("hourly job, %d partitions, warehouse on disk (rollback journal):"
                    % args.hourly_disk_n)
                hourly_bench(args, work, report, "warehouse on disk", work,
                             args.hourly_disk_n, min(args.runs, 3))
        if "idle" not in args.skip:
            idle_and_refusal(args, work, report)
            idle_throttled(args, work, report)
        if "reload" not in args.skip:
            reload_bench(args, work, report)
        if "queue" not in args.skip:
            queue_bench(args, work, report, hourly_dir)
        if args.profile:
            profile(args, work, report)
    except BenchError as e:
        print("run.py: FAIL: %s" % e, file=sys.stderr)
        rc = 1
    finally:
        if rc == 0 or not os.environ.get("KEEP_TMP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            log("kept %s" % work)
        if tmp_root and (rc == 0 or not os.environ.get("KEEP_TMP")):
            shutil.rmtree(tmp_root, ignore_errors=True)
    report["elapsed_s"] = round(time.monotonic() - t0, 1)
    report["loadavg_end"] = loadavg()
    if rc:
        return rc
    print("backfilld benchmark, %s, %s, sqlite3 %s; %d run%s of each method, alternating"
          % (report["date"], report["machine"], report["sqlite3"], args.runs,
             "" if args.runs == 1 else "s"))
    print("source %s; binaries %s (backfilld built %s); load average %s at start, %s at end"
          % (report["source"], os.path.dirname(args.backfilld), report["binary_built"],
             report["loadavg_start"], report["loadavg_end"]))
    print()
    if "sales" in report:
        print(sales_table(cases, methods, args.runs))
        print()
        print("batch: true: %s" % report["batch"]["note"])
        print()
    print(targets(report))
    print()
    for h in report.get("hourly", []):
        print("hourly, %d one-row partitions, %s: %s" % (
            h["partitions"], h["where"], ", ".join(
                "%s %.0f ms (%d/s)" % (m, v, h["partitions_per_s"][m])
                for m, v in h["median_ms"].items())))
    if "idle" in report:
        i = report["idle"]
        print("idle, 100 jobs: VmRSS %d KiB (HWM %d), %d threads, context switches in %gs: "
              "%d main thread, %d all threads; start to READY=1 %.3f s"
              % (i["rss_kib"], i["hwm_kib"], i["threads"], i["seconds"], i["ctxt_main"],
                 i["ctxt_all_threads"], i["ready_s"]))
    if "idle_throttled" in report:
        i = report["idle_throttled"]
        print("idle, 100 jobs, warehouse throttled (check every %ds): VmRSS %d KiB (HWM %d), "
              "%d threads, context switches in %gs: %d main thread, %d all threads"
              % (i["every_s"], i["rss_kib"], i["hwm_kib"], i["threads"], i["seconds"],
                 i["ctxt_main"], i["ctxt_all_threads"]))
    if "refusal" in report:
        r = report["refusal"]
        print("refusal: %s ms median (max %s) with backfillctl, %s ms over the socket; status "
              "%s ms with backfillctl, %s ms over the socket; backfillctl --version alone %s ms; "
              "says: %s" % (r["median_ms"], r["max_ms"], r["protocol_median_ms"],
                            r["status_rt_median_ms"], r["protocol_status_median_ms"],
                            r["spawn_ctl_version_ms"], r["message"]))
    if "reload" in report:
        r = report["reload"]
        print("reload, %d jobs: %s ms median (max %s) with backfillctl, %s ms over the socket; "
              "start to READY=1 %.3f s; VmRSS %d KiB" % (r["jobs"], r["median_ms"], r["max_ms"],
                                                         r["protocol_median_ms"], r["ready_s"],
                                                         r["rss_kib"]))
    if "queue" in report:
        q = report["queue"]
        print("%d queued: enqueue %.1f ms; VmRSS %d -> %d KiB after enqueue, %d peak sampled; "
              "status %.2f ms median, %.2f max (over the socket %.2f / %.2f; %d samples, "
              "%d runs done meanwhile)"
              % (q["partitions"], q["enqueue_ms"], q["rss_before_kib"], q["rss_after_enqueue_kib"],
                 q["rss_peak_sampled_kib"], q["status_median_ms"], q["status_max_ms"],
                 q["status_protocol_median_ms"], q["status_protocol_max_ms"],
                 q["status_samples"], q["succeeded_while_sampling"]))
    if "profile" in report:
        for name, p in report["profile"].items():
            print()
            print("callgrind, %s (%s s under valgrind), self cost:" % (name,
                                                                     p["wall_s_under_callgrind"]))
            if p.get("floor_ir"):
                print("instructions: backfilld %d, floor (sqlite3, same transactions) %d: %.3f x"
                      % (p["daemon_ir"], p["floor_ir"], p["daemon_ir"] / p["floor_ir"]))
            print("\n".join(p["self"]))
    print()
    print("elapsed %.0f s" % report["elapsed_s"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
