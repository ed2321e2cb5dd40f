#!/usr/bin/env python3
"""Dependency shapes on several hosts (issue 41; test_windows.py does them
on one).  A rolling window: two nodes on one PostgreSQL
state store and one PostgreSQL warehouse, a daily fact and a 7-day mart
(upstream {job: fct, lookback: 6}), SQL jobs with concurrency 4.  A
repair of the fact's 2025-01-08..12 sent to the worker node is planned by
the planner as on one host: its runs are the fact's 5 days and the mart's
2025-01-08..18, each succeeded once, each mart day started after the
repaired days in its window landed; the worker ran some of them (claimed
from the work table) and the planner the rest; each partition was
committed once (a row of the run's own transaction), and both tables
then equal a recompute.

A coarser upstream and a whole table, on two such nodes: a daily fact, a
monthly rate, a daily EUR table over both ([fct, fx_monthly]) and a
whole-table total (partition: none, [fct]), each SQL run committing a row
of w_ran that names the node it ran on (each node's PGAPPNAME).  A repair
of January's rate runs its month and January's 31 EUR days, each
succeeded and committed once, after the month landed, nothing else, on
both nodes; a repair of the fact's 2025-02-10..14 runs its days, their
EUR days and the whole table once, after the last day landed, on
whichever node; every table then equals a recompute, nothing stale.  The
same two repairs with a fault: the run of EUR 2025-01-10, then of the
whole table, waits in its transaction on an advisory lock the test holds
(the test sees it wait in pg_stat_activity: an event, no sleep), its node
is killed with -9, and the other node takes over: every partition of the
request succeeded once, the held one interrupted once with the dead
node's name and committed once, by the survivor; every table equals a
recompute.

Nodes and the throwaway PostgreSQL server as in test_cluster.py (exit 77
without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1)."""
import collections
import re
import subprocess

import harness as h
import test_cluster as tc
import test_postgres as tp

DAYS = h.days("2025-01-01", "2025-01-20")
REPAIRED = h.days("2025-01-08", "2025-01-12")
ROLLED = h.days("2025-01-08", "2025-01-18")
EVENTS = {x: 100 * (i + 1) + 50 for i, x in enumerate(DAYS)}

SEED = """
CREATE TABLE w_events (dt date, amount bigint);
CREATE TABLE w_fct (dt date PRIMARY KEY, revenue bigint);
CREATE TABLE w_rolling (dt date PRIMARY KEY, revenue_7d bigint);
CREATE TABLE w_execs (job text, dt date);
"""

JOBS = """
- name: fct
  warehouse: dw
  partition: day
  start: 2025-01-01
  end: 2025-01-20
  catchup: false
  concurrency: 4
  retries: 0
  sql: |
    DELETE FROM w_fct WHERE dt = CAST(:partition AS date);
    INSERT INTO w_fct SELECT CAST(:partition AS date), SUM(amount) FROM w_events
    WHERE dt >= CAST(:partition_start AS date) AND dt < CAST(:partition_end AS date);
    INSERT INTO w_execs SELECT 'fct', CAST(:partition AS date) FROM pg_sleep(0.1);
- name: mart_rolling_7d
  warehouse: dw
  partition: day
  end: 2025-01-20
  concurrency: 4
  retries: 0
  upstream:
    - job: fct
      lookback: 6
  sql: |
    DELETE FROM w_rolling WHERE dt = CAST(:partition AS date);
    INSERT INTO w_rolling SELECT CAST(:partition AS date), SUM(revenue) FROM w_fct
    WHERE dt >= CAST(:partition_start AS date) - 6 AND dt < CAST(:partition_end AS date);
    INSERT INTO w_execs SELECT 'mart_rolling_7d', CAST(:partition AS date) FROM pg_sleep(0.1);
"""


def recompute(pg, what):
    rows = [(a, int(b)) for a, b in pg.psql("SELECT dt, revenue FROM w_fct ORDER BY dt")]
    h.eq(rows, sorted(EVENTS.items()), "fct %s" % what)
    rows = [(a, int(b)) for a, b in pg.psql("SELECT dt, revenue_7d FROM w_rolling ORDER BY dt")]
    h.eq(rows, [(x, sum(EVENTS[y] for y in DAYS[max(0, i - 6):i + 1]))
                for i, x in enumerate(DAYS)], "mart_rolling_7d %s" % what)


