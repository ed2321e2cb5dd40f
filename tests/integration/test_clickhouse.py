#!/usr/bin/env python3
"""ClickHouse warehouses (issue 26), against a throwaway clickhouse-server.

The test starts its own server (Debian's clickhouse-server 18.16): a
config XML in a temporary directory listening on 127.0.0.1 only, free
ports for HTTP, TCP and interserver, its own path, tmp_path,
user_files_path and logs, and a users.xml with the passwordless `default`
user (the test's own inspection) and the `etl` user with a password (the
daemon's, read from its password_file).  The server is stopped whatever
the outcome: atexit, SIGTERM/SIGINT handlers, and a SIGKILL of its process
group.  Without clickhouse-server the test prints "SKIP: reason" and exits
77; with BACKFILLD_REQUIRE_CLICKHOUSE=1 (CI) it fails instead.

What it checks (docs/clickhouse.md):
  - the module (libcurl) is loaded only when a ClickHouse warehouse is
    configured;
  - the lesson (config/clickhouse/): the repaired fact equals raw for the
    deploy window, exactly the two ISO weeks are rebuilt, others
    untouched; a rerun changes nothing; no stage partition is left;
  - a failing check publishes nothing (the live partition's rows are
    identical before and after);
  - an empty stage partition is refused (the live one kept);
  - a table partitioned at another grain than the job's is refused with
    the job's position;
  - hostile input: a job whose text leaves a literal open is refused
    before it reaches the server; an exception the server sends after a
    200 status fails the check; a wrong password gives ClickHouse's text;
  - --check-config shows where the daemon substitutes values;
  - a timeout and the shutdown grace kill the query on the server
    (system.processes empty);
  - a reader polling the window during a backfill sees each day's old
    rows or its new ones, never a mix;
  - --verify fills the stage twice and compares rows and checksums: a
    job whose rows change is refused, nothing published;
  - batch: true fills the stage once for the request, audits every
    partition, then publishes each; a failing check publishes none;
    batch: 3 does the same per chunk of three consecutive partitions;
  - a late_data sensor (its :since an instant in UTC) rebuilds the day of
    a late row;
  - an hourly job on a table partitioned by toStartOfHour publishes each
    hour (toDateTime literals), a rerun of one hour replaces it alone;
  - a throttle holds runs on the warehouse until its value falls back;
  - kill -9 in the middle of a backfill, then a restart: every partition
    published, no stage leftovers;
  - the reload's check of the partition keys runs off the loop: `status`
    answers while the server is stopped (SIGSTOP) during a reload;
  - exactly once: killed right after a REPLACE, before the record, the
    restart publishes the same audited stage again (raw changed meanwhile
    does not reach it); killed after the record, before the stage is
    dropped, the restart drops it and runs nothing again;
  - cluster: two local servers as the shards of a Distributed table,
    killed between the two shards' publishes: both end with the new rows,
    each partition succeeded once, no stage or mark left; the shards found
    in system.clusters (servers on 127.0.0.1 and 127.0.0.2).
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import harness as h

SERVER = os.environ.get("CLICKHOUSE_SERVER", "/usr/sbin/clickhouse-server")
OTHERS = []  # every Server started, closed on a signal
PASSWORD = "etl-secret-c81d"
CH_DIR = os.path.join(h.SOURCE_ROOT, "config", "clickhouse")


def skip(reason):
    if os.environ.get("BACKFILLD_REQUIRE_CLICKHOUSE") == "1":
        print("FAIL: ClickHouse is required (BACKFILLD_REQUIRE_CLICKHOUSE=1): %s" % reason)
        raise SystemExit(1)
    print("SKIP: %s" % reason)
    raise SystemExit(h.SKIP)


free_port = h.free_port


class PortInUse(Exception):
    """A server on ports its caller chose found one of them taken."""


class Server:
    """A clickhouse-server of our own in a temporary directory."""

    def __init__(self, ports=None, extra="", host="127.0.0.1"):
        """ports: (http, tcp, interserver), free ones by default; extra:
        XML inside <yandex> (remote_servers); host: the loopback address
        it listens on."""
        if not os.access(SERVER, os.X_OK):
            skip("no %s (apt-get install clickhouse-server)" % SERVER)
        module = os.path.join(os.path.dirname(h.binaries()[0]), "backfilld-ch.so")
        if not os.path.exists(module):
            skip("this build has no ClickHouse driver (%s; libcurl4-openssl-dev)" % module)
        self.dir = tempfile.mkdtemp(prefix="bfd-ch-")
        self.extra = extra
        self.host = host
        self.http, self.tcp, self.inter = ports or (free_port(), free_port(), free_port())
        for sub in ("data", "tmp", "user_files", "log", "format_schemas"):
            os.makedirs(os.path.join(self.dir, sub))
        self.write_config()
        self.proc = None
        atexit.register(self.close)
        OTHERS.append(self)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        for attempt in range(5):
            self.start(as_user=None)
            if self.wait_ready():
                return
            log = self.log_tail()
            self.close(keep_dir=True)
            if "Address already in use" not in log:
                break
            # a port free when chosen was taken since (by another test's
            # server): new ones, unless the caller chose them
            if ports is not None:
                self.close()
                raise PortInUse(log)
            self.http, self.tcp, self.inter = free_port(), free_port(), free_port()
            self.write_config()
        if "root" in log.lower():
            self.start(as_user="clickhouse")
            if self.wait_ready():
                return
            self.close(keep_dir=True)
        self.close()
        skip("clickhouse-server did not start:\n%s" % log)

    def write_config(self):
        d = self.dir
        cfg = """<?xml version="1.0"?>
<yandex>
  <logger><level>information</level><log>{d}/log/server.log</log>
    <errorlog>{d}/log/error.log</errorlog><console>0</console></logger>
  <listen_host>{host}</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{inter}</interserver_http_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>53687091</mark_cache_size>
  <uncompressed_cache_size>53687091</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
{extra}
</yandex>
""".format(d=d, http=self.http, tcp=self.tcp, inter=self.inter, extra=self.extra,
           host=self.host)
        users = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.0/8</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <etl><password>{pw}</password><networks><ip>127.0.0.0/8</ip></networks>
      <profile>default</profile><quota>default</quota></etl>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries>
    <errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows>
    <execution_time>0</execution_time></interval></default></quotas>
</yandex>
""".format(pw=PASSWORD)
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write(cfg)
        with open(os.path.join(d, "users.xml"), "w") as f:
            f.write(users)
        self.pwfile = os.path.join(d, "etl.password")
        with open(self.pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        os.chmod(self.pwfile, 0o600)

    def start(self, as_user):
        argv = [SERVER, "--config-file=%s" % os.path.join(self.dir, "config.xml")]
        if as_user:
            shutil.chown(self.dir, as_user)
            for root, dirs, files in os.walk(self.dir):
                for n in dirs + files:
                    shutil.chown(os.path.join(root, n), as_user)
            argv = ["runuser", "-u", as_user, "--"] + argv
        self.out = open(os.path.join(self.dir, "stdout.log"), "a")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=self.out, start_new_session=True, cwd=self.dir)

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if urllib.request.urlopen("http://%s:%d/ping" % (self.host, self.http),
                                          timeout=2).read().strip() == b"Ok.":
                    return True
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        return False

    def log_tail(self):
        out = []
        for n in ("stdout.log", "log/error.log"):
            try:
                with open(os.path.join(self.dir, n)) as f:
                    out.append(f.read()[-1500:])
            except OSError:
                pass
        return "\n".join(out)

    def _on_signal(self, sig, frame):
        for srv in OTHERS:
            srv.close()
        raise SystemExit(128 + sig)

    def close(self, keep_dir=False):
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        if p is not None:
            self.out.close()
        if keep_dir:
            return
        if self.proc is None and not os.environ.get("KEEP_TMP") and os.path.isdir(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, db):
        return "http://%s:%d/?database=%s" % (self.host, self.http, db)

    def q(self, sql, db="default", check=True):
        """One statement as `default`; the body text (TabSeparated)."""
        try:
            return urllib.request.urlopen(self.url(db), sql.encode(), timeout=60).read().decode()
        except urllib.error.HTTPError as e:
            if check:
                h.fail("clickhouse: %s\n-> %s" % (sql, e.read().decode()))
            return None

    def rows(self, sql, db):
        return [tuple(l.split("\t")) for l in self.q(sql, db).splitlines()]

    def script(self, text, db):
        text = "\n".join(l for l in text.splitlines() if not l.strip().startswith("--"))
        for st in text.split(";"):
            if st.strip():
                self.q(st, db)


