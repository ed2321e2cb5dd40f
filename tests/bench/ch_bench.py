#!/usr/bin/env python3
"""ch_bench.py - backfilld against what users do by hand, on ClickHouse.

    tests/bench/ch_bench.py [--quick | --smoke] [--runs N] [--windows 30,90] [--build DIR]

Starts a throwaway clickhouse-server (tools/chserver.py: its own folder,
127.0.0.1, free ports), generates the lesson's sales warehouse in it with
the server's own numbers() (365 days x 27,000 rows a day = 9,855,000 rows
of raw_sales, 100 stores, about 3 % refunds, deterministic: intHash32 of
the row number; about 10 s), with fct_daily_sales (PARTITION BY dt) and
mart_weekly_sales (PARTITION BY toMonday(week_start)) as the buggy job
left them (refunds excluded on every day), and measures, alternating the
methods and repeating each N times (default 3), a per-date backfill of 30
and of 90 days from Wednesday 2025-03-05 (fact plus the affected weeks):

  hand loop   ch_hand_loop.sh: per date, one clickhouse-client
              --multiquery: ALTER TABLE ... DROP PARTITION of the day, then
              its INSERT ... SELECT; then the same per week (not atomic)
  set drop    ch_set_drop.sh: one clickhouse-client --multiquery: one ALTER
              dropping every day of the range, then ONE INSERT ... SELECT
              of the range; the same for the weeks (not atomic: the range
              is empty in between)
  set-based   ch_set_based.sh: the atomic set-based form, one
              clickhouse-client --multiquery: ONE INSERT ... SELECT of the
              whole range into a stage table, one REPLACE PARTITION per
              date; the same for the weeks
  backfilld c the daemon, write-audit-publish per partition, both jobs'
              concurrency c = 1 and 4 (max_concurrency 4, max_connections 4),
              backfillctl backfill ... --wait, end to end (start not timed)
  batch       the daemon with batch: true (one stage fill per request, a
              REPLACE PARTITION per partition), both jobs' concurrency 1:
              the fill is one INSERT ... SELECT, as the script's
  batch4      the same at concurrency 4: the batch holds 4 slots and fills
              its stage by 4 INSERT ... SELECT at once, each over a quarter
              of the days (18.16 writes an INSERT's parts, one a day, one after
              another)

Before every measurement the fact and the mart are restored from pristine
copies, stage tables dropped and merges awaited, outside the timing.
After it the result is checked: the fact and the mart must be identical
across methods (integer cents, an order-independent checksum), the rebuilt
days must equal raw_sales, each affected week must equal the sum of its
days, nothing else may change, and no stage table may hold rows; for
backfilld the state store must hold one succeeded run per day and per
week.

The table gives ratios of medians and paired ratios (the median over
rounds of the ratio within a round), then the targets (issue 44), as
paired ratios against the atomic set-based script: a run per partition
<= 1.25 x at concurrency 4 and <= 2 x at concurrency 1, batch: true <=
1.0 x (at concurrency 1 and 4), and every form of backfilld faster than
the hand loop.  The
mutation loop (ch_mutation_loop.sh: per date an ALTER TABLE ... DELETE
mutation, waited for, then the INSERT; no ClickHouse user writes it) is
a footnote: --methods mutation,... adds it.  --old DIR adds
another build's daemon (e.g. an older commit's) as old1, old4, oldbatch;
--nice N runs everything at niceness N; --profile, instead of timing,
runs each method once with the server's query_log and prints the
statements grouped, with their counts and server time.

--quick: one run of each, the 30-day window only.  --smoke: a tiny
warehouse (40 days x 300 rows), windows of 3 and 10 days, one run, for the
test suite: it checks the results and makes no claim about the times.

Exit codes: 0 done (targets missed are reported, not failures), 1 a wrong
result or a misbehaving daemon, 2 bad usage or a missing tool, 77 no
ClickHouse here (the message says why; 1 instead when
BACKFILLD_REQUIRE_CLICKHOUSE=1, as in CI).  KEEP_TMP=1 keeps the server's
folder after a failure.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from run import (BenchError, WindowCase, git_describe, indent, loadavg,  # noqa: E402
                 median, window_args)
from chserver import CLIENT, ChQueryError, ChServer, ChServerError  # noqa: E402

SKIP = 77
DB = "sales"

SCRIPT = {"hand": "ch_hand_loop.sh", "setdrop": "ch_set_drop.sh", "set": "ch_set_based.sh",
          "mutation": "ch_mutation_loop.sh"}
LABEL = {"hand": "hand loop (DROP+INSERT a day)", "setdrop": "set drop+INSERT (not atomic)",
         "set": "set-based atomic (stage, REPLACEs)",
         "mutation": "mutation loop (footnote)",
         "bfd1": "backfilld, concurrency 1", "bfd4": "backfilld, concurrency 4",
         "batch": "backfilld, batch: true", "batch4": "backfilld, batch: true, conc. 4",
         "old1": "--old build, concurrency 1",
         "old4": "--old build, concurrency 4", "oldbatch": "--old build, batch: true"}
METHODS = ["hand", "setdrop", "set", "bfd1", "bfd4", "batch", "batch4"]
EXTRA = ["mutation"]   # only when named in --methods
OLD = {"old1": "bfd1", "old4": "bfd4", "oldbatch": "batch"}   # with --old DIR

# the jobs' SQL: config/clickhouse/example-clickhouse.yaml's, without its
# checks and guardrails (the scripts have none either)
FACT_SQL = """\
SELECT dt, store_id, count(), sum(amount_cents)
FROM raw_sales WHERE dt = :partition GROUP BY dt, store_id"""
WEEK_SQL = """\
SELECT :partition, sum(revenue_cents) FROM fct_daily_sales
WHERE dt >= :partition_start AND dt < :partition_end"""
# batch: true: one SELECT over the request's interval
FACT_BATCH_SQL = """\
SELECT dt, store_id, count(), sum(amount_cents)
FROM raw_sales WHERE dt >= :partition_start AND dt < :partition_end
GROUP BY dt, store_id"""
WEEK_BATCH_SQL = """\
SELECT toMonday(dt) AS week_start, sum(revenue_cents) FROM fct_daily_sales
WHERE dt >= :partition_start AND dt < :partition_end GROUP BY week_start"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def skip(reason):
    """Exit 77 (meson: skipped); under BACKFILLD_REQUIRE_CLICKHOUSE=1 (CI) exit 1."""
    if os.environ.get("BACKFILLD_REQUIRE_CLICKHOUSE") == "1":
        print("ch_bench.py: FAIL: ClickHouse is required (BACKFILLD_REQUIRE_CLICKHOUSE=1): %s"
              % reason, flush=True)
        raise SystemExit(1)
    print("ch_bench.py: SKIP: %s" % reason, flush=True)
    raise SystemExit(SKIP)