def two_nodes(jobs, seed):
    """A fresh warehouse database etl (seed run in it as etl) and nodes n1
    and n2 on a fresh state store, each node's warehouse sessions named
    after it (PGAPPNAME: pg_stat_activity and current_setting
    ('application_name') say which node runs a statement).  Returns (the
    PostgreSQL server, the Nodes, the planner's name, the worker Node)."""
    pg = tp.cluster()
    pg.psql("DROP DATABASE IF EXISTS etl WITH (FORCE)", db="postgres")
    pg.psql("CREATE DATABASE etl OWNER etl", db="postgres")
    pg.as_etl(seed)
    wh = "\n" + tp.pg_warehouse("dw", max_connections=8).rstrip("\n")
    c = tc.Nodes(jobs, names=(), clock=None, settings={"warehouses": wh})
    for n in ("n1", "n2"):
        d = c.add(n, start=False)
        d.extra_env["PGAPPNAME"] = n
        d.start()
    c.wait_view(["n1", "n2"])
    c.settle()
    planner = c.planner(c["n1"])
    return pg, c, planner, c["n2" if planner == "n1" else "n1"]


def claimed_since(d, offset):
    """(job, partition) node d claimed from the work table after offset in its log."""
    return set(re.findall(r"job=(\S+) partition=([^\s.]+)\S* run=\d+ attempt=\d+"
                          r" claimed by this node", tc.log_of(d)[offset:]))


def test_rolling_window_on_two_nodes():
    pg, c, planner, worker = two_nodes(JOBS, SEED + "INSERT INTO w_events VALUES %s;"
                                       % ", ".join("('%s', %d)" % kv for kv in EVENTS.items()))
    first = tc.backfill(c[planner], "fct", DAYS[0], DAYS[-1])
    c[planner].wait_request(first)
    recompute(pg, "after the first build")

    pg.as_etl("INSERT INTO w_events VALUES %s; DELETE FROM w_execs"
              % ", ".join("('%s', 10000)" % x for x in REPAIRED))
    for x in REPAIRED:
        EVENTS[x] += 10000
    offsets = {n: len(tc.log_of(c[n])) for n in ("n1", "n2")}
    repair = tc.backfill(worker, "fct", REPAIRED[0], REPAIRED[-1])
    worker.wait_request(repair)
    want = [("fct", x) for x in REPAIRED] + [("mart_rolling_7d", x) for x in ROLLED]
    runs = tc.succeeded_once(c[planner], repair, want)
    h.eq(sorted(r["state"] for r in runs), ["succeeded"] * len(want),
         "the repair's runs (each once, nothing else)")
    committed = collections.Counter(pg.psql("SELECT job, CAST(dt AS text) FROM w_execs"))
    h.eq(sorted(committed.items()), sorted((k, 1) for k in want),
         "partitions committed in the warehouse (once each)")
    fct_done = {r["partition"]: h.parse_iso(r["finished_at"]) for r in runs
                if r["job"] == "fct"}
    for r in runs:
        if r["job"] == "mart_rolling_7d":
            window = [x for x in REPAIRED if x in h.days(DAYS[0], r["partition"])[-7:]]
            h.check(h.parse_iso(r["started_at"]) >= max(fct_done[x] for x in window),
                    "mart_rolling_7d %s started before the repaired days in its window"
                    " (%s) landed" % (r["partition"], window))
    by_worker = claimed_since(worker, offsets[worker.node_name])
    by_planner = claimed_since(c[planner], offsets[planner])
    print("  claimed by the worker: %d, by the planner: %d, the planner's own share: %d"
          % (len(by_worker), len(by_planner), len(want) - len(by_worker) - len(by_planner)))
    h.check(by_worker and set(want) - by_worker,
            "the worker claimed %d of the %d partitions: not both nodes"
            % (len(by_worker), len(want)))
    recompute(pg, "after the repair")
    h.eq(worker.json("stale")["stale"], [], "stale after the repair")



# ---------------------------------------------------------------- a coarser
# upstream and a whole table on two nodes

MONTHS = ("2025-01-01", "2025-02-01")
SHAPE_DAYS = h.days("2025-01-01", "2025-02-28")
JANUARY = h.days("2025-01-01", "2025-01-31")
FACT_REPAIRED = h.days("2025-02-10", "2025-02-14")