SRV = None
NDB = 0


def start_server(**kw):
    """The test file's throwaway server as SRV, tools/chserver.py's
    ChServer in a folder of the suite's (kw its own: query_log, extra,
    ...), stopped at exit or on a signal (harness.register_server), and
    returned.  Without this build's ClickHouse driver, or when the server
    cannot start: skip() (exit 77; 1 with BACKFILLD_REQUIRE_CLICKHOUSE=1)."""
    global SRV
    if not os.path.exists(os.path.join(os.path.dirname(h.binaries()[0]), "backfilld-ch.so")):
        skip("this build has no ClickHouse driver (libcurl4-openssl-dev)")
    if h.TOOLS not in sys.path:
        sys.path.insert(0, h.TOOLS)
    from chserver import ChServer, ChServerError
    try:
        SRV = ChServer(prefix="server-", parent=h.suite_mkdtemp("ch"), own_parent=True, **kw)
    except ChServerError as e:
        skip(str(e))
    h.register_server(SRV)
    return SRV


def fresh_db(seed=True):
    """A new database, seeded with the lesson's warehouse."""
    global NDB
    NDB += 1
    db = "wh%d" % NDB
    SRV.q("CREATE DATABASE %s" % db)
    if seed:
        with open(os.path.join(CH_DIR, "sales.sql")) as f:
            SRV.script(f.read(), db)
    return db


def ch_config(db, jobs, settings="", wh_extra=""):
    return textwrap.dedent("""\
        state_db: state.db
        socket: backfilld.sock
        max_concurrency: 4
        %s
        warehouses:
          - name: sales
            clickhouse: %s
            user: etl
            password_file: %s
        %s
        jobs:
        """) % (settings, SRV.url(db), SRV.pwfile, textwrap.indent(wh_extra, "    ")) + \
        textwrap.indent(textwrap.dedent(jobs).strip("\n"), "  ") + "\n"


def example_jobs():
    """The jobs of config/clickhouse/example-clickhouse.yaml."""
    with open(os.path.join(CH_DIR, "example-clickhouse.yaml")) as f:
        text = f.read()
    return text[text.index("jobs:\n") + len("jobs:\n"):]


def stage_leftovers(db, settle=True, srv=None):
    """Rows left in any stage table of db.  settle: once the daemon has
    released them (a published stage partition is dropped on a worker
    after the run's record, docs/clickhouse.md "Exactly once"), with a
    guard of 30 s."""
    return _settled(db, "stage", settle, srv)


def marks_left(db, settle=True, srv=None):
    """Rows left in any table of the stage's marks of db (settle: as
    stage_leftovers)."""
    return _settled(db, "marks", settle, srv)


def _settled(db, kind, settle, srv):
    deadline = time.monotonic() + 30
    while True:
        out = _leftovers(db, kind, srv or SRV)
        if not settle or not out or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


def _leftovers(db, kind, srv=None):
    srv = srv or SRV
    out = {}
    for (name,) in srv.rows("SELECT name FROM system.tables WHERE database = currentDatabase()"
                            " AND name LIKE '\\\\_backfilld\\\\_%s\\\\_%%'" % kind, db):
        n = int(srv.q("SELECT count() FROM `%s`" % name, db))
        if n:
            out[name] = n
    return out


def fact_vs_raw(db, lo, hi):
    fact = SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM fct_daily_sales"
                    " WHERE dt BETWEEN '%s' AND '%s' ORDER BY dt, store_id" % (lo, hi), db)
    raw = SRV.rows("SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales"
                   " WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt, store_id ORDER BY dt, store_id"
                   % (lo, hi), db)
    return fact, raw


def maps(d):
    with open("/proc/%d/maps" % d.proc.pid) as f:
        return f.read()


def test_module_on_demand():
    """A daemon without a ClickHouse warehouse never maps the module."""
    d = h.Daemon(warehouses={"w": "CREATE TABLE t (dt TEXT);"}, clock=None, name="chnomod",
                 jobs="""
                 - name: j
                   warehouse: w
                   partition: day
                   sql: INSERT INTO t VALUES (:partition)
                 """)
    d.backfill("j", "2026-02-09", "2026-02-09")
    h.check("backfilld-ch.so" not in maps(d) and "libcurl" not in maps(d),
            "a daemon on SQLite alone mapped the ClickHouse module")
    d.stop()


def test_lesson():
    db = fresh_db()
    d = h.Daemon(config=ch_config(db, example_jobs()), clock=None, name="chlesson")
    weeks_before = dict(SRV.rows("SELECT week_start, revenue_cents FROM mart_weekly_sales", db))
    others_before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt < '2026-02-08' OR"
                             " dt > '2026-02-12' ORDER BY dt, store_id", db)
    fact, raw = fact_vs_raw(db, *h.WINDOW)
    h.check(fact != raw, "the seeded fact should be wrong in the deploy window")
    d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "refund bug")
    fact, raw = fact_vs_raw(db, *h.WINDOW)
    h.eq(fact, raw, "repaired fact vs raw for the deploy window")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt < '2026-02-08' OR dt > '2026-02-12'"
                  " ORDER BY dt, store_id", db), others_before, "days outside the window")
    runs = [r for r in d.runs() if r["state"] == "succeeded"]
    weeks = sorted(r["partition"] for r in runs if r["job"] == "mart_weekly_sales")
    h.eq(weeks, ["2026-02-02", "2026-02-09"], "weeks rebuilt")
    days = sorted(r["partition"] for r in runs if r["job"] == "fct_daily_sales")
    h.eq(days, h.days(*h.WINDOW), "days run")
    weeks_after = dict(SRV.rows("SELECT week_start, revenue_cents FROM mart_weekly_sales", db))
    for wk in ("2026-01-26", "2026-02-16"):
        h.eq(weeks_after[wk], weeks_before[wk], "week %s untouched" % wk)
    want = dict(SRV.rows("SELECT toMonday(dt), sum(amount_cents) FROM raw_sales"
                         " GROUP BY toMonday(dt)", db))
    for wk in ("2026-02-02", "2026-02-09"):
        h.check(weeks_after[wk] != weeks_before[wk], "week %s unchanged" % wk)
        h.eq(weeks_after[wk], want[wk], "week %s vs raw" % wk)
    h.eq(stage_leftovers(db), {}, "stage rows left after the backfill")
    h.check("backfilld-ch.so" in maps(d), "the ClickHouse module is not loaded")
    # the guardrails were measured: before from live, after from the stage
    req = [r for r in runs if r["job"] == "fct_daily_sales"][0]["request"]
    audit = d.json("audit", "--request", str(req))
    text = repr(audit)
    h.check("revenue" in text and "min_rows" in text and "reconciles_with_raw" in text,
            "audit lacks the guardrails: %s" % text[:2000])
    # a rerun changes nothing
    snap = SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db)
    wsnap = SRV.rows("SELECT * FROM mart_weekly_sales ORDER BY week_start", db)
    out = d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "again")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db), snap, "fact after a rerun")
    h.eq(SRV.rows("SELECT * FROM mart_weekly_sales ORDER BY week_start", db), wsnap, "weeks after a rerun")
    # early cut-off (docs/cutoff.md): the days came out of the rerun as
    # they were (live partition before, stage after), so their weeks
    # were not run
    again = int(out.split("request ")[1].split(":")[0])
    runs = d.json("runs", "--request", str(again))
    h.eq(sorted((r["partition"], r["state"]) for r in runs if r["job"] == "mart_weekly_sales"),
         [("2026-02-02", "skipped"), ("2026-02-09", "skipped")],
         "weeks of an identical rerun on ClickHouse: skipped")
    for p in d.json("audit", "--request", str(again))["partitions"]:
        if p["job"] == "fct_daily_sales":
            h.check(p["checksum_before"] and p["checksum_before"] == p["checksum_after"],
                    "an identical day's checksums on ClickHouse: %r" % p)
    # one more raw row on 2026-02-10: its week only
    SRV.q("INSERT INTO raw_sales SELECT * FROM raw_sales WHERE dt = '2026-02-10' LIMIT 1", db)
    out = d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1], "--reason", "one more sale")
    req = int(out.split("request ")[1].split(":")[0])
    runs = d.json("runs", "--request", str(req))
    h.eq(sorted((r["partition"], r["state"]) for r in runs if r["job"] == "mart_weekly_sales"),
         [("2026-02-02", "skipped"), ("2026-02-09", "succeeded")],
         "a changed day on ClickHouse rebuilds its week only")
    d.stop()


