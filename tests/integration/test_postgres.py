#!/usr/bin/env python3
"""PostgreSQL warehouses (issue 8), against a throwaway cluster.

The test starts its own PostgreSQL server: initdb and pg_ctl from
/usr/lib/postgresql/*/bin (Debian's `postgresql` package) or PATH, a data
directory and a Unix socket in a temporary directory, no TCP
(listen_addresses = ''), port 54329 (only the socket's name).  initdb
refuses to run as root, so as root the server runs as the `postgres` user
(runuser, or setpriv), and the temporary directory is handed to it.  The
warehouse role `etl` logs in with a SCRAM password read from the
daemon's password_file; the superuser `postgres` (trust, local socket
only) seeds and inspects the database through psql.

When no server can be started the test prints "SKIP: reason" and exits 77;
with BACKFILLD_REQUIRE_POSTGRES=1 (CI) it fails instead.  KEEP_TMP=1 keeps
the cluster's folder.

What it checks:
  - the lesson (config/postgres/example-postgres.yaml on
    config/postgres/sales.sql): the backfill of the deploy window and the
    rebuild of the weeks and the month give the same rows as the SQLite
    example (config/example.yaml), and the audit holds the guardrails;
  - a batch job (backfill_manifest as a temporary table) does the same;
  - runs overlap up to the caps (per job, max_connections) and never
    beyond, seen by the server's own clock;
  - the server stopped (pg_ctl stop -m fast) in the middle of a backfill
    and started again: every partition lands exactly once after retries;
  - a job timeout cancels the statement on the server, quickly, and leaves
    no query behind (pg_stat_activity);
  - a warehouse that cannot be reached at start, a wrong password, a role
    without privileges: the daemon starts and serves the other warehouses,
    runs fail with errors naming the warehouse (and, in the log, the job
    and the partition), nothing is half-written, no password is shown.
"""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import time

import harness as h

PORT = 54329
PASSWORD = "etl-secret-5b1f"
PG_DIR = os.path.join(h.SOURCE_ROOT, "config", "postgres")
PG_SALES_SQL = os.path.join(PG_DIR, "sales.sql")
PG_EXAMPLE = os.path.join(PG_DIR, "example-postgres.yaml")


def skip(reason):
    """Exit 77, or 1 when BACKFILLD_REQUIRE_POSTGRES=1 (CI: a skip is a failure)."""
    if os.environ.get("BACKFILLD_REQUIRE_POSTGRES") == "1":
        print("FAIL: PostgreSQL is required (BACKFILLD_REQUIRE_POSTGRES=1): %s" % reason)
        raise SystemExit(1)
    print("SKIP: %s" % reason)
    raise SystemExit(h.SKIP)