# A run's SQL first takes advisory lock 41 when w_hold names its partition:
# a test holding the lock keeps that run in its transaction, waiting, and
# sees it wait (pg_stat_activity, the node by its application_name): the
# moment to kill its node, no sleep.  w_ran gets one row per partition a
# transaction committed, with the node that ran it.
SHAPES_SEED = """
CREATE TABLE w_events (dt date, amount bigint);
CREATE TABLE w_fx_source (month date, rate bigint, ver int);
CREATE TABLE w_fx (month date PRIMARY KEY, rate bigint);
CREATE TABLE w_fct (dt date PRIMARY KEY, revenue bigint);
CREATE TABLE w_eur (dt date PRIMARY KEY, revenue_eur bigint);
CREATE TABLE w_lifetime (total bigint, days bigint);
CREATE TABLE w_hold (job text, part text);
CREATE TABLE w_ran (job text, part text, node text);
"""

HOLD = """
    SELECT pg_advisory_xact_lock(41) FROM w_hold
    WHERE job = '%s' AND part = CAST(:partition AS text);"""

RAN = """
    INSERT INTO w_ran SELECT '%s', CAST(:partition AS text),
      current_setting('application_name') FROM pg_sleep(%s);"""

SHAPES_JOBS = """
- name: fx_monthly
  warehouse: dw
  partition: month
  end: 2025-02-28
  concurrency: 4
  retries: 0
  sql: |
    DELETE FROM w_fx WHERE month = CAST(:partition AS date);
    INSERT INTO w_fx SELECT month, rate FROM w_fx_source
    WHERE month = CAST(:partition AS date) ORDER BY ver DESC LIMIT 1;%(ran_fx)s
- name: fct
  warehouse: dw
  partition: day
  start: 2025-01-01
  end: 2025-02-28
  catchup: false
  concurrency: 4
  retries: 0
  sql: |
    DELETE FROM w_fct WHERE dt = CAST(:partition AS date);
    INSERT INTO w_fct SELECT CAST(:partition AS date), SUM(amount) FROM w_events
    WHERE dt >= CAST(:partition_start AS date) AND dt < CAST(:partition_end AS date);%(ran_fct)s
- name: fct_eur
  warehouse: dw
  partition: day
  end: 2025-02-28
  concurrency: 4
  retries: 0
  max_backfill: 100
  upstream: [fct, fx_monthly]
  sql: |%(hold_eur)s
    DELETE FROM w_eur WHERE dt = CAST(:partition AS date);
    INSERT INTO w_eur SELECT f.dt, f.revenue * x.rate FROM w_fct f
    JOIN w_fx x ON x.month = CAST(date_trunc('month', f.dt) AS date)
    WHERE f.dt = CAST(:partition AS date);%(ran_eur)s
- name: store_lifetime
  warehouse: dw
  partition: none
  retries: 0
  upstream: [fct]
  sql: |%(hold_lifetime)s
    DELETE FROM w_lifetime;
    INSERT INTO w_lifetime SELECT SUM(revenue), COUNT(*) FROM w_fct;%(ran_lifetime)s
""" % {"ran_fx": RAN % ("fx_monthly", "0.05"), "ran_fct": RAN % ("fct", "0.05"),
       "hold_eur": HOLD % "fct_eur", "ran_eur": RAN % ("fct_eur", "0.1"),
       "hold_lifetime": HOLD % "store_lifetime",
       "ran_lifetime": RAN % ("store_lifetime", "0.1")}