FAILING_CHECK = """
- name: fct
  warehouse: sales
  partition: day
  table: fct_daily_sales
  partition_column: dt
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
  checks:
    - name: never
      sql: SELECT count() = 0 FROM :stage WHERE dt = :partition
"""


def test_failing_check_publishes_nothing():
    db = fresh_db()
    before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db)
    d = h.Daemon(config=ch_config(db, FAILING_CHECK), clock=None, name="chcheck")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-09", "--wait")
    h.check(rc != 0, "a failing check should fail the backfill: %r" % out)
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.eq(r["state"], "failed", "run state")
    h.check("check never failed for 2026-02-09" in (r["error"] or ""), "error: %r" % r["error"])
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db),
         before, "live partition after a failed check")
    h.eq(stage_leftovers(db), {}, "stage rows left after a failed check")
    d.stop()
    # a check whose value is NULL fails, and says so
    jobs = FAILING_CHECK.replace("SELECT count() = 0 FROM :stage WHERE dt = :partition",
                                 "SELECT CAST(NULL AS Nullable(UInt8))")
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chnull")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-09", "--wait")
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.check(rc != 0 and "check never failed for 2026-02-09 (returned NULL)" in (r["error"] or ""),
            "error of a NULL check: %r" % r["error"])
    d.stop()


def test_empty_stage_refused():
    db = fresh_db()
    jobs = FAILING_CHECK.replace("WHERE dt = :partition GROUP BY", "WHERE dt = :partition AND store_id = 99 GROUP BY")
    jobs = jobs[:jobs.index("  checks:")]
    before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db)
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chempty")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-09", "--wait")
    h.check(rc != 0, "an empty stage should be refused")
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.check("stage partition of 2026-02-09 is empty" in (r["error"] or ""), "error: %r" % r["error"])
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db),
         before, "live partition after an empty stage")
    d.stop()
    # allow_empty: true publishes it, emptying the live partition
    d = h.Daemon(config=ch_config(db, jobs + "  allow_empty: true\n"), clock=None, name="chempty2")
    d.backfill("fct", "2026-02-09", "2026-02-09")
    h.eq(SRV.q("SELECT count() FROM fct_daily_sales WHERE dt = '2026-02-09'", db).strip(), "0",
         "rows after an allowed empty publish")
    d.stop()


def test_wrong_grain_refused():
    db = fresh_db()
    good = FAILING_CHECK[:FAILING_CHECK.index("  checks:")]
    # a Date key at the hour grain (at a week's it is accepted: the column
    # holding each week's first day, test_clickhouse_keys)
    bad = good.replace("partition: day", "partition: hour")
    # at start: exit 2, one line with the job's position
    d = h.Daemon(config=ch_config(db, bad), clock=None, name="chgrain", start=False)
    r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                       timeout=60, cwd=d.dir, env=d.env())
    e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2, "start on a table at another grain")
    h.check("backfilld.yaml:" in e and "partitioned by dt" in e and "toStartOfHour(dt)" in e,
            "error should give the position and the key to use: %r" % e)
    # at reload: refused, the running configuration kept
    d.write_config(ch_config(db, good).replace("{dir}", d.dir))
    d.start()
    d.write_config(ch_config(db, bad).replace("{dir}", d.dir))
    rc, out, err = d.ctl("reload")
    h.eq(rc, 2, "reload onto a table at another grain")
    h.check("toStartOfHour(dt)" in err, "reload error: %r" % err)
    d.backfill("fct", "2026-02-09", "2026-02-09")
    d.stop()


def test_hostile_input():
    db = fresh_db()
    # a job text whose literal never ends (a backslash escapes the quote
    # in ClickHouse): the substituted value would sit inside the string
    jobs = FAILING_CHECK[:FAILING_CHECK.index("  checks:")].replace(
        "WHERE dt = :partition GROUP BY",
        "WHERE dt = :partition AND store_id != 0 OR '\\' = :partition GROUP BY")
    SRV.q("SYSTEM FLUSH LOGS", check=False)
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chhostile")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-09", "--wait")
    h.check(rc != 0, "a job text leaving a literal open should be refused")
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.check("refused: a string that does not end" in (r["error"] or ""), "error: %r" % r["error"])
    h.eq(SRV.q("SELECT count() FROM `_backfilld_stage_fct_daily_sales` WHERE dt = '2026-02-09'",
               db).strip(), "0", "stage rows after a refused fill")
    d.stop()
    # a key that is no date never reaches the daemon's SQL: refused by the request
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chhostile2")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-09') OR 1=1 --", "--to", "2026-02-09")
    h.eq(rc, 2, "exit code of a hostile partition key")
    d.stop()
    # an exception after a 200 status fails the check
    jobs2 = FAILING_CHECK.replace(
        "SELECT count() = 0 FROM :stage WHERE dt = :partition",
        "SELECT throwIf(number = 3000000) FROM system.numbers LIMIT 5000000")
    d = h.Daemon(config=ch_config(db, jobs2), clock=None, name="chmid")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-10", "--to", "2026-02-10", "--wait")
    h.check(rc != 0, "an exception after 200 should fail the check")
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.check("Code: 395" in (r["error"] or "") and "after HTTP 200" in r["error"], "error: %r" % r["error"])
    d.stop()
    # a wrong password: ClickHouse's own text, one line
    bad = os.path.join(SRV.dir, "bad.password")
    with open(bad, "w") as f:
        f.write("nope\n")
    d = h.Daemon(config=ch_config(db, jobs).replace(SRV.pwfile, bad), clock=None, name="chpw")
    rc, out, err = d.ctl("backfill", "fct", "--from", "2026-02-10", "--to", "2026-02-10", "--wait")
    r = [x for x in d.runs() if x["job"] == "fct"][-1]
    h.check("Wrong password for user etl" in (r["error"] or "") and "nope" not in r["error"],
            "error: %r" % r["error"])
    d.stop()


def test_timeout_kills_query():
    db = fresh_db()
    jobs = """
    - name: slow
      warehouse: sales
      partition: day
      timeout: 2s
      table: fct_daily_sales
      partition_column: dt
      sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition AND sleepEachRow(1) = 0 GROUP BY dt, store_id SETTINGS max_block_size = 1
    """
    before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db)
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chtimeout")
    t0 = time.monotonic()
    rc, out, err = d.ctl("backfill", "slow", "--from", "2026-02-09", "--to", "2026-02-09", "--wait")
    took = time.monotonic() - t0
    h.check(rc != 0, "the slow run should time out")
    r = [x for x in d.runs() if x["job"] == "slow"][-1]
    h.check("timed out" in (r["error"] or ""), "error: %r" % r["error"])
    h.check(took < 20, "the timeout took %.1fs" % took)
    left = SRV.q("SELECT query_id FROM system.processes WHERE query_id LIKE 'backfilld-%'").strip()
    h.eq(left, "", "backfilld queries left on the server after a timeout")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db),
         before, "live partition after a timeout")
    d.stop()