class Cluster:
    """A PostgreSQL server of our own in a temporary directory."""

    def __init__(self):
        self.bindir = self.find_bindir()
        self.dir = h.suite_mkdtemp("pg")
        self.data = os.path.join(self.dir, "data")
        # stopped whatever happens from here on: at exit, on a signal, and
        # by the watchdog when this process is killed outright
        self.closed = False
        h.register_server(self)
        self.watchdog = h.watchdog(os.path.join(self.data, "postmaster.pid"))
        self.sockdir = os.path.join(self.dir, "sock")
        self.logfile = os.path.join(self.dir, "server.log")
        self.runas = []
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                skip("running as root and there is no `postgres` user to run the server as")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            if shutil.which("runuser"):
                self.runas = ["runuser", "-u", "postgres", "--"]
            elif shutil.which("setpriv"):
                self.runas = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                              "--init-groups"]
            else:
                skip("running as root without runuser or setpriv to drop to `postgres`")
        self.as_server(["mkdir", "-p", self.sockdir])
        r = self.as_server([os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", "postgres",
                            "--auth-local=trust", "--auth-host=reject", "-E", "UTF8",
                            "--locale=C", "--no-sync"], check=False)
        if r.returncode != 0:
            skip("initdb failed: %s" % (r.stdout + r.stderr).strip()[-400:])
        # The superuser by trust, everyone else by password.
        hba = "local all postgres trust\nlocal all all scram-sha-256\n"
        self.as_server(["sh", "-c", "cat > '%s/pg_hba.conf'" % self.data], input=hba)
        if not self.start(check=False):
            skip("pg_ctl start failed:\n%s" % self.log_tail())
        self.conninfo = "host=%s port=%d dbname=etl user=etl" % (self.sockdir, PORT)
        self.pwfile = os.path.join(self.dir, "etl.password")
        with open(self.pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        os.chmod(self.pwfile, 0o600)
        self.psql("CREATE ROLE etl LOGIN PASSWORD '%s'" % PASSWORD, db="postgres")
        self.psql("CREATE ROLE reader LOGIN PASSWORD '%s'" % PASSWORD, db="postgres")

    @staticmethod
    def find_bindir():
        cands = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                       key=lambda p: [int(x) if x.isdigit() else 0
                                      for x in p.split("/")[-2].split(".")], reverse=True)
        for c in cands:
            if os.access(os.path.join(c, "initdb"), os.X_OK):
                return c
        p = shutil.which("initdb")
        if p and shutil.which("pg_ctl"):
            return os.path.dirname(os.path.realpath(p))
        skip("no initdb/pg_ctl (apt-get install postgresql)")

    def as_server(self, argv, check=True, input=None):
        r = subprocess.run(self.runas + argv, capture_output=True, text=True, input=input,
                           timeout=120, cwd="/")
        if check and r.returncode != 0:
            h.fail("%s failed (%d): %s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def start(self, check=True):
        opts = "-c listen_addresses='' -k %s -p %d -c fsync=off -c max_connections=40" % (
            self.sockdir, PORT)
        r = self.as_server([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l",
                            self.logfile, "-o", opts, "-w", "-t", "60", "start"], check=False)
        if r.returncode != 0 and check:
            h.fail("pg_ctl start failed:\n%s" % self.log_tail())
        return r.returncode == 0

    def stop(self, mode="fast"):
        self.as_server([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", mode,
                        "-w", "-t", "60", "stop"])

    def kill(self):
        """Immediate shutdown without waiting (a signal handler's)."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                os.kill(int(f.readline()), signal.SIGQUIT)
        except (OSError, ValueError):
            pass

    def close(self):
        if self.closed:
            return
        self.closed = True
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.as_server([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m",
                            "immediate", "-w", "stop"], check=False)
        if self.watchdog.stdin is not None:
            self.watchdog.stdin.close()
            self.watchdog.wait(60)
        if os.environ.get("KEEP_TMP"):
            print("kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, n=30):
        try:
            with open(self.logfile, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no server log)"

    def psql_cmd(self, db):
        return [os.path.join(self.bindir, "psql"), "-X", "-q", "-At", "-F", "|",
                "-v", "ON_ERROR_STOP=1", "-h", self.sockdir, "-p", str(PORT), "-U", "postgres",
                "-d", db]

    def psql(self, sql, db="etl", file=None):
        """Run SQL as the superuser; rows as tuples of text."""
        argv = self.psql_cmd(db) + (["-f", file] if file else ["-c", sql])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            h.fail("psql %r failed: %s" % (file or sql, r.stderr.strip()))
        return [tuple(line.split("|")) for line in r.stdout.splitlines() if line != ""]

    def fresh_db(self):
        """A new etl database owned by etl, seeded with config/postgres/sales.sql."""
        self.psql("DROP DATABASE IF EXISTS etl WITH (FORCE)", db="postgres")
        self.psql("CREATE DATABASE etl OWNER etl", db="postgres")
        argv = self.psql_cmd("etl") + ["-c", "SET ROLE etl", "-f", PG_SALES_SQL]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            h.fail("seeding etl failed: %s" % r.stderr)

    def as_etl(self, sql):
        """Run SQL as the warehouse role (SET ROLE: objects owned by etl)."""
        return self.psql("SET ROLE etl; " + sql)

    def lock(self, table, db="etl"):
        """Hold an ACCESS EXCLUSIVE lock on table in a psql session of the
        test's until the returned function is called (the warehouse's runs
        on it wait meanwhile)."""
        proc = subprocess.Popen(self.psql_cmd(db), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        proc.stdin.write("BEGIN; LOCK TABLE %s IN ACCESS EXCLUSIVE MODE;\n"
                         "\\echo locked\n" % table)
        proc.stdin.flush()
        h.eq(proc.stdout.readline().strip(), "locked", "psql holding %s" % table)

        def release():
            proc.stdin.write("ROLLBACK;\n\\q\n")
            proc.stdin.flush()
            proc.wait(timeout=60)
        return release


CLUSTER = None


def cluster():
    global CLUSTER
    if CLUSTER is None:
        CLUSTER = Cluster()
    return CLUSTER


def pg_warehouse(name="sales", max_connections=None, conninfo=None, pwfile=None):
    c = cluster()
    lines = ["  - name: %s" % name,
             "    postgres: \"%s\"" % (conninfo or c.conninfo),
             "    password_file: %s" % (pwfile or c.pwfile)]
    if max_connections:
        lines.append("    max_connections: %d" % max_connections)
    return "\n".join(lines) + "\n"


def pg_daemon(jobs, warehouses, settings=None, clock=h.DEFAULT_CLOCK, name="pg", start=True):
    """A daemon whose warehouses are the given YAML items (PostgreSQL)."""
    import textwrap
    lines = ["state_db: state.db", "socket: backfilld.sock"]
    for k, v in (settings or {"max_concurrency": 4}).items():
        lines.append("%s: %s" % (k, v))
    text = "\n".join(lines) + "\nwarehouses:\n" + warehouses + "jobs:\n" + textwrap.indent(
        textwrap.dedent(jobs).strip("\n"), "  ") + "\n"
    return h.Daemon(config=text, clock=clock, name=name, start=start)


def cents(v):
    return None if v in (None, "") else round(float(v) * 100)


# ------------------------------------------------------------------ the lesson

def example_pg_daemon():
    c = cluster()
    with open(PG_EXAMPLE) as f:
        text = f.read()
    old = 'postgres: "host=/run/postgresql dbname=etl user=etl"'
    h.check(old in text, "example-postgres.yaml no longer holds %r" % old)
    text = text.replace(old, 'postgres: "%s"' % c.conninfo)
    text = text.replace("password_file: /etc/backfilld/etl.password", "password_file: %s" % c.pwfile)
    d = h.Daemon(config=text, clock=None, name="pgexample", start=False)
    os.mkdir(os.path.join(d.dir, "state"))
    d.sock = os.path.join(d.dir, "state", "backfilld.sock")
    d.state_db = os.path.join(d.dir, "state", "state.db")
    return d


def example_sqlite_daemon():
    import sqlite3
    with open(h.EXAMPLE_YAML) as f:
        text = f.read()
    d = h.Daemon(config=text, clock=None, name="sqlexample", start=False)
    state = os.path.join(d.dir, "state")
    os.mkdir(state)
    d.sock = os.path.join(state, "backfilld.sock")
    d.state_db = os.path.join(state, "state.db")
    d.warehouses = {"sales": os.path.join(state, "sales.db")}
    con = sqlite3.connect(d.warehouses["sales"])
    con.executescript(h.sales_seed())
    con.close()
    return d


def pg_tables():
    c = cluster()
    return {
        "fct": sorted((r[0], int(r[1]), int(r[2]), cents(r[3])) for r in c.psql(
            "SELECT dt, store_id, sales, revenue_usd FROM fct_daily_sales")),
        "weekly": sorted((r[0], cents(r[1])) for r in c.psql(
            "SELECT week_start, revenue_usd FROM mart_weekly_sales")),
        "monthly": sorted((r[0], cents(r[1])) for r in c.psql(
            "SELECT month_start, revenue_usd FROM mart_monthly_sales")),
    }


def sqlite_tables(d):
    return {
        "fct": sorted((r[0], r[1], r[2], cents(r[3])) for r in d.query(
            "SELECT dt, store_id, sales, revenue_usd FROM fct_daily_sales")),
        "weekly": sorted((r[0], cents(r[1])) for r in d.query(
            "SELECT week_start, revenue_usd FROM mart_weekly_sales")),
        "monthly": sorted((r[0], cents(r[1])) for r in d.query(
            "SELECT month_start, revenue_usd FROM mart_monthly_sales")),
    }


def run_keys(d):
    return sorted((r["job"], r["partition"], r["state"]) for r in d.runs())


def test_lesson_same_as_sqlite():
    c = cluster()
    c.fresh_db()
    ds = example_sqlite_daemon()
    dp = example_pg_daemon()
    p = subprocess.run([dp.backfilld, "--check-config", "--config", dp.conf],
                       capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 0, "--check-config on example-postgres.yaml (%r)" % p.stderr)
    ds.start()
    dp.start()
    h.eq(pg_tables(), sqlite_tables(ds), "the seeded warehouses (before the backfill)")
    for d in (ds, dp):
        d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "refund bug")
    h.eq(run_keys(dp), run_keys(ds), "runs of the backfill, PostgreSQL vs SQLite")
    h.eq(len(run_keys(dp)), 8, "runs: 5 days, 2 weeks, 1 month")
    pt, st = pg_tables(), sqlite_tables(ds)
    h.eq(pt, st, "warehouse after the backfill, PostgreSQL vs SQLite")
    truth = {r[0]: cents(r[1]) for r in c.psql(
        "SELECT date_trunc('week', dt)::date, SUM(amount_usd) FROM raw_sales GROUP BY 1")}
    for wk, rev in pt["weekly"]:
        h.eq(rev, truth[wk], "mart_weekly_sales %s against raw_sales" % wk)
    # The guardrails ran on PostgreSQL too.
    req = min(r["request"] for r in dp.runs() if r["job"] == "fct_daily_sales")
    audit = dp.json("audit", "--request", str(req))
    parts = [p for p in audit.get("partitions", []) if p["job"] == "fct_daily_sales"]
    h.eq(sorted(p["partition"] for p in parts), h.days(*h.WINDOW), "audited partitions")
    for p in parts:
        h.check(p["rows_after"] and int(p["rows_after"]) == 3, "rows_after of %s: %r" % (
            p["partition"], p["rows_after"]))
        h.check(p["passed"], "audit of %s did not pass: %r" % (p["partition"], p))
        names = {ck["name"] for ck in p["checks"]}
        for want in ("reconciles_with_raw", "key_unique", "min_rows", "max_change:revenue"):
            h.check(want in names, "audit of %s lacks check %s: %r" % (p["partition"], want, names))
    # A second backfill changes nothing.
    before = pg_tables()
    dp.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "again")
    h.eq(pg_tables(), before, "warehouse after the second backfill")
    ds.stop()
    dp.stop()


# The jobs of these tests have no start: no clock schedule, so only the
# requests a test makes run (catchup: false would run the newest due
# partition at start, on the real clock these tests use).
BATCH_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  batch: true
  sql: |
    DELETE FROM fct_daily_sales f USING backfill_manifest m
    WHERE f.dt = m.partition_key::date;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT r.dt, r.store_id, COUNT(*), SUM(r.amount_usd)
    FROM raw_sales r JOIN backfill_manifest m ON r.dt = m.partition_key::date
    WHERE r.dt >= :partition_start AND r.dt < :partition_end
    GROUP BY r.dt, r.store_id;
    INSERT INTO batch_log (n) SELECT count(*) FROM backfill_manifest;
  checks:
    - name: reconciles_with_raw
      sql: SELECT (SELECT SUM(revenue_usd) FROM fct_daily_sales WHERE dt = :partition)
                IS NOT DISTINCT FROM (SELECT SUM(amount_usd) FROM raw_sales WHERE dt = :partition)
"""


