#!/usr/bin/env python3
"""pg_bench.py - backfilld against what users do by hand, on PostgreSQL (issue 8).

    tests/bench/pg_bench.py [--quick] [--runs N] [--windows 30,90] [--build DIR] ...

Starts a throwaway PostgreSQL server (initdb/pg_ctl from
/usr/lib/postgresql/*/bin, as the `postgres` user when run as root; data
directory and Unix socket in a temporary folder, no TCP), generates the
lesson's sales warehouse in it (120 days x 27,000 rows a day, 100 stores,
about 3 % refunds, deterministic: multiplicative hashes of the row number),
and measures, alternating the methods and repeating each N times (default
3), a per-date backfill of 30 and of 90 days (fact plus the affected weeks
of the weekly mart) by:

  hand loop    pg_hand_loop.sh: one psql (one connection) per date, then per week
  set-based    pg_set_based.sh: one psql, one transaction, a manifest table
  floor        pg_floor.sh: the per-partition transactions in one psql session
  backfilld c  the daemon with the fact job's concurrency c = 1, 2, 4
               (max_concurrency 4, the warehouse's max_connections 4):
               backfillctl backfill ... --wait, end to end

Before every measurement the fact and the mart are restored to the same
buggy state (refunds excluded everywhere) from pristine copies, vacuumed
and checkpointed, outside the timing.  After it the result is checked: the
fact and the mart must be identical across methods (numeric, so to the
cent), the rebuilt days must equal raw_sales, each affected week must equal
the sum of its days, and nothing else may change; for backfilld the state
store must hold one succeeded run per day and per week.

--quick: one run of each, the 30-day window only.  --smoke: a tiny
warehouse (20 days x 300 rows), one run, for the test suite: it checks the
results and makes no claim about the times.

Exit codes: 0 done, 1 a wrong result or a misbehaving daemon, 2 bad usage
or a missing tool, 77 PostgreSQL cannot be started here (the message says
why).  KEEP_TMP=1 keeps the cluster's folder after a failure.
"""

import datetime
import glob
import json
import os
import platform
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from run import (BenchError, FACT_SQL, WEEK_SQL, WindowCase, indent, loadavg,  # noqa: E402
                 median, window_args)

SKIP = 77
PASSWORD = "bench-etl-3c9d"

# the same job SQL as the SQLite case (run.py): it is standard SQL

SCRIPT = {"hand": "pg_hand_loop.sh", "set": "pg_set_based.sh", "floor": "pg_floor.sh"}
LABEL = {"hand": "hand loop (psql per date)", "set": "set-based (manifest, 1 psql)",
         "floor": "floor: per-date tx, 1 session", "bfd1": "backfilld, concurrency 1",
         "bfd2": "backfilld, concurrency 2", "bfd4": "backfilld, concurrency 4"}