def test_shutdown_grace_kills_query():
    db = fresh_db()
    jobs = """
    - name: slow
      warehouse: sales
      partition: day
      table: fct_daily_sales
      partition_column: dt
      sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt = :partition AND sleepEachRow(1) = 0 GROUP BY dt, store_id SETTINGS max_block_size = 1
    """
    before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db)
    d = h.Daemon(config=ch_config(db, jobs, "shutdown_grace: 1s"), clock=None, name="chgrace")
    d.ok("backfill", "slow", "--from", "2026-02-09", "--to", "2026-02-09")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if "INSERT INTO `_backfilld_stage_" in SRV.q(
                "SELECT query FROM system.processes WHERE query_id LIKE 'backfilld-%'"):
            break
        time.sleep(0.02)
    else:
        h.fail("the stage fill never showed in system.processes")
    d.stop()
    left = SRV.q("SELECT query_id FROM system.processes WHERE query_id LIKE 'backfilld-%'").strip()
    h.eq(left, "", "backfilld queries left on the server after the shutdown grace")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db),
         before, "live partition after a shutdown mid-fill")


def test_reader_never_sees_a_mix():
    db = fresh_db()
    d = h.Daemon(config=ch_config(db, example_jobs()), clock=None, name="chreader")
    sql = ("SELECT dt, store_id, sales, revenue_cents FROM fct_daily_sales WHERE dt BETWEEN"
           " '%s' AND '%s' ORDER BY dt, store_id" % h.WINDOW)
    old = {}
    for r in SRV.rows(sql, db):
        old.setdefault(r[0], []).append(r)
    new = {}
    for r in SRV.rows("SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt"
                      " BETWEEN '%s' AND '%s' GROUP BY dt, store_id ORDER BY dt, store_id"
                      % h.WINDOW, db):
        new.setdefault(r[0], []).append(r)
    seen = {"reads": 0, "bad": None}
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            got = {}
            for r in SRV.rows(sql, db):
                got.setdefault(r[0], []).append(r)
            for day in old:
                if got.get(day) not in (old[day], new[day]) and seen["bad"] is None:
                    seen["bad"] = (day, got.get(day))
            seen["reads"] += 1

    t = threading.Thread(target=reader)
    t.start()
    try:
        d.backfill("fct_daily_sales", h.WINDOW[0], h.WINDOW[1])
    finally:
        stop.set()
        t.join()
    h.check(seen["reads"] > 0, "the reader never read")
    h.eq(seen["bad"], None, "a read that was neither the old nor the new partition")
    h.eq(fact_vs_raw(db, *h.WINDOW)[0], fact_vs_raw(db, *h.WINDOW)[1], "fact after the backfill")
    d.stop()


def test_verify():
    db = fresh_db()
    jobs = FAILING_CHECK[:FAILING_CHECK.index("  checks:")]
    jobs += jobs.replace("name: fct", "name: noisy").replace(
        "sum(amount_cents) FROM", "sum(amount_cents) + rand() % 1000 FROM")
    before = SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db)
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chverify")
    rc, out, err = d.ctl("backfill", "noisy", "--from", "2026-02-09", "--to", "2026-02-09",
                         "--verify")
    e = h.one_line_error(rc, out, err, 2, "backfill --verify of a job whose rows change")
    h.check("content" in e and "noisy" in e, "the refusal does not say what changed: %r" % e)
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db), before,
         "live table after a refused proof")
    h.eq(d.runs(), [], "runs after a refused proof")
    h.eq(stage_leftovers(db), {}, "stage rows left by a proof")
    out = d.ok("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-10", "--verify",
               "--wait")
    h.check("idempotent" in out, "the proof's verdict is not shown:\n%s" % out)
    fact, raw = fact_vs_raw(db, "2026-02-09", "2026-02-10")
    h.eq(fact, raw, "the verified request ran")
    # ClickHouse has no transaction: the verdict says what was undone
    out = d.ok("verify", "fct", "2026-02-09")
    h.check("idempotent" in out and "rolled back" not in out and
            "the stage partition dropped, nothing published" in out,
            "verify's verdict on ClickHouse: %r" % out)
    d.stop()


BATCH = """
- name: fct
  warehouse: sales
  partition: day
  batch: true
  table: fct_daily_sales
  partition_column: dt
  sql: SELECT dt, store_id, count(), sum(amount_cents) FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY dt, store_id
  checks:
    - name: not_the_10th
      sql: SELECT count() > 0 AND :partition != toDate('2026-02-10') FROM :stage WHERE dt = :partition
"""


def test_batch():
    db = fresh_db()
    before = SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db)
    d = h.Daemon(config=ch_config(db, BATCH), clock=None, name="chbatch")
    # one partition's check fails: nothing of the batch is published
    rc, out, err = d.ctl("backfill", "fct", "--from", h.WINDOW[0], "--to", h.WINDOW[1], "--wait")
    h.check(rc != 0, "a batch with a failing check should fail")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db), before,
         "live table after a batch with a failing check")
    h.eq(stage_leftovers(db), {}, "stage rows left by a failed batch")
    d.stop()
    d = h.Daemon(config=ch_config(db, BATCH.replace(" AND :partition != toDate('2026-02-10')", "")),
                 clock=None, name="chbatch2")
    d.backfill("fct", h.WINDOW[0], h.WINDOW[1])
    fact, raw = fact_vs_raw(db, *h.WINDOW)
    h.eq(fact, raw, "fact vs raw after a batch")
    h.eq(sorted(r["partition"] for r in d.runs() if r["state"] == "succeeded"),
         h.days(*h.WINDOW), "partitions of the batch")
    h.eq(stage_leftovers(db), {}, "stage rows left by a batch")
    d.stop()


def test_batch_over_a_chunk():
    """A batch of 70 days, more than one publish statement holds (64
    REPLACEs a statement): every day published, the ones of the second
    statement too, each recorded once, no stage rows left."""
    db = fresh_db()
    lo, hi = "2025-01-01", "2025-03-11"
    SRV.q("INSERT INTO raw_sales SELECT toUInt32(100000 + number), toDate('%s') + intDiv(number, 3),"
          " 1 + number %% 3, toInt64(100 + number) FROM numbers(210)" % lo, db)
    jobs = BATCH.replace(" AND :partition != toDate('2026-02-10')", "")
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chbatch70")
    d.backfill("fct", lo, hi)
    fact, raw = fact_vs_raw(db, lo, hi)
    h.eq(len(raw), 210, "raw groups of the 70 days")
    h.eq(fact, raw, "fact vs raw after a batch of 70 days")
    h.eq(sorted(r["partition"] for r in d.runs() if r["state"] == "succeeded"),
         h.days(lo, hi), "partitions of the batch, each succeeded once")
    h.eq(stage_leftovers(db), {}, "stage rows left by a batch of 70 days")
    h.eq(marks_left(db), {}, "marks left by a batch of 70 days")
    d.stop()


BATCH_WEEKS = """
- name: mart_weekly_sales
  warehouse: sales
  partition: week
  upstream: [fct]
  batch: true
  table: mart_weekly_sales
  partition_column: week_start
  sql: SELECT toMonday(dt) AS week_start, sum(revenue_cents) FROM fct_daily_sales WHERE dt >= :partition_start AND dt < :partition_end GROUP BY week_start
"""