def test_batch_manifest():
    c = cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE batch_log (n int)")
    d = pg_daemon(BATCH_JOB, pg_warehouse(), clock=None, name="pgbatch")
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1])
    runs = d.runs()
    h.eq(sorted(r["partition"] for r in runs), h.days(*h.WINDOW), "partitions of the batch")
    h.eq(sorted(r["state"] for r in runs), ["succeeded"] * len(runs), "batch run states")
    h.eq(len({r["started_at"] for r in runs}), 1, "one batch run (one start time)")
    h.eq(c.psql("SELECT n FROM batch_log"), [("5",)],
         "rows of backfill_manifest seen by the batch's one execution")
    bad = c.psql("SELECT f.dt, f.revenue_usd, r.s FROM fct_daily_sales f JOIN "
                 "(SELECT dt, store_id, SUM(amount_usd) s FROM raw_sales GROUP BY 1, 2) r "
                 "USING (dt, store_id) WHERE f.revenue_usd <> r.s")
    h.eq(bad, [], "fact rows that disagree with raw_sales after the batch")
    h.eq(c.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'backfill_manifest'"),
         [("0",)], "backfill_manifest left behind")
    d.stop()


# ------------------------------------------------------------------ parallelism

CAPS_JOBS = """
- name: j1
  warehouse: sales
  partition: day
  concurrency: 2
  allow_wall_clock: true      # the trace's times are the server's clock
  sql: |
    INSERT INTO trace (job, part, t0) VALUES ('j1', :partition, clock_timestamp());
    SELECT pg_sleep(0.4);
    UPDATE trace SET t1 = clock_timestamp() WHERE job = 'j1' AND part = :partition;
- name: j2
  warehouse: sales
  partition: day
  concurrency: 2
  allow_wall_clock: true      # the trace's times are the server's clock
  sql: |
    INSERT INTO trace (job, part, t0) VALUES ('j2', :partition, clock_timestamp());
    SELECT pg_sleep(0.4);
    UPDATE trace SET t1 = clock_timestamp() WHERE job = 'j2' AND part = :partition;
"""