# ------------------------------------------------------------------ the warehouse

SCHEMA = """
CREATE TABLE raw_sales (
    sale_id      UInt32,
    dt           Date,
    store_id     UInt8,
    amount_cents Int64
) ENGINE = MergeTree PARTITION BY toYYYYMM(dt) ORDER BY (dt, store_id, sale_id);
CREATE TABLE fct_daily_sales (
    dt Date, store_id UInt8, sales UInt64, revenue_cents Int64
) ENGINE = MergeTree PARTITION BY dt ORDER BY (dt, store_id);
CREATE TABLE mart_weekly_sales (
    week_start Date, revenue_cents Int64
) ENGINE = MergeTree PARTITION BY toMonday(week_start) ORDER BY week_start;
CREATE TABLE fct_pristine AS fct_daily_sales;
CREATE TABLE mart_pristine AS mart_weekly_sales;
"""

# Row number n: day n / rows_per_day, store 1 + h(n) % stores, a refund when
# h(n + 7) % 100 < 3 (3 %), amounts 5.00 .. 254.99, refunds 1.00 .. 50.99.
GEN_SQL = """
INSERT INTO raw_sales
SELECT toUInt32(number), toDate('%(start)s') + intDiv(number, %(rpd)d),
       1 + intHash32(number) %% %(stores)d,
       if(intHash32(number + 7) %% 100 < 3, -toInt64(100 + intHash32(number + 3) %% 5000),
          toInt64(500 + intHash32(number + 3) %% 25000))
FROM numbers(%(n)d)
"""