class Shapes:
    """The fact, the monthly rate, the EUR table over both and the whole
    table, built on two nodes from the events and the rates the test
    wrote (the source of every recompute)."""

    def __init__(self):
        self.events = {x: 100 * (i + 1) + 50 for i, x in enumerate(SHAPE_DAYS)}
        self.rates = {"2025-01-01": 900, "2025-02-01": 920}
        self.ver = 1
        self.pg, self.c, self.planner, self.worker = two_nodes(
            SHAPES_JOBS, SHAPES_SEED + "INSERT INTO w_events VALUES %s;"
            " INSERT INTO w_fx_source VALUES %s;"
            % (", ".join("('%s', %d)" % kv for kv in self.events.items()),
               ", ".join("('%s', %d, 1)" % kv for kv in self.rates.items())))
        via = self.c[self.planner]
        # the rates alone, then the fact with its downstream: the EUR
        # table's 59 days and the whole table
        req = via.enqueue("backfill", "fx_monthly", "--from", MONTHS[0], "--to", MONTHS[-1],
                          "--no-downstream")
        via.wait_request(req)
        req = tc.backfill(via, "fct", SHAPE_DAYS[0], SHAPE_DAYS[-1])
        via.wait_request(req)
        tc.succeeded_once(via, req, [("fct", x) for x in SHAPE_DAYS] +
                          [("fct_eur", x) for x in SHAPE_DAYS] + [("store_lifetime", "-")])
        self.recompute(via, "after the first build")

    def new_rate(self, month, rate):
        """A corrected rate of month in the source (a new version)."""
        self.ver += 1
        self.pg.as_etl("INSERT INTO w_fx_source VALUES ('%s', %d, %d)" % (month, rate, self.ver))
        self.rates[month] = rate

    def new_events(self, days, amount):
        """Late events of days in the source."""
        self.pg.as_etl("INSERT INTO w_events VALUES %s"
                       % ", ".join("('%s', %d)" % (x, amount) for x in days))
        for x in days:
            self.events[x] += amount

    def recompute(self, via, what):
        """Every table equals a recompute from the source; nothing stale."""
        pg = self.pg
        h.eq([(a, int(b)) for a, b in pg.psql("SELECT month, rate FROM w_fx ORDER BY 1")],
             sorted(self.rates.items()), "fx_monthly %s" % what)
        h.eq([(a, int(b)) for a, b in pg.psql("SELECT dt, revenue FROM w_fct ORDER BY 1")],
             sorted(self.events.items()), "fct %s" % what)
        h.eq([(a, int(b)) for a, b in pg.psql("SELECT dt, revenue_eur FROM w_eur ORDER BY 1")],
             [(x, self.events[x] * self.rates[x[:8] + "01"]) for x in SHAPE_DAYS],
             "fct_eur %s" % what)
        h.eq([(int(a), int(b)) for a, b in pg.psql("SELECT total, days FROM w_lifetime")],
             [(sum(self.events.values()), len(SHAPE_DAYS))], "store_lifetime %s" % what)
        h.eq(via.json("stale")["stale"], [], "stale %s" % what)

    def ran(self):
        """{(job, partition): [node, ...]} of the commits since the last call."""
        out = collections.defaultdict(list)
        for job, part, node in self.pg.psql("DELETE FROM w_ran RETURNING job, part, node"):
            out[(job, part)].append(node)
        return out

    def committed_once(self, want, what):
        """Each partition of want committed once in the warehouse, nothing
        else; returns {(job, partition): node}."""
        ran = self.ran()
        h.eq(sorted((k, len(v)) for k, v in ran.items()), sorted((k, 1) for k in want),
             "partitions committed in the warehouse %s (once each, nothing else)" % what)
        return {k: v[0] for k, v in ran.items()}

    def runs_once(self, via, req, want, what):
        """Each partition of want succeeded once in request req, and the
        request ran nothing else; returns its runs."""
        runs = tc.succeeded_once(via, req, want)
        h.eq(sorted({(r["job"], r["partition"]) for r in runs}), sorted(want),
             "the partitions request %d ran %s (nothing else)" % (req, what))
        return runs