def test_parallel_caps():
    c = cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE trace (job text, part text, t0 timestamptz, t1 timestamptz)")
    d = pg_daemon(CAPS_JOBS, pg_warehouse(max_connections=3),
                  settings={"max_concurrency": 4}, clock=None, name="pgcaps")
    r1 = d.enqueue("backfill", "j1", "--from", "2026-02-01", "--to", "2026-02-06")
    r2 = d.enqueue("backfill", "j2", "--from", "2026-02-01", "--to", "2026-02-06")
    for r in (r1, r2):
        h.eq(d.wait_request(r).get("status"), "0", "request %d" % r)
    rows = c.psql("SELECT job, part, extract(epoch FROM t0), extract(epoch FROM t1) FROM trace")
    h.eq(len(rows), 12, "trace rows (one per committed run)")
    iv = {}
    for job, part, t0, t1 in rows:
        iv.setdefault(job, []).append((float(t0), float(t1)))
    total = h.overlap_max(iv["j1"] + iv["j2"])
    per = {j: h.overlap_max(v) for j, v in iv.items()}
    print("  server-side overlap: all %d, j1 %d, j2 %d" % (total, per["j1"], per["j2"]))
    h.check(total <= 3, "max_connections 3 exceeded on the server: %d at once" % total)
    for j, n in per.items():
        h.check(n <= 2, "concurrency 2 of %s exceeded: %d at once" % (j, n))
    h.eq(total, 3, "max_connections reached (3 runs at once on the server)")
    h.eq(max(per.values()), 2, "a job's concurrency reached (2 at once)")
    conns = c.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = 'etl' "
                   "AND application_name = 'backfilld'")[0][0]
    print("  connections the daemon keeps open to the warehouse: %s" % conns)
    d.stop()