BUGGY_SQL = """
INSERT INTO fct_pristine
SELECT dt, store_id, countIf(amount_cents > 0), sumIf(amount_cents, amount_cents > 0)
FROM raw_sales GROUP BY dt, store_id;
INSERT INTO mart_pristine
SELECT toMonday(dt), sum(revenue_cents) FROM fct_pristine GROUP BY toMonday(dt);
"""

RESET_SQL = """
TRUNCATE TABLE fct_daily_sales;
TRUNCATE TABLE mart_weekly_sales;
INSERT INTO fct_daily_sales SELECT * FROM fct_pristine;
INSERT INTO mart_weekly_sales SELECT * FROM mart_pristine;
DROP TABLE IF EXISTS _backfilld_stage_fct_daily_sales;
DROP TABLE IF EXISTS _backfilld_stage_mart_weekly_sales;
DROP TABLE IF EXISTS bench_stage_fct;
DROP TABLE IF EXISTS bench_stage_mart;
"""


def generate(s, args):
    s.q("CREATE DATABASE %s" % DB)
    s.script(SCHEMA, DB)
    s.q(GEN_SQL % {"start": args.year_start, "rpd": args.rows_per_day,
                   "stores": args.stores, "n": args.days * args.rows_per_day}, DB)
    s.script(BUGGY_SQL, DB)
    [(rows, refunds, stores, days)] = s.rows(
        "SELECT count(), countIf(amount_cents < 0), uniqExact(store_id), uniqExact(dt)"
        " FROM raw_sales", DB)
    [(groups,)] = s.rows("SELECT count() FROM fct_pristine", DB)
    [(size,)] = s.rows("SELECT formatReadableSize(sum(bytes)) FROM system.parts"
                       " WHERE database = '%s' AND active" % DB)
    return {"rows": int(rows), "refunds_pct": round(100.0 * int(refunds) / int(rows), 2),
            "stores": int(stores), "days": int(days), "fact_rows": int(groups), "size": size}


# The parts a measurement replaced or truncated are removed from disk a
# second later, not after the default 8 minutes, and settle() waits for
# them: otherwise every round leaves the next one more inactive parts to
# step over, and later rounds slow down for every method alike.
MERGE_TREE_XML = ("<merge_tree><old_parts_lifetime>1</old_parts_lifetime>"
                  "<cleanup_delay_period>1</cleanup_delay_period></merge_tree>")