def test_batch_downstream_weeks():
    """The two weeks a batch of the deploy window's days feeds are one
    batch run of the batch: true mart: one start, one stage fill, a
    REPLACE per week; each week the sum of its days."""
    db = fresh_db()
    jobs = BATCH.replace(" AND :partition != toDate('2026-02-10')", "") + BATCH_WEEKS
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chbatchweeks")
    d.backfill("fct", h.WINDOW[0], h.WINDOW[1])
    weeks = sorted((r["partition"], r["state"]) for r in d.runs()
                   if r["job"] == "mart_weekly_sales")
    h.eq(weeks, [("2026-02-02", "succeeded"), ("2026-02-09", "succeeded")], "week runs")
    with open(d.log, errors="replace") as f:
        starts = [ln for ln in f if "job=mart_weekly_sales" in ln and " started" in ln]
    h.eq(len(starts), 1, "the two weeks should start as one run: %r" % starts)
    h.check("one batch of 2 partitions" in starts[0], "the weeks' run: %r" % starts[0])
    want = dict(SRV.rows("SELECT toMonday(dt), sum(revenue_cents) FROM fct_daily_sales"
                         " GROUP BY toMonday(dt)", db))
    got = dict(SRV.rows("SELECT week_start, revenue_cents FROM mart_weekly_sales", db))
    for wk in ("2026-02-02", "2026-02-09"):
        h.eq(got[wk], want[wk], "week %s vs its days" % wk)
    h.eq(stage_leftovers(db), {}, "stage rows left by the batch of weeks")
    d.stop()


def test_batch_chunks():
    """batch: 3 over 10 days: 4 runs of consecutive partitions (3, 3, 3, 1),
    each filled, audited and published on its own; a check failing for
    2026-02-08 publishes nothing of its chunk (2026-02-07..09: two of them
    still the buggy build's) and every other chunk."""
    db = fresh_db()
    lo, hi = "2026-02-01", "2026-02-10"
    jobs = BATCH.replace("batch: true", "batch: 3").replace("2026-02-10", "2026-02-08")
    before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt BETWEEN '2026-02-07' AND"
                      " '2026-02-09' ORDER BY dt, store_id", db)
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chchunks")
    rc, out, err = d.ctl("backfill", "fct", "--from", lo, "--to", hi, "--wait")
    h.eq(rc, 1, "a request one of whose chunks fails a check (%r %r)" % (out, err))
    h.check("7 succeeded, 3 failed" in out, "summary: %r" % out)
    runs = d.runs()
    starts = {}
    for r in runs:
        starts.setdefault(r["started_at"], []).append(r["partition"])
    h.eq(sorted(sorted(v) for v in starts.values()),
         [h.days("2026-02-01", "2026-02-03"), h.days("2026-02-04", "2026-02-06"),
          h.days("2026-02-07", "2026-02-09"), ["2026-02-10"]],
         "the runs (one start time each) and their partitions")
    h.eq(sorted(r["partition"] for r in runs if r["state"] == "failed"),
         h.days("2026-02-07", "2026-02-09"), "failed partitions: the chunk's")
    for a, b in (("2026-02-01", "2026-02-06"), ("2026-02-10", "2026-02-10")):
        fact, raw = fact_vs_raw(db, a, b)
        h.eq(fact, raw, "fact vs raw for %s..%s, the chunks that passed" % (a, b))
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt BETWEEN '2026-02-07' AND"
                  " '2026-02-09' ORDER BY dt, store_id", db), before,
         "live rows of the failed chunk")
    audit = {p["partition"]: p for p in
             d.json("audit", "--request", str(runs[0]["request"]))["partitions"]}
    h.eq(sorted(audit), h.days(lo, hi), "audited partitions")
    h.eq({c["name"]: c["passed"] for c in audit["2026-02-08"]["checks"]}.get("not_the_10th"),
         False, "the check of 2026-02-08: %r" % audit["2026-02-08"])
    h.eq(stage_leftovers(db), {}, "stage rows left by the chunks")
    d.stop()


def test_late_data():
    db = fresh_db()
    SRV.q("CREATE TABLE landing (dt Date, store_id UInt8, amount_cents Int64,"
          " loaded_at DateTime) ENGINE = MergeTree ORDER BY dt", db)
    jobs = FAILING_CHECK[:FAILING_CHECK.index("  checks:")] + (
        "  late_data:\n"
        "    sql: SELECT DISTINCT toString(dt) FROM landing WHERE loaded_at >= :since\n"
        "    every: 1s\n")
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chlate")

    def sensor():
        return d.status()["fct"].get("late_data") or {}

    deadline = time.monotonic() + 30
    while sensor().get("last_check") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    h.eq(sensor().get("error"), None, "the sensor's first check")
    # a late row for 2026-02-09 lands: the sensor rebuilds that day alone
    SRV.q("INSERT INTO raw_sales VALUES (9999, '2026-02-09', 1, 12345)", db)
    SRV.q("INSERT INTO landing VALUES ('2026-02-09', 1, 12345, now())", db)
    while not [r for r in d.runs() if r["state"] == "succeeded"] and time.monotonic() < deadline:
        time.sleep(0.1)
    runs = d.runs()
    h.eq(sorted({r["partition"] for r in runs}), ["2026-02-09"], "partitions the sensor rebuilt")
    fact, raw = fact_vs_raw(db, "2026-02-09", "2026-02-09")
    h.eq(fact, raw, "the late row in the fact")
    h.eq(sensor().get("error"), None, "the sensor's error")
    d.stop()


def test_hourly():
    db = fresh_db(seed=False)
    SRV.q("CREATE TABLE hits (ts DateTime, n UInt32) ENGINE = MergeTree ORDER BY ts", db)
    SRV.q("INSERT INTO hits SELECT toDateTime('2026-02-09 00:00:00') + number * 600, 1"
          " FROM numbers(36)", db)
    SRV.q("CREATE TABLE hourly (hour DateTime, hits UInt64) ENGINE = MergeTree"
          " PARTITION BY toStartOfHour(hour) ORDER BY hour", db)
    jobs = """
    - name: hourly
      warehouse: sales
      partition: hour
      table: hourly
      partition_column: hour
      sql: SELECT :partition, count() FROM hits WHERE ts >= :partition_start AND ts < :partition_end
    """
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chhourly")
    d.backfill("hourly", "2026-02-09T00", "2026-02-09T05")
    h.eq(SRV.rows("SELECT toString(hour), hits FROM hourly ORDER BY hour", db),
         [("2026-02-09 %02d:00:00" % i, "6") for i in range(6)], "hourly partitions")
    d.backfill("hourly", "2026-02-09T02", "2026-02-09T02")
    h.eq(SRV.q("SELECT count() FROM hourly", db).strip(), "6", "rows after a rerun of one hour")
    h.eq(stage_leftovers(db), {}, "stage rows left by hourly runs")
    d.stop()


def test_throttle():
    db = fresh_db()
    SRV.q("CREATE TABLE load (v UInt32) ENGINE = Memory", db)
    SRV.q("INSERT INTO load VALUES (50)", db)
    jobs = FAILING_CHECK[:FAILING_CHECK.index("  checks:")]
    wh = "throttle:\n  sql: SELECT max(v) FROM load\n  max: 10\n  every: 1s\n"
    before = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db)

    def throttle():
        ws = {w["name"]: w for w in d.json("status").get("warehouses", [])}
        return ws["sales"]["kind"], ws["sales"].get("throttle") or {}

    d = h.Daemon(config=ch_config(db, jobs, wh_extra=wh), clock=None, name="chthrottle")
    deadline = time.monotonic() + 30
    while throttle()[1].get("state") != "throttled" and time.monotonic() < deadline:
        time.sleep(0.1)
    kind, t = throttle()
    h.eq((kind, t.get("state"), t.get("value")), ("clickhouse", "throttled", 50),
         "throttle of the ClickHouse warehouse")
    req = d.enqueue("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-09")
    # held: the throttle is checked again (every 1s) before it is released
    polls = t.get("checks")
    while throttle()[1].get("checks") == polls and time.monotonic() < deadline:
        time.sleep(0.1)
    h.eq([r for r in d.runs() if r["job"] == "fct" and r["id"] is not None], [],
         "runs started on a throttled warehouse")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '2026-02-09' ORDER BY store_id", db),
         before, "live partition while throttled")
    SRV.q("TRUNCATE TABLE load", db)
    SRV.q("INSERT INTO load VALUES (0)", db)
    d.wait_request(req)
    h.eq([r["state"] for r in d.runs() if r["job"] == "fct"], ["succeeded"],
         "the run once the throttle is released")
    d.stop()