# ------------------------------------------------------------------ server restart

RESTART_JOB = """
- name: fct_daily_sales
  warehouse: sales
  partition: day
  concurrency: 2
  retries: 6
  retry_backoff: 1s
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    SELECT pg_sleep(0.25);
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
    INSERT INTO landings (part) VALUES (:partition);
"""


def test_server_restart_mid_backfill():
    c = cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE landings (part date, at timestamptz DEFAULT clock_timestamp())")
    c.as_etl("UPDATE fct_daily_sales SET revenue_usd = 0")
    d = pg_daemon(RESTART_JOB, pg_warehouse(), settings={"max_concurrency": 2},
                  clock=None, name="pgrestart")
    req = d.enqueue("backfill", "fct_daily_sales", "--from", h.ALL_DAYS[0], "--to", h.ALL_DAYS[1])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [r for r in d.runs() if r["state"] == "succeeded"]
        if len(done) >= 4:
            break
        time.sleep(0.1)
    h.check(len(done) >= 4, "the backfill did not get going")
    c.stop("fast")
    time.sleep(2.0)
    c.start()
    resp = d.wait_request(req, timeout=120)
    h.eq(resp.get("status"), "0", "wait for the backfill across the restart: %r" % resp)
    runs = d.runs()
    failed = [r for r in runs if r["state"] == "failed"]
    print("  %d runs, %d failed attempts across the restart" % (len(runs), len(failed)))
    h.check(failed, "no run failed: the server stop did not land inside the backfill")
    for e in sorted({(r["error"] or "")[:150] for r in failed}):
        print("  error: %s" % e)
    for r in failed:
        h.check('warehouse "sales"' in (r["error"] or "") or "interrupted" in (r["error"] or ""),
                "a failed attempt's error does not name the warehouse: %r" % r["error"])
    days = h.days(*h.ALL_DAYS)
    ok = sorted(r["partition"] for r in runs if r["state"] == "succeeded")
    h.eq(ok, days, "one succeeded run per partition")
    landed = {}
    for (part,) in c.psql("SELECT part FROM landings"):
        landed[part] = landed.get(part, 0) + 1
    ambiguous = {r["partition"] for r in failed if "commit failed" in (r["error"] or "")}
    for day in days:
        n = landed.get(day, 0)
        if n != 1 and day in ambiguous:
            print("  %s landed %d times: its COMMIT was in flight when the server stopped" % (day, n))
            continue
        h.eq(n, 1, "committed runs of %s" % day)
    bad = c.psql("SELECT f.dt FROM fct_daily_sales f JOIN (SELECT dt, store_id, COUNT(*) n, "
                 "SUM(amount_usd) s FROM raw_sales GROUP BY 1, 2) r USING (dt, store_id) "
                 "WHERE f.revenue_usd <> r.s OR f.sales <> r.n")
    h.eq(bad, [], "fact rows wrong after the restart")
    h.eq(c.psql("SELECT count(*) FROM fct_daily_sales"),
         c.psql("SELECT count(*) FROM (SELECT DISTINCT dt, store_id FROM raw_sales) x"),
         "fact rows (no duplicates, none missing)")
    # A restart while the connections sit idle: the next run reconnects
    # before it begins and succeeds at its first attempt.
    c.stop("fast")
    c.start()
    d.ok("rerun", "fct_daily_sales", "2026-02-10", "--wait")
    last = [r for r in d.runs() if r["request"] > req]
    h.eq([(r["attempt"], r["state"]) for r in last], [(1, "succeeded")],
         "the run after an idle restart")
    d.stop()