def settle(s):
    """No merge or mutation in flight and no inactive part left on disk
    (the server has no event for it: poll)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        [(m, u, p)] = s.rows("SELECT (SELECT count() FROM system.merges), (SELECT count() FROM"
                             " system.mutations WHERE NOT is_done), (SELECT count() FROM"
                             " system.parts WHERE NOT active)")
        if m == "0" and u == "0" and p == "0":
            return
        time.sleep(0.05)
    raise BenchError("merges, mutations or inactive parts still there after 300 s")


def digest(s, fact="fct_daily_sales", mart="mart_weekly_sales"):
    [(f,)] = s.rows("SELECT concat(toString(count()), ':', toString(sum(cityHash64(*))))"
                    " FROM %s" % fact, DB)
    [(m,)] = s.rows("SELECT concat(toString(count()), ':', toString(sum(cityHash64(*))))"
                    " FROM %s" % mart, DB)
    return f + "/" + m


def check_truth(s, case, what):
    """The rebuilt days equal raw_sales (refunds included), the affected
    weeks equal their days, nothing else moved, no stage holds rows."""
    p = {"f": case.first, "l": case.last,
         "weeks": ",".join("toDate('%s')" % w for w in case.weeks)}
    h = "concat(toString(count()), ':', toString(sum(cityHash64(dt, store_id, c, r))))"
    [(want,)] = s.rows("SELECT %s FROM (SELECT dt, store_id, count() AS c, sum(amount_cents)"
                       " AS r FROM raw_sales WHERE dt BETWEEN '%s' AND '%s' GROUP BY dt,"
                       " store_id)" % (h, p["f"], p["l"]), DB)
    [(got,)] = s.rows("SELECT %s FROM (SELECT dt, store_id, sales AS c, revenue_cents AS r"
                      " FROM fct_daily_sales WHERE dt BETWEEN '%s' AND '%s')"
                      % (h, p["f"], p["l"]), DB)
    if want != got or want.startswith("0:"):
        raise BenchError("%s: fct_daily_sales %s..%s does not match raw_sales (%s, want %s)"
                         % (what, case.first, case.last, got, want))
    [(nweeks, bad)] = s.rows("""
SELECT count(), countIf(m.revenue_cents != f.r) FROM
  (SELECT week_start, revenue_cents FROM mart_weekly_sales WHERE week_start IN (%(weeks)s)) m