def test_kill9_mid_backfill():
    db = fresh_db()
    jobs = """
    - name: fct
      warehouse: sales
      partition: day
      concurrency: 2
      retries: 2
      retry_backoff: 1s
      table: fct_daily_sales
      partition_column: dt
      sql: SELECT dt, store_id, count(), sum(amount_cents) + sleepEachRow(0.05) FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id
    """
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chkill")
    d.ok("backfill", "fct", "--from", "2026-01-26", "--to", "2026-02-22")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [r for r in d.runs() if r["state"] == "succeeded"]
        if len(done) >= 3:
            break
        time.sleep(0.05)
    h.check(0 < len(done) < 28, "the kill should come mid-backfill (%d done)" % len(done))
    d.kill9()
    d.restart()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st = {}
        for r in d.runs():
            st[r["partition"]] = r["state"]
        if len(st) == 28 and all(v == "succeeded" for v in st.values()):
            break
        time.sleep(0.2)
    h.eq(sorted(p for p, v in st.items() if v == "succeeded"), h.days("2026-01-26", "2026-02-22"),
         "partitions succeeded after the restart")
    fact, raw = fact_vs_raw(db, "2026-01-26", "2026-02-22")
    h.eq(fact, raw, "fact vs raw after kill -9 and restart")
    h.eq(stage_leftovers(db), {}, "stage rows left after kill -9 and restart")
    h.eq(marks_left(db), {}, "marks left after kill -9 and restart")
    d.stop()


def test_reload_while_server_stopped():
    """The reload's check of the partition keys runs off the loop: with
    the server stopped (SIGSTOP: it accepts connections and never
    answers), `status` answers while the reload waits; a second reload
    meanwhile is refused with one line; once the server goes on, the
    reload ends and is applied."""
    db = fresh_db()
    good = FAILING_CHECK[:FAILING_CHECK.index("  checks:")]
    d = h.Daemon(config=ch_config(db, good), clock=None, name="chreload")
    d.write_config(ch_config(db, good.replace("name: fct", "name: fct2")).replace("{dir}", d.dir))
    argv = [d.backfillctl, "--socket", d.sock, "reload"]
    d.drain_notifications()
    os.killpg(SRV.proc.pid, signal.SIGSTOP)
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=d.env(), cwd=d.dir)
        d.wait_notification("RELOADING=1", 30, what="RELOADING=1 of the reload")
        rc, out, err = d.ctl("status", timeout=30)
        h.eq(rc, 0, "status while a reload waits for a stopped server (stderr %r)" % err)
        rc2, out2, err2 = d.ctl("reload", timeout=30)
        pending = p.poll() is None
    finally:
        os.killpg(SRV.proc.pid, signal.SIGCONT)
    out1, err1 = p.communicate(timeout=60)
    h.check(pending, "the reload ended before status answered (%r %r): it did not wait for the"
            " stopped server" % (out1, err1))
    h.eq(rc2, 1, "a second reload while one is checked (stdout %r)" % out2)
    h.check("a reload is in progress" in err2 and err2.count("\n") == 1,
            "second reload's error: %r" % err2)
    h.eq(p.returncode, 0, "the reload once the server goes on (stderr %r)" % err1)
    h.check("added" in out1 and "fct2" in out1, "reload report: %r" % out1)
    h.check("fct2" in [j["name"] for j in d.json("jobs")["jobs"]], "fct2 not running after the reload")
    d.stop()


def wait_stopped(d, what):
    """Until the daemon stops itself (SIGSTOP, a BACKFILLD_TEST_CH_STOP point)."""
    r = os.waitid(os.P_PID, d.proc.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
    h.check(r.si_code == os.CLD_STOPPED, "the daemon did not stop at %s: %r\n%s"
            % (what, r, d.log_tail()))


ONE_DAY = FAILING_CHECK[:FAILING_CHECK.index("  checks:")]


def test_crash_between_publish_and_record():
    """kill -9 right after a REPLACE, before the state store recorded the
    run: the restart publishes the same audited stage again (raw changed
    meanwhile, and the live rows are still the first build's), the run is
    then recorded once, and no stage or mark is left."""
    db = fresh_db()
    day = "2026-02-09"
    d = h.Daemon(config=ch_config(db, ONE_DAY), clock=None, name="chrepub",
                 env={"BACKFILLD_TEST_CH_STOP": "published"})
    req = d.enqueue("backfill", "fct", "--from", day, "--to", day)
    wait_stopped(d, "the publish")
    first = SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '%s' ORDER BY store_id" % day, db)
    fact, raw = fact_vs_raw(db, day, day)
    h.eq(first, raw, "the live partition after the first publish")
    h.eq(marks_left(db, settle=False), {"_backfilld_marks_fct_daily_sales": 1},
         "marks while unrecorded")
    d.kill9()
    # raw changes before the restart: a rebuild would publish other rows
    SRV.q("INSERT INTO raw_sales SELECT * FROM raw_sales WHERE dt = '%s' LIMIT 3" % day, db)
    h.check(fact_vs_raw(db, day, day)[1] != first, "raw should have changed")
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    d.restart()
    d.wait_request(req)
    runs = [r for r in d.runs() if r["job"] == "fct"]
    h.eq([r["state"] for r in runs if r["state"] == "succeeded"], ["succeeded"],
         "one succeeded run after the restart: %r" % runs)
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales WHERE dt = '%s' ORDER BY store_id" % day, db),
         first, "the live partition after the restart (the same stage published again)")
    h.eq(stage_leftovers(db), {}, "stage rows left")
    h.eq(marks_left(db), {}, "marks left")
    d.stop()


def test_batch_crash_between_publish_and_record():
    """A batch's marks are one part, a partition of the marks' table for
    the run; kill -9 right after the batch's first REPLACE, raw changed,
    restart: every partition of the batch ends as the first build audited
    it (the same stage published again), each succeeded once, and the
    marks go in one drop.  A marks' table of an earlier version
    (_backfilld_audited_TABLE) is dropped when the new one is created."""
    db = fresh_db()
    lo, hi = "2026-02-08", "2026-02-12"
    SRV.q("CREATE TABLE _backfilld_audited_fct_daily_sales (partition String, request Int64,"
          " run Int64) ENGINE = MergeTree PARTITION BY partition ORDER BY tuple()", db)
    SRV.q("INSERT INTO _backfilld_audited_fct_daily_sales VALUES ('2026-02-01', 99, 99)", db)
    jobs = BATCH.replace(" AND :partition != toDate('2026-02-10')", "")
    d = h.Daemon(config=ch_config(db, jobs), clock=None, name="chbatchrepub",
                 env={"BACKFILLD_TEST_CH_STOP": "published"})
    req = d.enqueue("backfill", "fct", "--from", lo, "--to", hi)
    wait_stopped(d, "the batch's first publish")
    h.eq(SRV.rows("SELECT count() FROM system.tables WHERE database = currentDatabase() AND"
                  " name = '_backfilld_audited_fct_daily_sales'", db), [("0",)],
         "the marks' table of an earlier version after the first run")
    h.eq(SRV.rows("SELECT count(), uniqExact(partition), uniqExact(run) FROM"
                  " _backfilld_marks_fct_daily_sales", db), [("5", "5", "1")],
         "the batch's marks: a row a partition, one run")
    h.eq(SRV.rows("SELECT count() FROM system.parts WHERE database = currentDatabase() AND"
                  " table = '_backfilld_marks_fct_daily_sales' AND active", db), [("1",)],
         "the batch's marks are one part")
    first = SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM _backfilld_stage_fct_daily_sales"
                     " ORDER BY dt, store_id", db)
    d.kill9()
    SRV.q("INSERT INTO raw_sales SELECT * FROM raw_sales WHERE dt = '2026-02-11' LIMIT 3", db)
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    d.restart()
    d.wait_request(req)
    runs = [r for r in d.runs() if r["job"] == "fct" and r["state"] == "succeeded"]
    h.eq(sorted(r["partition"] for r in runs), h.days(lo, hi), "one success a partition")
    h.eq(SRV.rows("SELECT dt, store_id, sales, revenue_cents FROM fct_daily_sales WHERE dt"
                  " BETWEEN '%s' AND '%s' ORDER BY dt, store_id" % (lo, hi), db), first,
         "the live partitions after the restart (the audited stage published again)")
    h.eq(stage_leftovers(db), {}, "stage rows left")
    h.eq(marks_left(db), {}, "marks left")
    d.stop()