# ------------------------------------------------------------------ timeout

# No start: no clock schedule, so nothing runs but the reruns (catchup:
# false would run the newest due partition at start).
TIMEOUT_JOBS = """
- name: slow
  warehouse: sales
  partition: day
  timeout: 1s
  retries: 0
  sql: |
    INSERT INTO marks (part) VALUES (:partition);
    SELECT pg_sleep(30);
- name: quick
  warehouse: sales
  partition: day
  sql: INSERT INTO marks (part) VALUES (:partition)
"""


def test_timeout_cancels_on_server():
    c = cluster()
    c.fresh_db()
    c.as_etl("CREATE TABLE marks (part text)")
    d = pg_daemon(TIMEOUT_JOBS, pg_warehouse(), settings={"max_concurrency": 1},
                  clock=None, name="pgtimeout")
    t0 = time.monotonic()
    rc, out, err = d.ctl("rerun", "slow", "2026-02-03", "--wait")
    took = time.monotonic() - t0
    h.eq(rc, 1, "rerun of the slow job (stdout %r stderr %r)" % (out, err))
    print("  the run with a 1 s timeout ended after %.2f s" % took)
    h.check(took < 8, "the 1 s timeout took %.1f s to end the run" % took)
    [r] = d.runs("--job", "slow")
    h.eq(r["state"], "failed", "state of the timed-out run")
    h.check("timed out" in (r["error"] or ""), "error of the timed-out run: %r" % r["error"])
    left = c.psql("SELECT pid, state, query FROM pg_stat_activity "
                  "WHERE query LIKE '%pg_sleep(30)%' AND state <> 'idle' AND pid <> pg_backend_pid()")
    h.eq(left, [], "queries left running on the server after the timeout")
    h.eq(c.psql("SELECT count(*) FROM marks"), [("0",)], "rows of the cancelled run (rolled back)")
    # The same worker's connection is fine for the next run.
    d.ok("rerun", "quick", "2026-02-03", "--wait")
    h.eq(c.psql("SELECT part FROM marks"), [("2026-02-03",)], "rows of the next run")
    d.stop()


# ------------------------------------------------------------------ bad input

BAD_JOBS = """
- name: fact_down
  warehouse: down
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  sql: DELETE FROM fct_daily_sales WHERE dt = :partition
- name: fact_badpw
  warehouse: badpw
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  sql: DELETE FROM fct_daily_sales WHERE dt = :partition
- name: fact_reader
  warehouse: reader
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
- name: fact_ok
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd)
    SELECT dt, store_id, COUNT(*), SUM(amount_usd)
    FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id;
- name: fact_writecheck
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  sql: DELETE FROM fct_daily_sales WHERE dt = :partition
  checks:
    - name: sneaky
      sql: DELETE FROM raw_sales WHERE dt = :partition RETURNING 1
- name: fact_badsql
  warehouse: sales
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  sql: |
    DELETE FROM fct_daily_sales WHERE dt = :partition;
    INSERT INTO no_such_table SELECT 1;
"""