ANY LEFT JOIN
  (SELECT toMonday(dt) AS week_start, sum(revenue_cents) AS r FROM fct_daily_sales
   GROUP BY week_start) f USING (week_start)""" % p, DB)
    if int(nweeks) != len(case.weeks) or bad != "0":
        raise BenchError("%s: mart_weekly_sales: %s of the %d affected weeks present, %s of "
                         "them differ from the sum of their days"
                         % (what, nweeks, len(case.weeks), bad))
    outside = ("SELECT concat(toString(count()), ':', toString(sum(cityHash64(*)))) FROM %s"
               " WHERE %s")
    for live, pristine, where in (
            ("fct_daily_sales", "fct_pristine", "NOT (dt BETWEEN '%(f)s' AND '%(l)s')" % p),
            ("mart_weekly_sales", "mart_pristine", "NOT (week_start IN (%(weeks)s))" % p)):
        if s.rows(outside % (live, where), DB) != s.rows(outside % (pristine, where), DB):
            raise BenchError("%s: %s changed outside %s..%s" % (what, live, case.first,
                                                                case.last))
    left = stage_rows(s)
    if left:
        raise BenchError("%s: stage tables hold rows afterwards: %r" % (what, left))


def stage_rows(s):
    out = {}
    for (name,) in s.rows("SELECT name FROM system.tables WHERE database = '%s' AND"
                          " name LIKE '\\\\_backfilld\\\\_stage\\\\_%%'" % DB):
        n = int(s.q("SELECT count() FROM `%s`" % name, DB))
        if n:
            out[name] = n
    return out


# ------------------------------------------------------------------ measurements

def daemon_config(s, method):
    method = OLD.get(method, method)
    batch = method in ("batch", "batch4")
    conc = 4 if method in ("bfd4", "batch4") else 1
    fact, week = (FACT_BATCH_SQL, WEEK_BATCH_SQL) if batch else (FACT_SQL, WEEK_SQL)
    b = "    batch: true\n" if batch else ""
    return ("state_db: state.db\nsocket: backfilld.sock\n"
            "max_concurrency: 4\nmax_backfill: 100000\n"
            "warehouses:\n  - name: sales\n    clickhouse: %s\n    user: etl\n"
            "    password_file: %s\n    max_connections: 4\n"
            "jobs:\n"
            "  - name: fct_daily_sales\n    warehouse: sales\n    partition: day\n"
            "    catchup: false\n    concurrency: %d\n    retries: 0\n    max_backfill: 1000\n"
            "    table: fct_daily_sales\n    partition_column: dt\n%s"
            "    sql: |\n%s\n"
            "  - name: mart_weekly_sales\n    warehouse: sales\n    partition: week\n"
            "    upstream: [fct_daily_sales]\n    concurrency: %d\n    retries: 0\n"
            "    table: mart_weekly_sales\n    partition_column: week_start\n%s"
            "    sql: |\n%s\n"
            % (s.url(DB), s.pwfile, conc, b, indent(fact, 6), conc, b, indent(week, 6)))


def client_env(s, work):
    """CH_CLIENT_CONFIG for the scripts: host, native port, etl and its password."""
    path = os.path.join(work, "client.xml")
    with open(path, "w") as f:
        f.write("<config><host>127.0.0.1</host><port>%d</port><user>etl</user>"
                "<password>%s</password><database>%s</database></config>\n"
                % (s.tcp, s.password, DB))
    os.chmod(path, 0o600)
    e = dict(os.environ)
    e["CH_CLIENT_CONFIG"] = path
    return e


def run_daemon(args, s, case, method, work, what):
    if method in OLD:
        args = argparse.Namespace(**dict(vars(args), backfilld=args.old_backfilld,
                                         backfillctl=args.old_backfillctl))
    return case.backfill(args, os.path.join(work, "daemon"), daemon_config(s, method),
                         method, what)


def measure(args, s, case, method, work, run_no, pristine, env):
    s.script(RESET_SQL, DB)
    settle(s)
    if digest(s) != pristine:
        raise BenchError("the reset did not restore the pristine fact and mart")
    dates = os.path.join(work, "dates.txt")
    weeks = os.path.join(work, "weeks.txt")
    with open(dates, "w") as f:
        f.write("\n".join(case.dates) + "\n")
    with open(weeks, "w") as f:
        f.write("\n".join(case.weeks) + "\n")
    what = "%s, %s (run %d)" % (case.name, LABEL[method], run_no)
    if method in SCRIPT:
        t0 = time.monotonic()
        p = subprocess.run([os.path.join(HERE, SCRIPT[method]), dates, weeks],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            raise BenchError("%s: %s exited %d\n%s" % (what, SCRIPT[method], p.returncode,
                                                       (p.stdout + p.stderr)[-2000:]))
    else:
        dt = run_daemon(args, s, case, method, work, what)
    settle(s)
    return case.record(method, dt, digest(s), pristine, what, LABEL,
                       lambda: check_truth(s, case, what))


def table(cases, runs):
    lines = ["Per-date backfill on ClickHouse, fact + affected weeks (medians of %d run%s):"
             % (runs, "" if runs == 1 else "s"), ""]
    hdr = "| %-22s | %-34s | %9s | %7s | %8s | %11s | %12s |" % (
        "case", "method", "median ms", "vs set", "vs hand", "paired: set", "paired: hand")
    lines += [hdr, "|" + "|".join("-" * len(x) for x in hdr.split("|")[1:-1]) + "|"]
    for c in cases:
        med = {m: median(ts) for m, ts in c.times.items()}
        for m in METHODS + EXTRA + list(OLD):
            if m in med:
                ratios = tuple("%.2f" % (med[m] / med[b]) if b in med else "-"
                               for b in ("set", "hand"))
                ratios += tuple("%.2f" % paired(c, m, b) if b in med else "-"
                                for b in ("set", "hand"))
                lines.append("| %-22s | %-34s | %9.0f | %7s | %8s | %11s | %12s |" % (
                    ("%s (%d weeks)" % (c.name, len(c.weeks)), LABEL[m], med[m] * 1000)
                    + ratios))
    lines.append("")
    for c in cases:
        for m in METHODS + EXTRA + list(OLD):
            if m in c.times:
                extra = ""
                if m in c.run_sums:
                    extra = "runs themselves %.0f ms (sum of \"succeeded in\"); " % (
                        median(c.run_sums[m]) * 1000)
                lines.append("%s, %s: %sall times %s" % (
                    c.name, LABEL[m], extra, ", ".join("%.0f" % (t * 1000) for t in c.times[m])))
    return "\n".join(lines)


def paired(c, m, base):
    """The median over rounds of m's time / base's time in the same round
    (the methods of a round run back to back): steadier than a ratio of
    medians when the machine's load drifts."""
    a, b = c.times.get(m, []), c.times.get(base, [])
    return median([x / y for x, y in zip(a, b)]) if a and b else float("nan")