def test_crash_between_record_and_release():
    """kill -9 after the state store recorded the run but before its stage
    was dropped: the restart drops the stage and its mark (no open
    request names them), runs nothing again, and changes no live row."""
    db = fresh_db()
    day = "2026-02-10"
    d = h.Daemon(config=ch_config(db, ONE_DAY), clock=None, name="chrelease",
                 env={"BACKFILLD_TEST_CH_STOP": "recorded"})
    d.enqueue("backfill", "fct", "--from", day, "--to", day)
    wait_stopped(d, "the release")
    h.check(stage_leftovers(db, settle=False) != {}, "the stage should be kept until released")
    live = SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db)
    d.kill9()
    d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
    d.restart()
    h.eq(stage_leftovers(db), {}, "stage rows left after the restart")
    h.eq(marks_left(db), {}, "marks left after the restart")
    h.eq([r["state"] for r in d.runs() if r["job"] == "fct"], ["succeeded"], "runs")
    h.eq(SRV.rows("SELECT * FROM fct_daily_sales ORDER BY dt, store_id", db), live, "live rows")
    d.stop()


# one day of the fact, on each shard's local tables
SHARD_JOB = ONE_DAY.replace("table: fct_daily_sales", "table: fct").replace(
    "FROM raw_sales", "FROM raw_local") + "  concurrency: 1\n  min_rows: 1\n"


def two_shards(hosts=("127.0.0.1", "127.0.0.1")):
    """Two servers of our own, the shards of cluster two_shards, each with
    raw_local and fct_local (stores 1-2 on shard 1, 3-4 on shard 2) and
    the Distributed table fct over them; the facts seeded wrong.  On two
    loopback addresses (hosts), the servers share one HTTP port.  Ports
    taken meanwhile by another test's server: new ones, five times."""
    for attempt in range(5):
        try:
            return _two_shards(hosts)
        except PortInUse as e:
            last = str(e)
    skip("clickhouse-server did not start, its ports taken five times:\n%s" % last)


def _two_shards(hosts):
    http = free_port()
    ports = [(free_port() if hosts[0] == hosts[1] else http, free_port(), free_port())
             for _ in range(2)]
    xml = "<remote_servers><two_shards>%s</two_shards></remote_servers>" % "".join(
        "<shard><replica><host>%s</host><port>%d</port></replica></shard>" % (hst, p[1])
        for hst, p in zip(hosts, ports))
    srvs = []
    try:
        for hst, p in zip(hosts, ports):
            srvs.append(Server(ports=p, extra=xml, host=hst))
    except PortInUse:
        for srv in srvs:
            srv.close()
        raise
    for k, srv in enumerate(srvs):
        srv.q("CREATE DATABASE sh")
        srv.q("CREATE TABLE raw_local (dt Date, store_id UInt32, amount_cents Int64)"
              " ENGINE = MergeTree PARTITION BY dt ORDER BY store_id", "sh")
        srv.q("CREATE TABLE fct_local (dt Date, store_id UInt32, sales UInt64, revenue_cents Int64)"
              " ENGINE = MergeTree PARTITION BY dt ORDER BY (dt, store_id)", "sh")
        srv.q("CREATE TABLE fct AS fct_local ENGINE = Distributed(two_shards, sh, fct_local, store_id)",
              "sh")
        for day in ("2026-02-09", "2026-02-10"):
            for store in (2 * k + 1, 2 * k + 2):
                srv.q("INSERT INTO raw_local SELECT toDate('%s'), %d, number * 10 + %d FROM numbers(%d)"
                      % (day, store, store, 5 + store), "sh")
                srv.q("INSERT INTO fct_local VALUES ('%s', %d, 1, 1)" % (day, store), "sh")
    return srvs


def shard_config(srvs, listed):
    """The daemon's configuration for SHARD_JOB on the two shards (listed:
    with shards:, else found in system.clusters)."""
    shards = "\n    shards: [%s]" % ", ".join(srv.url("sh") for srv in srvs) if listed else ""
    return textwrap.dedent("""\
        state_db: state.db
        socket: backfilld.sock
        warehouses:
          - name: sales
            clickhouse: %s
            user: etl
            password_file: %s
            cluster: two_shards%s
        jobs:
        """) % (srvs[0].url("sh"), srvs[0].pwfile, shards) + \
        textwrap.indent(textwrap.dedent(SHARD_JOB).strip("\n"), "  ") + "\n"


def shard_fact(srv):
    return srv.rows("SELECT dt, store_id, sales, revenue_cents FROM fct_local ORDER BY dt, store_id", "sh")


def shard_raw(srv):
    return srv.rows("SELECT dt, store_id, count(), sum(amount_cents) FROM raw_local"
                    " GROUP BY dt, store_id ORDER BY dt, store_id", "sh")


def open_fifo_to_write(path, timeout=120):
    """Open FIFO to write: returns once the daemon opens it to read (its
    BACKFILLD_TEST_CH_PAUSE point reached); None after timeout."""
    got = []
    t = threading.Thread(target=lambda: got.append(os.open(path, os.O_WRONLY)), daemon=True)
    t.start()
    t.join(timeout)
    return got[0] if got else None


def release_fifo(path, fd):
    """Let the held run go on (also when the test failed meanwhile)."""
    if fd is None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return
    os.write(fd, b"x")
    os.close(fd)