def test_bad_input():
    c = cluster()
    c.fresh_db()
    c.psql("GRANT CONNECT ON DATABASE etl TO reader", db="postgres")
    c.as_etl("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    wrongpw = os.path.join(c.dir, "wrong.password")
    with open(wrongpw, "w") as f:
        f.write("wrong-secret-77a\n")
    down = "host=%s port=%d dbname=etl user=etl connect_timeout=3" % (
        os.path.join(c.dir, "nowhere"), PORT)
    whs = (pg_warehouse("down", conninfo=down) + pg_warehouse("badpw", pwfile=wrongpw) +
           pg_warehouse("reader", conninfo=c.conninfo.replace("user=etl", "user=reader")) +
           pg_warehouse("sales"))
    d = pg_daemon(BAD_JOBS, whs, clock=None, name="pgbad")
    st = d.status()
    for j in ("fact_down", "fact_badpw", "fact_reader", "fact_ok"):
        h.check(j in st, "status lacks %s: %r" % (j, sorted(st)))
    before = c.psql("SELECT dt, store_id, revenue_usd FROM fct_daily_sales ORDER BY 1, 2")
    day = "2026-02-10"
    expect = {
        "fact_down": ['warehouse "down"', "cannot connect"],
        "fact_badpw": ['warehouse "badpw"', "password authentication failed"],
        "fact_reader": ['warehouse "reader"', "permission denied"],
        "fact_badsql": ['warehouse "sales"', "no_such_table", "statement 2"],
        "fact_writecheck": ["sneaky", "a check must not write"],
    }
    for job, words in expect.items():
        rc, out, err = d.ctl("rerun", job, day, "--wait")
        h.eq(rc, 1, "rerun %s (stdout %r, stderr %r)" % (job, out, err))
        [r] = d.runs("--job", job)
        h.eq((r["state"], r["partition"]), ("failed", day), "run of %s" % job)
        for w in words:
            h.check(w in (r["error"] or ""), "error of %s lacks %r: %r" % (job, w, r["error"]))
    h.eq(c.psql("SELECT dt, store_id, revenue_usd FROM fct_daily_sales ORDER BY 1, 2"), before,
         "fact table after the failed runs (nothing half-written)")
    h.eq(c.psql("SELECT count(*) FROM raw_sales WHERE dt = '%s'" % day)[0][0] != "0", True,
         "raw_sales rows of %s kept (the writing check was refused)" % day)
    # status says which warehouses answer (probed at start, then by the runs)
    whst = {w["name"]: w for w in d.json("status")["warehouses"]}
    h.eq(whst["down"]["state"], "unreachable", "status of warehouse down: %r" % whst["down"])
    h.check("cannot connect" in (whst["down"]["error"] or ""),
            "status of warehouse down gives no reason: %r" % whst["down"])
    h.eq(whst["badpw"]["state"], "unreachable", "status of warehouse badpw")
    h.eq(whst["sales"]["state"], "ok", "status of warehouse sales")
    h.check("warehouse down: unreachable" in d.ok("status"),
            "the status table does not name the unreachable warehouse")
    # The healthy warehouse still serves.
    d.ok("rerun", "fact_ok", day, "--wait")
    d.assert_alive()
    with open(d.log, errors="replace") as f:
        log = f.read()
    for job in expect:
        h.check(("job=%s partition=%s" % (job, day)) in log,
                "the daemon log names no job=%s partition=%s" % (job, day))
    shown = log + d.ok("status") + d.ok("runs", "--json") + d.ok("status", "--json")
    for secret in (PASSWORD, "wrong-secret-77a"):
        h.check(secret not in shown, "a password shows in the log, status or runs")
    d.stop()


def main():
    if not os.environ.get("BACKFILLD"):
        h.binaries()
    try:
        cluster()
        h.main([test_lesson_same_as_sqlite, test_batch_manifest, test_parallel_caps,
                test_server_restart_mid_backfill, test_timeout_cancels_on_server,
                test_bad_input])
    finally:
        if CLUSTER is not None:
            CLUSTER.close()


if __name__ == "__main__":
    main()