# issue 44's bounds against the atomic set-based script, per method
BOUND = {"bfd4": 1.25, "bfd1": 2.0, "batch": 1.0, "batch4": 1.0, "old4": 1.25, "old1": 2.0, "oldbatch": 1.0}


def targets(cases):
    """The targets (paired ratios, paired()): a run per partition <= 1.25 x
    the atomic set-based script at concurrency 4, <= 2 x at 1, batch: true
    <= 1.0 x; every form faster than the DROP+INSERT hand loop (< 1.0 x)."""
    lines = ["", "| target (paired ratios, median over rounds) | measured | bound | |",
             "|---|---|---|---|"]
    for c in cases:
        for m in ("bfd1", "bfd4", "batch", "batch4", "old1", "old4", "oldbatch"):
            if m not in c.times:
                continue
            for base, bound in (("set", BOUND[m]), ("hand", 1.0)):
                if base not in c.times:
                    continue
                r = paired(c, m, base)
                ok = r <= bound if base == "set" else r < bound
                lines.append("| %s, %s vs %s | %.2f | %s %.2f | %s |"
                             % (c.name, LABEL[m], LABEL[base], r,
                                "<=" if base == "set" else "<", bound,
                                "met" if ok else "missed"))
            if "setdrop" in c.times:
                lines.append("| %s, %s vs %s | %.2f | (no bound) | |"
                             % (c.name, LABEL[m], LABEL["setdrop"], paired(c, m, "setdrop")))
    return "\n".join(lines)


# ------------------------------------------------------------------ profile

def kind(query):
    """A statement with its literals taken out, so that alike ones group."""
    q = " ".join(query.split())
    q = re.sub(r"'[^']*'", "?", q)
    q = re.sub(r"\b\d+\b", "N", q)
    q = re.sub(r"IN \((\?|toDate\(\?\))(, ?(\?|toDate\(\?\)))*\)", "IN (...)", q)
    return q[:110]


def profile(args, s, case, method, work, pristine, env):
    """One measurement with the server's query_log on: the statements the
    etl user sent, grouped, with their count and server time."""
    s.q("SYSTEM FLUSH LOGS")
    s.q("TRUNCATE TABLE system.query_log")
    dt = measure(args, s, case, method, work, 0, pristine, env)
    s.q("SYSTEM FLUSH LOGS")
    rows = s.rows("SELECT query, query_duration_ms FROM system.query_log WHERE type = 2"
                  " AND user = 'etl'")
    groups = {}
    for q, ms in rows:
        g = groups.setdefault(kind(q.replace("\\n", " ")), [0, 0])
        g[0] += 1
        g[1] += int(ms)
    nparts = case.ndays + len(case.weeks)
    out = ["%s, %s: %.0f ms wall, %d statements (%.1f per partition), %d ms on the server"
           % (case.name, LABEL[method], dt * 1000, len(rows), len(rows) / nparts,
              sum(int(ms) for _, ms in rows))]
    for k, (n, ms) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        out.append("  %5d x %6d ms  %s" % (n, ms, k))
    return "\n".join(out)


# ------------------------------------------------------------------ main