def hold(pg, job, partition):
    """Name job's partition in w_hold and hold advisory lock 41 in a psql
    session of the test's: the partition's runs wait in their transaction
    until the returned release() ends the session."""
    pg.as_etl("DELETE FROM w_hold; INSERT INTO w_hold VALUES ('%s', '%s')" % (job, partition))
    proc = subprocess.Popen(pg.psql_cmd("etl"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def release():
        if proc.poll() is None:
            proc.stdin.close()   # psql exits at the end of its input
            proc.wait(timeout=60)
    try:
        proc.stdin.write("SELECT 'held' FROM pg_advisory_lock(41);\n")
        proc.stdin.flush()
        h.eq(proc.stdout.readline().strip(), "held", "psql holding advisory lock 41")
    except BaseException:
        release()
        raise
    return release


def waiting_node(s):
    """The node whose warehouse session waits on advisory lock 41 (its run
    of the held partition started), awaited; the failure guard only
    bounds the wait."""
    rows = s.c.wait_until(lambda: s.pg.psql(
        "SELECT application_name FROM pg_stat_activity WHERE datname = 'etl'"
        " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"),
        "a run waiting on the held partition")
    h.eq(len(rows), 1, "sessions waiting on the held partition: %r" % rows)
    return rows[0][0]


def kill9_running(s, job, partition, send):
    """Hold job's partition, send a repair (send() returns its request),
    and kill -9 the node whose run of the partition then waits (mid-way:
    its transaction open); the other node takes over and finishes the
    request.  Returns (the request, the killed node's name, the survivor,
    the (job, partition) committed before the kill)."""
    release = hold(s.pg, job, partition)
    try:
        req = send()
        victim = waiting_node(s)
        h.check(victim in ("n1", "n2"), "the waiting session's node %r" % victim)
        before = s.ran()
        h.eq(sorted(k for k, v in before.items() if len(v) != 1), [],
             "partitions committed more than once before the kill")
        done = sorted(before)
        print("  %s %s waits on %s (the %s); %d partitions committed before the kill"
              % (job, partition, victim, "planner" if victim == s.planner else "worker",
                 len(done)))
        s.c[victim].kill9()
    finally:
        release()
    survivor = s.c["n2" if victim == "n1" else "n1"]
    s.c.wait_role(survivor, victim, ("stopped",))
    h.eq(s.c.planner(survivor), survivor.node_name, "the planner after the kill")
    resp = survivor.wait_request(req)
    h.eq(resp.get("status"), "0", "request %d after the kill: %r" % (req, resp))
    return req, victim, survivor, done


def interrupted_once(runs, victim, job, partition):
    """The held partition: one run interrupted with its node, one success."""
    mine = [(r["state"], r["attempt"], r["error"]) for r in runs
            if (r["job"], r["partition"]) == (job, partition)]
    h.eq(sorted(x[0] for x in mine), ["failed", "succeeded"],
         "runs of %s %s, in flight on the killed node: %r" % (job, partition, mine))
    bad = [x for x in mine if x[0] == "failed"
           and "node %s stopped" % victim not in (x[2] or "")]
    h.eq(bad, [], "runs of %s %s failed otherwise than interrupted by %s's death"
         % (job, partition, victim))
    h.eq(sorted({r["attempt"] for r in runs}), [1],
         "attempts of the request's runs (an interruption counts none)")


def test_coarser_upstream_on_two_nodes():
    """A repair of January's rate sent to the worker: its month, then
    January's 31 EUR days, each once across both nodes, each after the
    month landed; both nodes ran EUR days (the planner runs at most its
    share, the rest is offered); equal to a recompute."""
    s = Shapes()
    s.new_rate("2025-01-01", 905)
    s.ran()
    req = s.worker.enqueue("backfill", "fx_monthly", "--from", MONTHS[0], "--to", MONTHS[0])
    s.worker.wait_request(req)
    want = [("fx_monthly", MONTHS[0])] + [("fct_eur", x) for x in JANUARY]
    runs = s.runs_once(s.worker, req, want, "for January's rate")
    h.eq(sorted(r["state"] for r in runs), ["succeeded"] * len(want),
         "the states of the repair's runs")
    month = [r for r in runs if r["job"] == "fx_monthly"][0]
    for r in runs:
        if r["job"] == "fct_eur":
            h.check(h.parse_iso(r["started_at"]) >= h.parse_iso(month["finished_at"]),
                    "fct_eur %s started before January's rate landed" % r["partition"])
    nodes = s.committed_once(want, "by January's repair")
    eur = collections.Counter(n for k, n in nodes.items() if k[0] == "fct_eur")
    print("  January's EUR days per node: %s" % dict(eur))
    h.eq(sorted(eur), ["n1", "n2"], "nodes that ran January's EUR days")
    s.recompute(s.worker, "after January's repair")


def test_whole_table_on_two_nodes():
    """A repair of the fact's 2025-02-10..14 sent to the worker: the five
    days, their EUR days and the whole table once, after the fact's last
    repaired day landed, on whichever node; equal to a recompute."""
    s = Shapes()
    s.new_events(FACT_REPAIRED, 10000)
    s.ran()
    req = tc.backfill(s.worker, "fct", FACT_REPAIRED[0], FACT_REPAIRED[-1])
    s.worker.wait_request(req)
    want = ([("fct", x) for x in FACT_REPAIRED] + [("fct_eur", x) for x in FACT_REPAIRED] +
            [("store_lifetime", "-")])
    runs = s.runs_once(s.worker, req, want, "for the fact's repair")
    h.eq(sorted(r["state"] for r in runs), ["succeeded"] * len(want),
         "the states of the repair's runs")
    whole = [r for r in runs if r["job"] == "store_lifetime"][0]
    last = max(h.parse_iso(r["finished_at"]) for r in runs if r["job"] == "fct")
    h.check(h.parse_iso(whole["started_at"]) >= last,
            "store_lifetime started before the fact's last repaired day landed")
    nodes = s.committed_once(want, "by the fact's repair")
    print("  the whole table ran on %s; runs per node: %s"
          % (nodes[("store_lifetime", "-")], dict(collections.Counter(nodes.values()))))
    s.recompute(s.worker, "after the fact's repair")


def test_coarser_upstream_kill9():
    """January's rate repaired again, and the node running EUR 2025-01-10
    (its transaction open, waiting on the test's lock) killed with -9: the
    other node takes over; every partition of the request succeeded once,
    2025-01-10 interrupted once with the dead node's name, each committed
    once (01-10 by the survivor), equal to a recompute."""
    s = Shapes()
    s.new_rate("2025-01-01", 910)
    s.ran()
    req, victim, survivor, done = kill9_running(
        s, "fct_eur", "2025-01-10",
        lambda: s.worker.enqueue("backfill", "fx_monthly", "--from", MONTHS[0],
                                 "--to", MONTHS[0]))
    want = [("fx_monthly", MONTHS[0])] + [("fct_eur", x) for x in JANUARY]
    runs = s.runs_once(survivor, req, want, "for January's rate, across the kill")
    interrupted_once(runs, victim, "fct_eur", "2025-01-10")
    nodes = s.committed_once([k for k in want if k not in done],
                             "after the kill (besides the %d before it)" % len(done))
    h.eq(nodes[("fct_eur", "2025-01-10")], survivor.node_name,
         "the node that committed fct_eur 2025-01-10")
    s.recompute(survivor, "after January's repair across the kill")


def test_whole_table_kill9():
    """The fact's 2025-02-10..14 repaired, and the node running the whole
    table (waiting on the test's lock) killed with -9: the other node
    takes over; every partition succeeded once, the whole table
    interrupted once and committed once, by the survivor, after the
    fact's last day; equal to a recompute."""
    s = Shapes()
    s.new_events(FACT_REPAIRED, 20000)
    s.ran()
    req, victim, survivor, done = kill9_running(
        s, "store_lifetime", "-",
        lambda: tc.backfill(s.worker, "fct", FACT_REPAIRED[0], FACT_REPAIRED[-1]))
    want = ([("fct", x) for x in FACT_REPAIRED] + [("fct_eur", x) for x in FACT_REPAIRED] +
            [("store_lifetime", "-")])
    runs = s.runs_once(survivor, req, want, "for the fact's repair, across the kill")
    interrupted_once(runs, victim, "store_lifetime", "-")
    h.eq(sorted(k for k in done if k[0] == "fct"), [("fct", x) for x in FACT_REPAIRED],
         "the fact's days committed before the kill (the whole table waits for them)")
    nodes = s.committed_once([k for k in want if k not in done],
                             "after the kill (besides the %d before it)" % len(done))
    h.eq(nodes[("store_lifetime", "-")], survivor.node_name,
         "the node that committed the whole table")
    whole = [r for r in runs if r["job"] == "store_lifetime" and r["state"] == "succeeded"][0]
    last = max(h.parse_iso(r["finished_at"]) for r in runs if r["job"] == "fct")
    h.check(h.parse_iso(whole["started_at"]) >= last,
            "store_lifetime started before the fact's last repaired day landed")
    s.recompute(survivor, "after the fact's repair across the kill")

def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(t) for t in (test_rolling_window_on_two_nodes,
                                          test_coarser_upstream_on_two_nodes,
                                          test_whole_table_on_two_nodes,
                                          test_coarser_upstream_kill9,
                                          test_whole_table_kill9)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