METHODS = ["hand", "set", "floor", "bfd1", "bfd2", "bfd4"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def skip(reason):
    print("pg_bench.py: SKIP: %s" % reason, flush=True)
    raise SystemExit(SKIP)


# ------------------------------------------------------------------ the server

class Cluster:
    """A PostgreSQL server of our own in a temporary folder (as in
    tests/integration/test_postgres.py), with the server's default
    durability (fsync on, synchronous_commit on): every commit waits for
    its WAL flush, as on a real warehouse."""

    def __init__(self, args):
        self.args = args
        self.bindir = self.find_bindir()
        self.dir = tempfile.mkdtemp(prefix="backfilld-pgbench-")
        self.data = os.path.join(self.dir, "data")
        self.sockdir = os.path.join(self.dir, "sock")
        self.logfile = os.path.join(self.dir, "server.log")
        self.runas = []
        self.started = False
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                self.close()
                skip("running as root and there is no `postgres` user to run the server as")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            if shutil.which("runuser"):
                self.runas = ["runuser", "-u", "postgres", "--"]
            elif shutil.which("setpriv"):
                self.runas = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                              "--init-groups"]
            else:
                self.close()
                skip("running as root without runuser or setpriv to drop to `postgres`")
        self.as_server(["mkdir", "-p", self.sockdir])
        r = self.as_server([os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", "postgres",
                            "--auth-local=trust", "--auth-host=reject", "-E", "UTF8",
                            "--locale=C", "--no-sync"], check=False)
        if r.returncode != 0:
            self.close()
            skip("initdb failed: %s" % (r.stdout + r.stderr).strip()[-400:])
        hba = "local all postgres trust\nlocal all all scram-sha-256\n"
        self.as_server(["sh", "-c", "cat > '%s/pg_hba.conf'" % self.data], input=hba)
        opts = ("-c listen_addresses='' -k %s -p %d -c max_connections=40 "
                "-c shared_buffers=%s -c max_wal_size=4GB" % (self.sockdir, args.port,
                                                              args.shared_buffers))
        # extra server options for profiling (e.g. pg_stat_statements)
        opts += " " + os.environ.get("BACKFILLD_BENCH_PG_OPTS", "")
        r = self.as_server([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l",
                            self.logfile, "-o", opts, "-w", "-t", "60", "start"], check=False)
        if r.returncode != 0:
            tail = self.log_tail()
            self.close()
            skip("pg_ctl start failed:\n%s" % tail)
        self.started = True
        self.version = self.psql("SHOW server_version", db="postgres")[0][0]
        self.pwfile = os.path.join(self.dir, "etl.password")
        with open(self.pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        os.chmod(self.pwfile, 0o600)
        self.pgpass = os.path.join(self.dir, "pgpass")
        with open(self.pgpass, "w") as f:
            f.write("*:*:*:etl:%s\n" % PASSWORD)
        os.chmod(self.pgpass, 0o600)
        self.psql("CREATE ROLE etl LOGIN PASSWORD '%s'" % PASSWORD, db="postgres")
        self.psql("CREATE DATABASE etl OWNER etl", db="postgres")
        self.conninfo = "host=%s port=%d dbname=etl user=etl" % (self.sockdir, args.port)

    @staticmethod
    def find_bindir():
        cands = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                       key=lambda p: [int(x) if x.isdigit() else 0
                                      for x in p.split("/")[-2].split(".")], reverse=True)
        for c in cands:
            if all(os.access(os.path.join(c, t), os.X_OK) for t in ("initdb", "pg_ctl", "psql")):
                return c
        p = shutil.which("initdb")
        if p and shutil.which("pg_ctl") and shutil.which("psql"):
            return os.path.dirname(os.path.realpath(p))
        skip("no initdb/pg_ctl/psql: PostgreSQL is not installed "
             "(Debian: apt-get install postgresql)")

    def as_server(self, argv, check=True, input=None):
        r = subprocess.run(self.runas + argv, capture_output=True, text=True, input=input,
                           timeout=300, cwd="/")
        if check and r.returncode != 0:
            raise BenchError("%s failed (%d): %s%s" % (" ".join(argv), r.returncode, r.stdout,
                                                       r.stderr))
        return r

    def env(self):
        """libpq's environment for the baseline scripts: the role etl, by password."""
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("PG"):
                del e[k]
        e.update(PGHOST=self.sockdir, PGPORT=str(self.args.port), PGDATABASE="etl",
                 PGUSER="etl", PGPASSFILE=self.pgpass)
        e["PATH"] = self.bindir + os.pathsep + e.get("PATH", "")
        return e

    def psql(self, sql, db="etl", user="postgres"):
        """SQL as the superuser (trust on the socket); rows as tuples of text."""
        argv = [os.path.join(self.bindir, "psql"), "-X", "-q", "-At", "-F", "|",
                "-v", "ON_ERROR_STOP=1", "-h", self.sockdir, "-p", str(self.args.port),
                "-U", user, "-d", db, "-f", "-"]
        r = subprocess.run(argv, capture_output=True, text=True, input=sql, timeout=1800)
        if r.returncode != 0:
            raise BenchError("psql failed: %s\nSQL: %s" % (r.stderr.strip(), sql[:800]))
        return [tuple(line.split("|")) for line in r.stdout.splitlines() if line != ""]

    def log_tail(self, n=30):
        try:
            with open(self.logfile, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no server log)"

    def close(self, keep=False):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.as_server([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "fast",
                            "-w", "-t", "60", "stop"], check=False)
        if keep:
            log("kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------ the warehouse

def generate(c, args):
    """raw_sales (args.days x args.rows_per_day rows), and the fact and the
    mart as the buggy job left them (refunds excluded on every day), with
    pristine copies to restore them from."""
    n = args.days * args.rows_per_day
    c.psql("""
SET ROLE etl;
CREATE TABLE raw_sales (
    sale_id    integer       NOT NULL,
    dt         date          NOT NULL,
    store_id   integer       NOT NULL,
    amount_usd numeric(12,2) NOT NULL     -- negative for a refund
);
-- Row id: day (id - 1) / rows_per_day; store and amount from two
-- multiplicative hashes of id modulo the prime 4294967291; a refund when
-- h2 %% 100 < 3 (3 %%), amounts 5.00 .. 254.99, refunds 1.00 .. 50.99.
INSERT INTO raw_sales (sale_id, dt, store_id, amount_usd)
SELECT id, DATE '%(start)s' + ((id - 1) / %(rpd)d)::int, 1 + (h1 %% %(stores)d)::int,
       CASE WHEN h2 %% 100 < 3 THEN -(1 + ((h2 / 100) %% 5000) / 100.0)
            ELSE 5 + ((h2 / 100) %% 25000) / 100.0 END
FROM (SELECT id, (id * 2654435761) %% 4294967291 AS h1,
             (id * 2246822519 + 3266489917) %% 4294967291 AS h2
      FROM generate_series(1::bigint, %(n)d) AS id) g;
ALTER TABLE raw_sales ADD PRIMARY KEY (sale_id);
CREATE INDEX raw_sales_dt ON raw_sales (dt);

CREATE TABLE fct_daily_sales (
    dt          date          NOT NULL,
    store_id    integer       NOT NULL,
    sales       integer       NOT NULL,
    revenue_usd numeric(14,2) NOT NULL,
    PRIMARY KEY (dt, store_id)
);
CREATE TABLE mart_weekly_sales (
    week_start  date PRIMARY KEY,
    revenue_usd numeric(14,2)
);
-- The buggy build: refunds excluded.
INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
SELECT dt, store_id, COUNT(*), SUM(amount_usd)
FROM raw_sales WHERE amount_usd > 0 GROUP BY dt, store_id;
INSERT INTO mart_weekly_sales (week_start, revenue_usd)
SELECT date_trunc('week', dt)::date, SUM(revenue_usd) FROM fct_daily_sales GROUP BY 1;
CREATE TABLE fct_pristine AS TABLE fct_daily_sales;
CREATE TABLE mart_pristine AS TABLE mart_weekly_sales;
RESET ROLE;
VACUUM ANALYZE;
CHECKPOINT;
""" % {"start": args.year_start, "rpd": args.rows_per_day, "stores": args.stores, "n": n})
    rows, refunds, stores, days = c.psql(
        "SELECT count(*), sum((amount_usd < 0)::int), count(DISTINCT store_id), "
        "count(DISTINCT dt) FROM raw_sales")[0]
    groups = c.psql("SELECT count(*) FROM fct_daily_sales")[0][0]
    size = c.psql("SELECT pg_size_pretty(pg_database_size('etl'))")[0][0]
    return {"rows": int(rows), "refunds_pct": round(100.0 * int(refunds) / int(rows), 2),
            "stores": int(stores), "days": int(days), "fact_rows": int(groups), "size": size}


RESET_SQL = """
BEGIN;
TRUNCATE fct_daily_sales, mart_weekly_sales;
INSERT INTO fct_daily_sales SELECT * FROM fct_pristine;
INSERT INTO mart_weekly_sales SELECT * FROM mart_pristine;
COMMIT;
VACUUM ANALYZE fct_daily_sales, mart_weekly_sales;
CHECKPOINT;
"""

DIGEST_SQL = """
SELECT md5(string_agg(concat_ws('|', dt, store_id, sales, revenue_usd), ',' ORDER BY dt, store_id))
FROM fct_daily_sales;
SELECT md5(string_agg(concat_ws('|', week_start, coalesce(revenue_usd::text, 'NULL')), ','
                      ORDER BY week_start))
FROM mart_weekly_sales;
"""


def digest(c):
    return "/".join(r[0] for r in c.psql(DIGEST_SQL))


def check_truth(c, case, what):
    """The rebuilt days equal raw_sales (refunds included), the affected
    weeks equal their days, and nothing else moved."""
    weeks = ",".join("DATE '%s'" % w for w in case.weeks)
    p = {"f": case.first, "l": case.last, "weeks": weeks}
    [(groups, wrong)] = c.psql("""
SELECT count(t.dt), count(*) FILTER (WHERE x.sales IS DISTINCT FROM t.c
                                       OR x.revenue_usd IS DISTINCT FROM t.r)
FROM (SELECT dt, store_id, COUNT(*) AS c, SUM(amount_usd) AS r FROM raw_sales
      WHERE dt BETWEEN '%(f)s' AND '%(l)s' GROUP BY dt, store_id) t
FULL JOIN (SELECT * FROM fct_daily_sales WHERE dt BETWEEN '%(f)s' AND '%(l)s') x
  USING (dt, store_id)""" % p)
    if int(groups) == 0 or int(wrong) != 0:
        raise BenchError("%s: fct_daily_sales %s..%s does not match raw_sales (%s of %s "
                         "groups wrong)" % (what, case.first, case.last, wrong, groups))
    [(nweeks, badweeks)] = c.psql("""
SELECT count(*), count(*) FILTER (WHERE m.revenue_usd IS DISTINCT FROM
         (SELECT SUM(revenue_usd) FROM fct_daily_sales
          WHERE dt >= m.week_start AND dt < m.week_start + 7))
FROM mart_weekly_sales m WHERE week_start IN (%(weeks)s)""" % p)
    if int(nweeks) != len(case.weeks) or int(badweeks) != 0:
        raise BenchError("%s: mart_weekly_sales: %s of the %d affected weeks present, %s of "
                         "them differ from the sum of their days" % (what, nweeks,
                                                                     len(case.weeks), badweeks))
    [(moved,)] = c.psql("""
SELECT (SELECT count(*) FROM ((TABLE fct_daily_sales EXCEPT TABLE fct_pristine)
                              UNION ALL (TABLE fct_pristine EXCEPT TABLE fct_daily_sales)) d
        WHERE dt NOT BETWEEN '%(f)s' AND '%(l)s')
     + (SELECT count(*) FROM ((TABLE mart_weekly_sales EXCEPT TABLE mart_pristine)
                              UNION ALL (TABLE mart_pristine EXCEPT TABLE mart_weekly_sales)) d
        WHERE week_start NOT IN (%(weeks)s))""" % p)
    if int(moved) != 0:
        raise BenchError("%s: %s rows outside %s..%s (or in weeks not affected) changed"
                         % (what, moved, case.first, case.last))


# ------------------------------------------------------------------ measurements

def daemon_config(c, concurrency):
    return ("state_db: state.db\nsocket: backfilld.sock\n"
            "max_concurrency: 4\nmax_backfill: 100000\n"
            "warehouses:\n  - name: sales\n    postgres: \"%s\"\n    password_file: %s\n"
            "    max_connections: 4\n"
            "jobs:\n"
            "  - name: fct_daily_sales\n    warehouse: sales\n    partition: day\n"
            "    catchup: false\n    concurrency: %d\n    retries: 0\n    max_backfill: 1000\n"
            "    sql: |\n%s\n"
            "  - name: mart_weekly_sales\n    warehouse: sales\n    partition: week\n"
            "    upstream: [fct_daily_sales]\n    concurrency: 1\n    retries: 0\n"
            "    sql: |\n%s\n"
            % (c.conninfo, c.pwfile, concurrency, indent(FACT_SQL, 6), indent(WEEK_SQL, 6)))


def measure(args, c, case, method, work, run_no, pristine):
    c.psql(RESET_SQL)
    if digest(c) != pristine:
        raise BenchError("the reset did not restore the pristine fact and mart")
    dates = os.path.join(work, "dates.txt")
    weeks = os.path.join(work, "weeks.txt")
    with open(dates, "w") as f:
        f.write("\n".join(case.dates) + "\n")
    with open(weeks, "w") as f:
        f.write("\n".join(case.weeks) + "\n")
    what = "%s, %s (run %d)" % (case.name, LABEL[method], run_no)
    if method.startswith("bfd"):
        dt = case.backfill(args, os.path.join(work, "daemon"),
                           daemon_config(c, int(method[3:])), method, what)
    else:
        t0 = time.monotonic()
        p = subprocess.run([os.path.join(HERE, SCRIPT[method]), dates, weeks],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=c.env())
        dt = time.monotonic() - t0
        if p.returncode != 0:
            raise BenchError("%s: %s exited %d\n%s" % (what, SCRIPT[method], p.returncode,
                                                       (p.stdout + p.stderr)[-2000:]))
    return case.record(method, dt, digest(c), pristine, what, LABEL,
                       lambda: check_truth(c, case, what))


def table(cases, runs):
    lines = ["Per-date backfill on PostgreSQL, fact + affected weeks (medians of %d run%s):"
             % (runs, "" if runs == 1 else "s"), ""]
    hdr = "| %-26s | %-30s | %9s | %7s | %8s | %7s |" % (
        "case", "method", "median ms", "vs set", "vs floor", "vs hand")
    lines += [hdr, "|" + "|".join("-" * len(x) for x in hdr.split("|")[1:-1]) + "|"]
    for c in cases:
        med = {m: median(ts) for m, ts in c.times.items()}
        for m in METHODS:
            if m in med:
                ratios = tuple("%.2f" % (med[m] / med[b]) if b in med else "-"
                               for b in ("set", "floor", "hand"))
                lines.append("| %-26s | %-30s | %9.0f | %7s | %8s | %7s |" % (
                    ("%s (%d weeks)" % (c.name, len(c.weeks)), LABEL[m], med[m] * 1000)
                    + ratios))
    lines.append("")
    for c in cases:
        for m in METHODS:
            if m in c.run_sums:
                lines.append("%s, %s: runs themselves %.0f ms (sum of \"succeeded in\"), "
                             "wall %.0f ms; all times %s" % (
                                 c.name, LABEL[m], median(c.run_sums[m]) * 1000,
                                 median(c.times[m]) * 1000,
                                 ", ".join("%.0f" % (t * 1000) for t in c.times[m])))
    return "\n".join(lines)


# ------------------------------------------------------------------ main

def parse(argv):
    ap = window_args(__doc__, 120)
    ap.add_argument("--port", type=int, default=54330, help="the server's port (names the "
                    "Unix socket only; no TCP)")
    ap.add_argument("--shared-buffers", default="512MB")
    args = ap.parse_args(argv)
    if args.smoke:
        args.days, args.rows_per_day, args.stores = 20, 300, 10
        args.windows = args.windows or "3,10"
        args.runs = args.runs or 1
        args.shared_buffers = "32MB"
    args.year_start = "2025-01-01"
    args.window_start = "2025-01-08"   # a Wednesday: partial weeks at both ends
    args.runs = args.runs or (1 if args.quick else 3)
    args.windows = sorted(int(x) for x in (args.windows or ("30" if args.quick else "30,90"))
                          .split(","))
    first = datetime.date.fromisoformat(args.window_start)
    end = datetime.date.fromisoformat(args.year_start) + datetime.timedelta(args.days)
    if first + datetime.timedelta(max(args.windows)) > end:
        ap.error("a %d-day window from %s does not fit in %d days from %s"
                 % (max(args.windows), args.window_start, args.days, args.year_start))
    b, ctl = os.environ.get("BACKFILLD"), os.environ.get("BACKFILLCTL")
    args.backfilld = os.path.abspath(b or os.path.join(args.build, "daemon", "backfilld"))
    args.backfillctl = os.path.abspath(ctl or os.path.join(args.build, "daemon", "backfillctl"))
    return args


def main(argv=None):
    args = parse(argv)
    for p in (args.backfilld, args.backfillctl):
        if not os.access(p, os.X_OK):
            print("pg_bench.py: missing %s: build it: meson setup build-bench "
                  "--buildtype=release && meson compile -C build-bench (or pass --build DIR, "
                  "or BACKFILLD/BACKFILLCTL)" % p, file=sys.stderr)
            return 2
    module = os.path.join(os.path.dirname(args.backfilld), "backfilld-pg.so")
    if not os.path.exists(module):
        print("pg_bench.py: no PostgreSQL driver beside %s (%s): install libpq-dev and "
              "rebuild (-Dpostgres=enabled)" % (args.backfilld, module), file=sys.stderr)
        return 2
    if not shutil.which("bash"):
        print("pg_bench.py: missing bash", file=sys.stderr)
        return 2
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": "%s, %d cores, %s" % (platform.node(), os.cpu_count(), platform.release()),
              "runs": args.runs, "loadavg_start": loadavg()}
    t_all = time.monotonic()
    c = Cluster(args)
    work = tempfile.mkdtemp(prefix="work-", dir=c.dir)
    rc = 0
    try:
        log("PostgreSQL %s in %s; generating %d days x %d rows ..."
            % (c.version, c.dir, args.days, args.rows_per_day))
        t0 = time.monotonic()
        report["warehouse"] = generate(c, args)
        report["postgres"] = c.version
        log("  generated in %.1f s: %r" % (time.monotonic() - t0, report["warehouse"]))
        pristine = digest(c)
        cases = [WindowCase(n, args.window_start) for n in args.windows]
        total = args.runs * len(cases) * len(METHODS)
        k = 0
        t_start = time.monotonic()
        for i in range(args.runs):
            for case in cases:
                order = METHODS[i % len(METHODS):] + METHODS[:i % len(METHODS)]
                for m in order:
                    k += 1
                    dt = measure(args, c, case, m, work, i + 1, pristine)
                    log("[%3d/%d %5.0f s] %-8s %-30s %8.1f ms" % (
                        k, total, time.monotonic() - t_start, case.name, LABEL[m], dt * 1000))
    except BenchError as e:
        print("pg_bench.py: FAIL: %s" % e, file=sys.stderr)
        print(c.log_tail(10), file=sys.stderr)
        rc = 1
    finally:
        c.close(keep=bool(rc and os.environ.get("KEEP_TMP")))
    if rc:
        return rc
    report["loadavg_end"] = loadavg()
    report["elapsed_s"] = round(time.monotonic() - t_all, 1)
    w = report["warehouse"]
    print("backfilld on PostgreSQL, %s, %s, PostgreSQL %s (fsync on, shared_buffers %s); "
          "%d run%s of each method, alternating"
          % (report["date"], report["machine"], c.version, args.shared_buffers, args.runs,
             "" if args.runs == 1 else "s"))
    print("warehouse: %d rows of raw_sales (%d days, %d stores, %.2f %% refunds), %s; "
          "load average %s at start, %s at end" % (w["rows"], w["days"], w["stores"],
                                                    w["refunds_pct"], w["size"],
                                                    report["loadavg_start"], report["loadavg_end"]))
    print()
    print(table(cases, args.runs))
    print()
    print("elapsed %.0f s" % report["elapsed_s"])
    report["cases"] = [cs.as_json() for cs in cases]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