def parse(argv):
    ap = window_args(__doc__, 365)
    ap.add_argument("--methods", help="a subset of %s, or %s (default all but the latter; "
                    "with --old also %s)" % (",".join(METHODS), ",".join(EXTRA), ",".join(OLD)))
    ap.add_argument("--old", metavar="DIR",
                    help="another build folder (e.g. of an older commit): adds its daemon as "
                    "the methods %s, alternating with the others" % ",".join(OLD))
    ap.add_argument("--nice", type=int, default=0,
                    help="run the server, the scripts and the daemon at this niceness (e.g. "
                    "-10 as root on a machine shared with other work; default 0)")
    ap.add_argument("--server-dir", default=None,
                    help="the folder to put the server's data in (e.g. /dev/shm: the scheduler's "
                    "cost rather than the disk's; default the temporary folder)")
    ap.add_argument("--profile", action="store_true",
                    help="instead of the timing: one run of each method with the server's "
                    "query_log, the statements grouped with their counts and server time")
    args = ap.parse_args(argv)
    if args.smoke:
        args.days, args.rows_per_day, args.stores = 40, 300, 10
        args.windows = args.windows or "3,10"
        args.runs = args.runs or 1
    args.year_start = "2025-01-01"
    args.window_start = "2025-01-08" if args.smoke else "2025-03-05"  # Wednesdays
    args.runs = args.runs or (1 if args.quick else 3)
    args.windows = sorted(int(x) for x in (args.windows or ("30" if args.quick else "30,90"))
                          .split(","))
    if args.methods:
        args.methods = [m for m in args.methods.split(",") if m]
    else:
        args.methods = METHODS + (list(OLD) if args.old else [])
    for m in args.methods:
        if m not in METHODS + EXTRA and not (args.old and m in OLD):
            ap.error("unknown method %r (one of %s%s)" % (m, ",".join(METHODS + EXTRA),
                                                          ", with --old " + ",".join(OLD)))
    first = datetime.date.fromisoformat(args.window_start)
    end = datetime.date.fromisoformat(args.year_start) + datetime.timedelta(args.days)
    if first + datetime.timedelta(max(args.windows) + 7) > end:
        ap.error("a %d-day window from %s does not fit in %d days from %s"
                 % (max(args.windows), args.window_start, args.days, args.year_start))
    b, ctl = os.environ.get("BACKFILLD"), os.environ.get("BACKFILLCTL")
    args.backfilld = os.path.abspath(b or os.path.join(args.build, "daemon", "backfilld"))
    args.backfillctl = os.path.abspath(ctl or os.path.join(args.build, "daemon", "backfillctl"))
    if args.old:
        args.old_backfilld = os.path.abspath(os.path.join(args.old, "daemon", "backfilld"))
        args.old_backfillctl = os.path.abspath(os.path.join(args.old, "daemon", "backfillctl"))
    return args


def preflight(args):
    """None, or why this run cannot go on: (exit code, message)."""
    missing = 77 if args.smoke else 2
    for p in (args.backfilld, args.backfillctl) + ((args.old_backfilld, args.old_backfillctl)
                                                   if args.old else ()):
        if not os.access(p, os.X_OK):
            return 2, ("missing %s: build it: meson setup build-bench --buildtype=release && "
                       "meson compile -C build-bench (or pass --build DIR, or "
                       "BACKFILLD/BACKFILLCTL)" % p)
    module = os.path.join(os.path.dirname(args.backfilld), "backfilld-ch.so")
    if not os.path.exists(module):
        return missing, ("no ClickHouse driver beside %s (%s): install libcurl4-openssl-dev "
                         "and rebuild" % (args.backfilld, module))
    if not shutil.which(CLIENT):
        return missing, "missing %s: apt-get install clickhouse-client" % CLIENT
    for tool in ("bash", "sed", "paste"):
        if not shutil.which(tool):
            return 2, "missing %s" % tool
    return None