def test_shards_kill9_between_publishes():
    """cluster: with a Distributed table over two servers: every shard's
    stage is built and audited, then published shard by shard, each
    shard's publish recorded in the state store before the next one's.
    The daemon is stopped right after shard 1's publish (a test-only
    hook): the Distributed table then shows shard 1's new rows beside
    shard 2's old ones, the store has shard 1's publish and not shard 2's,
    and the run is not succeeded.  kill -9 and a restart: the run queued
    again skips shard 1 (a row added to shard 1's live partition meanwhile
    stays: it is not published again) and, held before shard 2 (another
    hook), runs, status and audit say partially published, shard 1 of 2;
    then both shards end with the new rows, each partition succeeded once
    with both shards recorded, no stage or mark left on either shard."""
    srvs = two_shards()
    fd = None
    fifo = None
    try:
        d = h.Daemon(config=shard_config(srvs, listed=True), clock=None, name="chshards",
                     env={"BACKFILLD_TEST_CH_STOP": "shard"})
        before = [shard_fact(srv) for srv in srvs]
        req = d.enqueue("backfill", "fct", "--from", "2026-02-09", "--to", "2026-02-10")
        wait_stopped(d, "shard 1's publish")
        day = [r for r in shard_fact(srvs[0]) if r[0] == "2026-02-09"]
        h.eq(day, [r for r in shard_raw(srvs[0]) if r[0] == "2026-02-09"],
             "shard 1 published 2026-02-09")
        h.eq(shard_fact(srvs[1]), before[1], "shard 2 not published yet")
        h.check(marks_left("sh", settle=False, srv=srvs[1]) != {}, "shard 2's stage is marked")
        h.eq(d.state_rows("SELECT state FROM runs WHERE job = 'fct' AND partition_key ="
                          " '2026-02-09'"), [("running",)],
             "the state store while one shard has published (not succeeded)")
        h.eq(d.state_rows("SELECT request, shard, nshards FROM shard_publishes WHERE job = 'fct'"
                          " AND partition_key = '2026-02-09'"), [(req, 1, 2)],
             "the state store's record of the shards' publishes: shard 1 of 2")
        d.kill9()
        # a row only shard 1's live partition has: a publish of shard 1
        # again (from its stage) would drop it
        srvs[0].q("INSERT INTO fct_local VALUES (toDate('2026-02-09'), 99, 1, 1)", "sh")
        fifo = os.path.join(d.dir, "pause.fifo")
        os.mkfifo(fifo)
        d.extra_env.pop("BACKFILLD_TEST_CH_STOP")
        d.extra_env["BACKFILLD_TEST_CH_PAUSE"] = fifo
        d.restart()
        fd = open_fifo_to_write(fifo)
        h.check(fd is not None, "the run queued again was not held before shard 2:\n%s"
                % d.log_tail())
        held = [r for r in d.runs() if r["partition"] == "2026-02-09"]
        h.eq([(r["state"], r["shards"]) for r in held if r["state"] == "running"],
             [("running", {"published": 1, "of": 2, "shards": [1], "partial": True})],
             "runs --json while shard 1 of 2 has published")
        h.check(all(r["state"] != "succeeded" for r in held), "succeeded while partial: %r" % held)
        _, text, _ = d.ctl("runs", "--job", "fct")
        h.check("partially published: shard 1 of 2" in text, "runs' table: %r" % text)
        st = d.json("status")
        h.eq([(p["request"], p["partition"], p["shards"]["shards"])
              for p in st["partially_published"]], [(req, "2026-02-09", [1])],
             "status --json's partially_published")
        _, text, _ = d.ctl("status")
        h.check("fct 2026-02-09 (request %d): partially published: shard 1 of 2" % req in text,
                "status: %r" % text)
        au = [p for p in d.json("audit", "--request", str(req))["partitions"]
              if p["partition"] == "2026-02-09"]
        h.eq([(p["passed"], p["shards"]["partial"]) for p in au], [(False, True)],
             "audit while partial")
        _, text, _ = d.ctl("audit", "--request", str(req))
        h.check("FAIL (partially published: shard 1 of 2)" in text, "audit: %r" % text)
        release_fifo(fifo, fd)
        fd = None
        d.wait_request(req)
        h.check(any("shards recorded published already" in line for line in
                    d.log_tail(400).splitlines()), "no skip in the log:\n%s" % d.log_tail())
        extra = [tuple(type(v)(w) for v, w in zip(day[0], ("2026-02-09", 99, 1, 1)))]
        h.eq(shard_fact(srvs[0]), sorted(shard_raw(srvs[0]) + extra,
                                         key=lambda r: (str(r[0]), int(r[1]))),
             "shard 1 after the restart: not published again (its extra row stays)")
        h.eq(shard_fact(srvs[1]), shard_raw(srvs[1]), "shard 2's facts after the restart")
        for k, srv in enumerate(srvs):
            h.eq(stage_leftovers("sh", srv=srv), {}, "stage rows left on shard %d" % (k + 1))
            h.eq(marks_left("sh", srv=srv), {}, "marks left on shard %d" % (k + 1))
        runs = d.runs()
        ok = sorted(r["partition"] for r in runs if r["job"] == "fct" and
                    r["state"] == "succeeded")
        h.eq(ok, ["2026-02-09", "2026-02-10"], "each partition succeeded once")
        h.eq([r["shards"] for r in runs if r["state"] == "succeeded"],
             [{"published": 2, "of": 2, "shards": [1, 2], "partial": False}] * 2,
             "runs --json: every shard published")
        h.eq(d.json("status")["partially_published"], [], "status once every shard published")
        h.eq(d.state_rows("SELECT shard FROM shard_publishes WHERE request = ? AND"
                          " partition_key = '2026-02-09' ORDER BY shard", (req,)), [(1,), (2,)],
             "the store's record after the restart")
        d.stop()
    finally:
        if fifo is not None:
            release_fifo(fifo, fd)
        for srv in srvs:
            srv.close()


def test_shards_from_system_clusters():
    """cluster: without shards: the shards are system.clusters' hosts on
    the configured URL's port (two servers on 127.0.0.1 and 127.0.0.2,
    one HTTP port): a backfill publishes on both.  Without cluster: the
    Distributed target is refused at start; --verify on it is refused."""
    srvs = two_shards(hosts=("127.0.0.1", "127.0.0.2"))
    try:
        # without cluster: a Distributed target is refused at start: a
        # stage created AS it would write into the live shards
        bad = shard_config(srvs, listed=False).replace("    cluster: two_shards\n", "")
        d = h.Daemon(config=bad, clock=None, name="chnocluster", start=False)
        r = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True, text=True,
                           timeout=60, cwd=d.dir, env=d.env())
        e = h.one_line_error(r.returncode, r.stdout, r.stderr, 2,
                             "start with a Distributed table and no cluster:")
        h.check("backfilld.yaml:" in e and "is a Distributed table" in e and "cluster:" in e,
                "error: %r" % e)
        d = h.Daemon(config=shard_config(srvs, listed=False), clock=None, name="chclusters")
        d.backfill("fct", "2026-02-09", "2026-02-10")
        rc, out, err = d.ctl("verify", "fct", "2026-02-09")
        h.check(rc == 2 and "Distributed" in err, "verify on a Distributed table: %r %r" % (out, err))
        for k, srv in enumerate(srvs):
            h.eq(shard_fact(srv), shard_raw(srv), "shard %d's facts" % (k + 1))
            h.eq(stage_leftovers("sh", srv=srv), {}, "stage rows left on shard %d" % (k + 1))
        d.stop()
    finally:
        for srv in srvs:
            srv.close()


def test_check_config_shows_bound():
    # seeded: --check-config reads the partition keys on the server
    db = fresh_db()
    d = h.Daemon(config=ch_config(db, example_jobs()), clock=None, name="chcheckcfg", start=False)
    r = subprocess.run([d.backfilld, "--check-config", "--config", d.conf], capture_output=True,
                       text=True, timeout=60, cwd=d.dir, env=d.env())
    h.eq(r.returncode, 0, "--check-config exit (stderr %r)" % r.stderr)
    for line in ("job fct_daily_sales sql line 2: :partition -> toDate('YYYY-MM-DD')",
                 "job fct_daily_sales check reconciles_with_raw line 1: :stage ->"
                 " `_backfilld_stage_fct_daily_sales`",
                 "job mart_weekly_sales sql line 2: :partition_end -> toDate('YYYY-MM-DD')"):
        h.check(line in r.stdout, "--check-config lacks %r:\n%s" % (line, r.stdout))


def main():
    global SRV
    tests = [test_module_on_demand, test_lesson, test_failing_check_publishes_nothing,
             test_empty_stage_refused, test_wrong_grain_refused, test_hostile_input,
             test_check_config_shows_bound, test_timeout_kills_query,
             test_shutdown_grace_kills_query, test_reader_never_sees_a_mix, test_verify,
             test_batch, test_batch_over_a_chunk, test_batch_downstream_weeks, test_batch_chunks, test_late_data, test_hourly, test_throttle, test_kill9_mid_backfill,
             test_reload_while_server_stopped, test_crash_between_publish_and_record,
             test_batch_crash_between_publish_and_record,
             test_crash_between_record_and_release, test_shards_kill9_between_publishes,
             test_shards_from_system_clusters]
    # BACKFILLD_TEST_ONLY=name,name: those alone (while working on them)
    only = os.environ.get("BACKFILLD_TEST_ONLY")
    if only:
        tests = [t for t in tests if t.__name__ in only.split(",")]
    SRV = Server()
    h.main(tests)

if __name__ == "__main__":
    main()