def main(argv=None):
    args = parse(argv)
    bad = preflight(args)
    if bad:
        if bad[0] == SKIP:
            skip(bad[1])
        print("ch_bench.py: %s" % bad[1], file=sys.stderr)
        return bad[0]
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": "%s, %d cores, %s" % (platform.node(), os.cpu_count(), platform.release()),
              "source": git_describe(), "runs": args.runs, "loadavg_start": loadavg()}
    if args.nice:
        os.nice(args.nice)   # inherited by every process the run starts
    report["nice"] = os.nice(0)
    t_all = time.monotonic()
    # SIGTERM and SIGHUP end the run through the finally below, which stops the server
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda n, f: sys.exit(128 + n))
    try:
        s = ChServer(prefix="backfilld-chbench-", query_log=args.profile, extra=MERGE_TREE_XML,
                     parent=args.server_dir)
    except ChServerError as e:
        skip(str(e))
    s.keep = False
    rc = 0
    try:
        work = tempfile.mkdtemp(prefix="work-", dir=s.dir)
        env = client_env(s, work)
        version = s.q("SELECT version()").strip()
        log("ClickHouse %s in %s; generating %d days x %d rows ..."
            % (version, s.dir, args.days, args.rows_per_day))
        t0 = time.monotonic()
        report["warehouse"] = generate(s, args)
        report["clickhouse"] = version
        log("  generated in %.1f s: %r" % (time.monotonic() - t0, report["warehouse"]))
        pristine = digest(s, "fct_pristine", "mart_pristine")
        cases = [WindowCase(n, args.window_start) for n in args.windows]
        methods = args.methods
        if args.profile:
            for case in cases:
                for m in methods:
                    print(profile(args, s, case, m, work, pristine, env), flush=True)
            return 0
        total = args.runs * len(cases) * len(methods)
        k = 0
        t_start = time.monotonic()
        for i in range(args.runs):
            for case in cases:
                order = methods[i % len(methods):] + methods[:i % len(methods)]
                for m in order:
                    k += 1
                    dt = measure(args, s, case, m, work, i + 1, pristine, env)
                    log("[%3d/%d %5.0f s] %-8s %-30s %8.1f ms" % (
                        k, total, time.monotonic() - t_start, case.name, LABEL[m], dt * 1000))
    except (BenchError, ChQueryError) as e:
        print("ch_bench.py: FAIL: %s" % e, file=sys.stderr)
        print(s.log_tail(), file=sys.stderr)
        rc = 1
        s.keep = bool(os.environ.get("KEEP_TMP"))
        if s.keep:
            log("kept %s" % s.dir)
    finally:
        s.close()
    if rc:
        return rc
    report["loadavg_end"] = loadavg()
    report["elapsed_s"] = round(time.monotonic() - t_all, 1)
    w = report["warehouse"]
    print("backfilld on ClickHouse, %s, %s, ClickHouse %s, source %s; %d run%s of each method,"
          " alternating; niceness %d" % (report["date"], report["machine"], version,
                                         report["source"], args.runs,
                                         "" if args.runs == 1 else "s", report["nice"]))
    print("warehouse: %d rows of raw_sales (%d days, %d stores, %.2f %% refunds), %s; "
          "load average %s at start, %s at end" % (w["rows"], w["days"], w["stores"],
                                                    w["refunds_pct"], w["size"],
                                                    report["loadavg_start"], report["loadavg_end"]))
    print()
    print(table(cases, args.runs))
    if not args.smoke:
        print(targets(cases))
    print()
    print("elapsed %.0f s" % report["elapsed_s"])
    report["cases"] = [dict(cs.as_json(),
                            paired_vs_set={m: round(paired(cs, m, "set"), 3)
                                           for m in cs.times if "set" in cs.times},
                            paired_vs_hand={m: round(paired(cs, m, "hand"), 3)
                                            for m in cs.times if "hand" in cs.times})
                       for cs in cases]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
