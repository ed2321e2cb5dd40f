#!/usr/bin/env python3
"""Several hosts (issue 14): three daemons on one PostgreSQL state store.

Written against the user's contract only (docs/several-hosts.md): the
configuration (`state: postgres:`, `node:`, `lease:`, a job's `nodes:`),
backfillctl on each node's socket, and what the jobs' commands leave
behind.  Each test gets a fresh database in a throwaway PostgreSQL server
started as test_postgres.py starts one (exit 77 without PostgreSQL, unless
BACKFILLD_REQUIRE_POSTGRES=1), and nodes n1, n2, n3: harness Daemons, each
with its own folder (socket, command logs, log), node name and
environment, one shared test clock file, and a lease of LEASE seconds.

The command jobs run run.sh (written into the test's shared folder): it
marks itself in flight (a file in running/), sleeps, and appends one line
`node job partition attempt start end` (wall clock, O_APPEND) to the
shared record when it ends.  The node is the daemon's BFD_TEST_NODE,
inherited by its commands, so every node's configuration is the same text
but for its `node:` line.  A daemon killed with -9 leaves its commands
running (they are detached, as on a host where only the daemon died):
they end within the command's sleep, well inside the lease, and their
lines count as executions too.

What it checks:
  - a backfill spreads over all three nodes, each partition runs and
    succeeds once, and the caps hold across the nodes together; the
    planner runs part of it itself (its share, never offered);
  - kill -9 of the planner, then of a worker, each with runs in flight:
    another node plans within the lease and a heartbeat (plus slack) and
    dispatches within the lease + 2 s, the dead node's runs are run
    again (the dead planner's own runs interrupted as its), the runs in
    flight on live nodes are adopted (run once, their attempt unchanged),
    every partition of the request succeeds once, no two executions of a
    partition overlap in time;
  - a planner stopped cleanly hands its runs in flight over: nothing is
    interrupted, every partition runs once; the runs it ran itself go on
    on it as its claims and the next planner adopts them;
  - the schedule's due partitions are materialised once, not once per
    node, and not again by the next planner;
  - a planner stopped (SIGSTOP) past its lease, with runs of its own in
    flight, writes nothing once continued (the state store's tables but
    the cluster's own are unchanged), drops its own runs' results (the
    next planner queued them again), says it was deposed, and comes back
    as a worker;
  - a node whose database role is cut off (its connections terminated,
    LOGIN revoked) starts nothing, says so in status, and works again
    once the role may log in;
  - every node answers with the same state; status lists the nodes with
    name, role, last_seen, running and config_hash, and warns when a node
    runs a different configuration;
  - `nodes: [n1]` keeps a job's runs on n1.
"""
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import harness as h
import test_postgres as tp

LEASE = 3            # seconds: short, so that failovers are quick
HEARTBEAT = LEASE / 3.0
TAKEOVER = LEASE + HEARTBEAT + 3.0   # allowed: lease, a heartbeat, slack
GUARD = 90.0         # failure guard for anything awaited
SLEEP = "0.3"        # a command partition's duration, well below the lease

# A cluster's own tables (docs/several-hosts.md "The tables"): the rest is
# the state itself, which only the planner writes.
CLUSTER_TABLES = {"nodes", "lease", "work", "mailbox"}

RUN_SH = r"""#!/bin/bash
# run.sh PARTITION SECONDS: one execution of a command partition
d=${0%/*}
m="$d/running/$BFD_TEST_NODE.$BACKFILLD_JOB.$1.$$"
s=$EPOCHREALTIME
: > "$m"
sleep "$2"
e=$EPOCHREALTIME
echo "$BFD_TEST_NODE $BACKFILLD_JOB $1 $BACKFILLD_ATTEMPT ${s/,/.} ${e/,/.}" >> "$d/record"
rm -f "$m"
"""


def cmd_job(name, concurrency=4, extra="", sleep=SLEEP, start="2025-01-01",
            end="2025-12-31", catchup="false"):
    """A command job running run.sh; @RUN@ is replaced by its path."""
    return """
- name: %s
  partition: day
  start: %s
  %s
  catchup: %s
  concurrency: %d
  retries: 0
  command: ["/bin/bash", "@RUN@", "{partition}", "%s"]
%s""" % (name, start, "end: %s" % end if end else "", catchup, concurrency, sleep, extra)


# ---------------------------------------------------------------- the store

class SharedState:
    """One database of a PostgreSQL server, named by every node's `state:
    postgres:` (without a user: each node's PGUSER says which role it
    logs in as); read as the superuser through psql."""

    def __init__(self, bindir, sockdir, port, pwfile, db, owner="etl"):
        self.argv = [os.path.join(bindir, "psql"), "-X", "-q", "-At", "-F", "\x1f",
                     "-P", "null=\x1e", "-v", "ON_ERROR_STOP=1", "-h", sockdir,
                     "-p", str(port), "-U", "postgres"]
        self.db = db
        self.sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % db, db="postgres")
        self.sql("CREATE DATABASE %s OWNER %s" % (db, owner), db="postgres")
        self.conninfo = "host=%s port=%d dbname=%s" % (sockdir, port, db)
        self.pwfile = pwfile

    def sql(self, q, db=None):
        r = subprocess.run(self.argv + ["-d", db or self.db, "-c", q],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise h.StateError(r.stderr.strip())
        return [tuple(None if v == "\x1e" else int(v) if re.fullmatch(r"-?\d+", v) else v
                      for v in line.split("\x1f"))
                for line in r.stdout.split("\n") if line != ""]

    def rows(self, q):
        return self.sql(q)

    def tables(self):
        return [r[0] for r in self.rows(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "ORDER BY tablename")]

    def configure(self, text):
        block = "state:\n  postgres: \"%s\"\n  password_file: %s" % (self.conninfo,
                                                                    self.pwfile)
        return re.sub(r"(?m)^state_db:.*$", lambda m: block, text)

    def dump(self, leave_out=CLUSTER_TABLES):
        """Every row of the state's tables (not the cluster's own)."""
        return {t: sorted(repr(r) for r in self.rows('SELECT * FROM "%s"' % t))
                for t in self.tables() if t not in leave_out}


# ---------------------------------------------------------------- the nodes

class Node(h.Daemon):
    """A daemon of the cluster.  The harness's first-start settling is
    left out: the store is shared, and its requests are the test's."""

    def settle(self):
        pass

    @property
    def node_name(self):
        return self.extra_env.get("BFD_TEST_NODE", "?")

    def try_json(self, *args):
        """backfillctl ARGS --json, or None when it fails (no planner)."""
        rc, out, err = self.ctl(*(args + ("--json",)))
        if rc != 0:
            return None
        try:
            return json.loads(out)
        except ValueError:
            h.fail("backfillctl %s --json printed no JSON:\n%s" % (" ".join(args), out))

    def status_text(self):
        rc, out, err = self.ctl("status")
        return rc, out + err


_SEQ = [0]


class Nodes:
    """Nodes on one fresh database of the test's PostgreSQL server.

    jobs      YAML of the jobs (the harness's dedented list items); @RUN@
              is run.sh's path
    names     the nodes to start, in order (the first takes the lease)
    users     {node: PostgreSQL role} for nodes that are not `etl`
    settings  top-level keys for every node (node: and lease: are added)
    lease     seconds, or None for the default
    clock     the shared test clock's instant, or None for the real clock
    state     a SharedState (default: a new database of test_postgres's server)
    warehouses  {name: seed SQL}: SQLite warehouses, one file per node
    """

    def __init__(self, jobs, names=("n1", "n2", "n3"), users=None, settings=None,
                 lease=LEASE, clock=h.DEFAULT_CLOCK, state=None, warehouses=None):
        _SEQ[0] += 1
        self.shared = tempfile.mkdtemp(prefix="bfd-cluster-")
        self.run_sh = os.path.join(self.shared, "run.sh")
        with open(self.run_sh, "w") as f:
            f.write(RUN_SH)
        os.chmod(self.run_sh, 0o755)
        os.mkdir(os.path.join(self.shared, "running"))
        self.record = os.path.join(self.shared, "record")
        open(self.record, "w").close()
        self.clock_file = None
        if clock is not None:
            # a folder of its own: the daemons watch the clock file's folder
            os.mkdir(os.path.join(self.shared, "clock"))
            self.clock_file = os.path.join(self.shared, "clock", "now")
            self.set_clock(clock)
        if state is None:
            c = tp.cluster()
            state = SharedState(c.bindir, c.sockdir, tp.PORT, c.pwfile,
                                "cluster_%d" % _SEQ[0])
        self.state = state
        self.jobs = jobs.replace("@RUN@", self.run_sh)
        self.settings = {"max_concurrency": 6, "max_backfill": 1000}
        if lease is not None:
            self.settings["lease"] = "%ds" % lease
        self.settings.update(settings or {})
        self.warehouses = warehouses
        self.users = users or {}
        self.nodes = collections.OrderedDict()
        _CLUSTERS.append(self)
        self.mark = 0
        for n in names:
            self.add(n)
        if names:
            self.wait_view(names)
            self.settle()

    def settle(self):
        """What the planner's schedule queued at the start (a job with
        `catchup: false` runs its newest due partition): wait for it, and
        leave it out of runs() and executions() from now on."""
        via = self.nodes[next(iter(self.nodes))]
        boot = {int(r[0]) for r in self.state.rows("SELECT id FROM requests")}
        for req in sorted(boot):
            via.wait_request(req)
        for d in self.nodes.values():
            d.boot_requests |= boot
        self.mark = 0
        self.mark = len(self.executions())

    def add(self, name, settings=None, jobs=None, start=True):
        """A node with this cluster's configuration (and settings on top)."""
        st = {"node": name}
        st.update(self.settings)
        st.update(settings or {})
        env = {"BFD_TEST_NODE": name, "PGUSER": self.users.get(name, "etl")}
        if self.clock_file:
            env["BACKFILLD_TEST_CLOCK_FILE"] = self.clock_file
        d = Node(jobs=jobs or self.jobs, settings=st, clock=None, name=name, env=env,
                 start=False, state=self.state, warehouses=self.warehouses)
        if self.nodes:
            d.boot_requests = set(next(iter(self.nodes.values())).boot_requests)
        self.nodes[name] = d
        if start:
            try:
                d.start()
            except h.TestFailure:
                _skip_before_wiring(d)
                raise
        return d

    def __getitem__(self, name):
        return self.nodes[name]

    def set_clock(self, instant):
        tmp = self.clock_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(instant + "\n")
        os.rename(tmp, self.clock_file)

    # -- what the nodes say

    def view(self, via):
        """via's status --json nodes as {name: node}, or None (no answer)."""
        st = via.try_json("status")
        if st is None:
            return None
        h.check(isinstance(st.get("nodes"), list),
                "status --json on %s has no nodes array: %r" % (via.node_name, st))
        return {n["name"]: n for n in st["nodes"]}

    def wait_view(self, live, via=None, planner=None, guard=GUARD):
        """Wait until via (or each of live) lists every node of live as
        planner or worker, one of them planner (the given one, if any);
        returns the view."""
        def ok(v):
            if v is None:
                return False
            roles = {n: v[n]["role"] for n in live if n in v}
            if len(roles) != len(live) or any(r not in ("planner", "worker")
                                              for r in roles.values()):
                return False
            p = [n for n in live if roles[n] == "planner"]
            return len(p) == 1 and (planner is None or p[0] == planner)
        last = {}
        end = time.monotonic() + guard
        for name in ([via.node_name] if via else live):
            d = self.nodes[name]
            while True:
                last[name] = self.view(d)
                if ok(last[name]):
                    break
                if time.monotonic() > end:
                    h.fail("within %.0f s %s never listed %s live with one planner%s; "
                           "last: %r" % (guard, name, list(live),
                                         " (%s)" % planner if planner else "", last[name]))
                time.sleep(0.1)
        return last[name]

    def planner(self, via):
        v = self.view(via)
        h.check(v is not None, "status on %s did not answer" % via.node_name)
        p = [n for n, x in v.items() if x["role"] == "planner"]
        h.eq(len(p), 1, "planners %s lists (%r)" % (via.node_name, v))
        return p[0]

    def wait_role(self, via, name, roles, guard=GUARD):
        """Wait until via lists node name with a role in roles."""
        end = time.monotonic() + guard
        v = None
        while time.monotonic() < end:
            v = self.view(via)
            if v is not None and name in v and v[name]["role"] in roles:
                return v
            time.sleep(0.1)
        h.fail("%s never listed %s as %s within %.0f s; last: %r\n%s"
               % (via.node_name, name, "/".join(roles), guard, v, self.activity()))

    def activity(self):
        """The state database's sessions (for a failure's message)."""
        try:
            rows = self.state.sql(
                "SELECT pid, usename, state, wait_event_type, wait_event, "
                "now() - xact_start, left(query, 120) FROM pg_stat_activity "
                "WHERE datname = '%s' ORDER BY pid" % self.state.db, db="postgres")
        except h.StateError as e:
            return "pg_stat_activity: %s" % e
        return "the state database's sessions (pid, user, state, wait, xact age, query):\n" + \
            "\n".join("  %r" % (r,) for r in rows)

    # -- what the commands left

    def executions(self):
        out = []
        with open(self.record) as f:
            for line in f:
                p = line.split()
                h.check(len(p) == 6, "record line %r" % line)
                out.append({"node": p[0], "job": p[1], "partition": p[2],
                            "attempt": int(p[3]), "start": float(p[4]), "end": float(p[5])})
        return out[self.mark:]

    def in_flight(self, node=None):
        """(node, job, partition) of the commands running now."""
        out = []
        for f in os.listdir(os.path.join(self.shared, "running")):
            n, job, part, _ = f.split(".")
            if node is None or n == node:
                out.append((n, job, part))
        return out

    def wait_until(self, cond, what, guard=GUARD):
        end = time.monotonic() + guard
        while True:
            v = cond()
            if v:
                return v
            if time.monotonic() > end:
                h.fail("%s: not within %.0f s" % (what, guard))
            time.sleep(0.05)

    def close(self, ok):
        for d in self.nodes.values():
            if d.alive():
                try:
                    d.proc.send_signal(signal.SIGCONT)
                except OSError:
                    pass
        h.kill_naming(self.shared)
        if ok and not os.environ.get("KEEP_TMP"):
            subprocess.run(["rm", "-rf", self.shared])
        else:
            print("kept %s" % self.shared)


_CLUSTERS = []


def _skip_before_wiring(d):
    """Skip while the daemon does not run `state: postgres:` yet."""
    try:
        with open(d.log, errors="replace") as f:
            text = f.read()
    except OSError:
        return
    if "not supported by this build yet" in text:
        print("SKIP: this backfilld does not run `state: postgres:` yet: %s"
              % text.strip().splitlines()[-1])
        raise SystemExit(h.SKIP)


# ---------------------------------------------------------------- checks

def succeeded_once(via, req, expected):
    """Every (job, partition) of expected succeeded exactly once in request
    req, and nothing of it is left queued or running; returns its runs."""
    runs = via.runs("--request", str(req))
    ok = collections.Counter((r["job"], r["partition"]) for r in runs
                             if r["state"] == "succeeded")
    h.eq(sorted(ok.items()), sorted((k, 1) for k in expected),
         "partitions of request %d succeeded (once each)" % req)
    left = [r for r in runs if r["state"] in ("queued", "running")]
    h.eq(left, [], "runs of request %d still queued or running" % req)
    return runs


def no_overlap(execs):
    """No two executions of one partition overlap in time."""
    per = collections.defaultdict(list)
    for e in execs:
        per[(e["job"], e["partition"])].append(e)
    bad = []
    for k, es in per.items():
        es.sort(key=lambda e: e["start"])
        for a, b in zip(es, es[1:]):
            if b["start"] < a["end"]:
                bad.append((k, a["node"], b["node"], round(a["end"] - b["start"], 3)))
    h.eq(bad, [], "executions of one partition overlapping (partition, node, node, seconds)")


def per_node(execs):
    return dict(collections.Counter(e["node"] for e in execs))


def claimed_in_log(d):
    """(job, partition) of the runs node d claimed from the work table, by
    its log (a batch's first partition)."""
    return set(re.findall(r"job=(\S+) partition=([^\s.]+)\S* run=\d+ attempt=\d+"
                          r" claimed by this node", log_of(d)))


def own_in_flight(c, node):
    """(node, job, partition) of the commands running on node that no work
    row carries: runs it runs as planner, never offered (its share).  A
    claimed run keeps its row (claimed) as long as its command runs."""
    flying = c.in_flight(node)
    if not flying:
        return []
    rows = set(c.state.rows("SELECT job, unnest(keys) FROM work WHERE claimed_by = '%s'"
                            % node))
    return [f for f in flying if (f[1], f[2]) not in rows]


def backfill(via, job, frm, to):
    return via.enqueue("backfill", job, "--from", frm, "--to", to)


# ---------------------------------------------------------------- the tests

def test_spread():
    c = Nodes(cmd_job("spread", concurrency=4))
    n1, n2, n3 = c["n1"], c["n2"], c["n3"]
    h.eq(n1.runs(), [], "runs before any request")
    parts = h.days("2025-03-01", "2025-03-30")
    req = backfill(n2, "spread", parts[0], parts[-1])   # on a worker, most likely
    n2.wait_request(req)
    ex = c.executions()
    print("  executions per node: %s" % per_node(ex))
    h.eq(sorted(e["partition"] for e in ex), parts, "partitions executed (once each)")
    h.eq(sorted(per_node(ex)), ["n1", "n2", "n3"], "nodes that ran partitions")
    succeeded_once(n3, req, [("spread", p) for p in parts])
    most = h.overlap_max([(e["start"], e["end"]) for e in ex])
    print("  most executions at once, all nodes: %d (job concurrency 4)" % most)
    h.check(most <= 4, "the job's concurrency 4 was exceeded across nodes: %d at once" % most)
    h.check(most >= 2, "never two executions at once (%d)" % most)
    # the planner ran part of it itself: partitions it ran but never
    # claimed from the work table (docs/several-hosts.md, its share)
    planner = c.planner(n3)
    claimed = claimed_in_log(c[planner])
    own = [e["partition"] for e in ex if e["node"] == planner
           and ("spread", e["partition"]) not in claimed]
    print("  the planner %s ran %d partitions itself, never offered" % (planner, len(own)))
    h.check(own, "the planner %s ran no partition of its own (share), only claims: %r"
            % (planner, per_node(ex)))


def long_run(c, via, req_long):
    """The long partition, in flight on n2 (alive) across a kill or a stop:
    neither given up nor run again, its attempt count unchanged."""
    via.wait_request(req_long)
    lr = [(r["state"], r["attempt"], r["error"]) for r in via.runs("--request", str(req_long))]
    le = [(e["node"], e["partition"], e["attempt"]) for e in c.executions()
          if e["job"] == "long"]
    h.eq(lr, [("succeeded", 1, None)],
         "runs of the long partition, in flight on n2 (alive) across it")
    h.eq(le, [("n2", "2025-04-01", 1)],
         "executions of the long partition, in flight on n2 (alive) across it")


def no_rerun_on_live(ex, victim):
    """A partition ran at most once on the nodes that stayed alive."""
    live = collections.Counter(e["partition"] for e in ex if e["node"] != victim)
    h.eq(sorted(p for p, n in live.items() if n > 1), [],
         "partitions executed more than once on live nodes")


def kill_mid_backfill(victim_role):
    # "long" runs on n2 across the kill and the takeover: a run in flight
    # on a live node must be neither given up nor run again
    c = Nodes(cmd_job("work", concurrency=4)
              + cmd_job("long", concurrency=1, sleep=str(LEASE + 3), extra="  nodes: [n2]\n"))
    planner = c.planner(c["n1"])
    names = list(c.nodes)
    if victim_role == "planner":
        victim = planner
    else:
        victim = [n for n in names if n != planner][-1]
    survivor = [n for n in names if n not in (victim, planner)][0]
    via = c[survivor]
    h.check(victim != "n2", "n2, which runs the long partition, is the victim")
    req_long = backfill(via, "long", "2025-04-01", "2025-04-01")
    c.wait_until(lambda: c.in_flight("n2"), "n2 running the long partition")
    parts = h.days("2025-04-01", "2025-04-30")
    req = backfill(via, "work", parts[0], parts[-1])
    # kill it while it runs something (and after a few have ended)
    c.wait_until(lambda: len(c.executions()) >= 3 and c.in_flight(victim),
                 "%s running a partition after 3 executions" % victim)
    flying = c.in_flight(victim)
    h.check(("n2", "long", "2025-04-01") in c.in_flight("n2"),
            "the long partition is no longer in flight on n2 at the kill")
    t0 = time.monotonic()
    c[victim].kill9()
    last = c.state.rows("SELECT coalesce(max(id), 0) FROM runs")[0][0]
    # the planner's own runs in flight at the kill: commands still running
    # (they outlive the daemon) that no work row carries; nothing claims
    # or finishes as the dead node any more
    own = []
    if victim_role == "planner":
        own = [p for _, job, p in own_in_flight(c, victim) if job == "work"]
        print("  of which run by the planner itself (no work row): %s" % own)
    print("  killed %s (%s) with %d run(s) in flight: %s"
          % (victim, victim_role, len(flying), [p for _, _, p in flying]))
    left = [n for n in names if n != victim]
    if victim_role == "planner":
        def new_planner():
            v = c.view(via)
            if v is None:
                return None
            p = [n for n, x in v.items() if x["role"] == "planner" and n != victim]
            return p[0] if p else None
        newp = c.wait_until(new_planner, "a new planner", guard=GUARD)
        took = time.monotonic() - t0
        print("  %s became planner %.2f s after the kill (lease %d s)" % (newp, took, LEASE))
        h.check(took <= TAKEOVER, "takeover took %.2f s, more than lease + a heartbeat"
                " + 3 s (%.1f s)" % (took, TAKEOVER))
        # the new planner dispatches at once: no wait for the work in
        # flight, which it adopts
        c.wait_until(lambda: c.state.rows("SELECT count(*) FROM runs WHERE id > %d"
                                          % last)[0][0] > 0,
                     "a run dispatched by the new planner")
        took = time.monotonic() - t0
        print("  first run dispatched by the new planner %.2f s after the kill" % took)
        h.check(took <= LEASE + 2.0, "the new planner's first dispatch came %.2f s"
                " after the kill, more than the lease + 2 s" % took)
    # the dead node is declared so, and its runs come back
    v = c.wait_role(via, victim, ("stopped",))
    print("  %s declared stopped %.2f s after the kill" % (victim, time.monotonic() - t0))
    via.wait_request(req)
    v = c.wait_view(left, via=via)
    h.eq(v[victim]["role"], "stopped", "the killed node's role")
    runs = succeeded_once(via, req, [("work", p) for p in parts])
    h.eq(sorted({r["attempt"] for r in runs}), [1],
         "attempts of the request's runs (an interruption counts none)")
    ex = [e for e in c.executions() if e["job"] == "work"]
    print("  executions per node: %s, %d in all" % (per_node(ex), len(ex)))
    no_rerun_on_live(ex, victim)
    # the runs it had in flight were given up and run again elsewhere;
    # those of the live nodes were not (the planner's were adopted)
    interrupted = [r for r in runs if r["state"] == "failed"
                   and "interrupted" in (r["error"] or "")]
    for _, job, p in flying:
        h.soft(any(r["partition"] == p for r in interrupted),
                "partition %s, in flight on %s at the kill, has no interrupted run: %r"
                % (p, victim, [r for r in runs if r["partition"] == p]))
        h.soft(any(e["partition"] == p and e["node"] != victim for e in ex),
                "partition %s was not run again on another node" % p)
    # every interrupted run was the dead node's: one it claimed, or (the
    # planner) one it ran itself or never offered, which the next planner
    # finds running without a work row (docs/several-hosts.md, "How it
    # works"): its error names the node too
    for r in interrupted:
        h.check("node %s stopped" % victim in r["error"],
                "an interrupted run is not one of %s's: %r" % (victim, r))
    for p in own:
        h.soft(any(r["partition"] == p and "node %s stopped (the planner)" % victim
                   in r["error"] for r in interrupted),
               "partition %s, run by the planner %s itself at the kill, has no run"
               " interrupted as the planner's: %r"
               % (p, victim, [r for r in runs if r["partition"] == p]))

    long_run(c, via, req_long)
    no_overlap(c.executions())


def test_kill_planner():
    kill_mid_backfill("planner")


def test_kill_worker():
    kill_mid_backfill("worker")


def test_stop_planner():
    """A planner stopped cleanly (SIGTERM) hands the lease and its runs in
    flight over: the next planner adopts them; nothing is interrupted or
    run twice."""
    c = Nodes(cmd_job("work", concurrency=4)
              + cmd_job("long", concurrency=1, sleep=str(LEASE + 3), extra="  nodes: [n2]\n"))
    old = c.planner(c["n1"])
    h.check(old != "n2", "n2, which runs the long partition, is the planner")
    via = c[[n for n in c.nodes if n not in (old, "n2")][0]]
    req_long = backfill(via, "long", "2025-04-01", "2025-04-01")
    c.wait_until(lambda: c.in_flight("n2"), "n2 running the long partition")
    parts = h.days("2025-04-01", "2025-04-30")
    req = backfill(via, "work", parts[0], parts[-1])
    c.wait_until(lambda: len(c.executions()) >= 3, "3 executions")
    with open(c[old].log, errors="replace") as f:
        mark = len(f.read())
    t0 = time.monotonic()
    c[old].stop()
    stopped = time.monotonic() - t0
    v = c.wait_view([n for n in c.nodes if n != old], via=via)
    newp = [n for n, x in v.items() if x["role"] == "planner"][0]
    took = time.monotonic() - t0
    print("  %s stopped in %.2f s; %s planner %.2f s after the SIGTERM"
          % (old, stopped, newp, took))
    h.check(took <= LEASE + 2.0, "the next planner came %.2f s after the SIGTERM,"
            " more than the lease + 2 s" % took)
    with open(c[old].log, errors="replace") as f:
        said = f.read()[mark:]
    h.check(re.search(r"left to the next planner|hands the lease over", said),
            "%s's log does not say it handed over:\n%s" % (old, said[-3000:]))
    with open(c[newp].log, errors="replace") as f:
        h.check("adopted" in f.read(), "%s's log adopts nothing" % newp)
    via.wait_request(req)
    runs = succeeded_once(via, req, [("work", p) for p in parts])
    h.eq([r for r in runs if r["state"] != "succeeded"], [],
         "runs other than successes across a clean stop")
    ex = [e for e in c.executions() if e["job"] == "work"]
    print("  executions per node: %s, %d in all" % (per_node(ex), len(ex)))
    h.eq(sorted(e["partition"] for e in ex), parts, "partitions executed (once each)")
    long_run(c, via, req_long)
    no_overlap(c.executions())


def test_stop_planner_own():
    """A planner stopped cleanly (SIGTERM) while it runs runs of its own
    (its share, never offered) hands them over as its claims: they finish
    on it, the next planner adopts them; nothing is interrupted, every
    partition runs and succeeds once, no two executions overlap."""
    c = Nodes(cmd_job("slow", concurrency=6, sleep="1.5"))
    old = c.planner(c["n1"])
    via = c[[n for n in c.nodes if n != old][0]]
    parts = h.days("2025-07-01", "2025-07-12")
    req = backfill(via, "slow", parts[0], parts[-1])
    own = c.wait_until(lambda: own_in_flight(c, old),
                       "the planner %s running a partition of its own" % old)
    with open(c[old].log, errors="replace") as f:
        mark = len(f.read())
    c[old].stop()
    with open(c[old].log, errors="replace") as f:
        said = f.read()[mark:]
    print("  %s stopped with runs of its own in flight: %s" % (old, [p for _, _, p in own]))
    h.check(re.search(r"runs this planner runs itself are handed over", said),
            "%s's log does not say it handed its own runs over:\n%s" % (old, said[-3000:]))
    v = c.wait_view([n for n in c.nodes if n != old], via=via)
    newp = [n for n, x in v.items() if x["role"] == "planner"][0]
    via.wait_request(req)
    with open(c[newp].log, errors="replace") as f:
        adopted = f.read()
    for _, _, p in own:
        h.check(re.search(r"job=slow partition=%s .*adopted from the earlier planner:"
                          r" running on node %s" % (p, old), adopted),
                "%s did not adopt partition %s, running on %s:\n%s"
                % (newp, p, old, adopted[-3000:]))
    runs = succeeded_once(via, req, [("slow", p) for p in parts])
    h.eq([r for r in runs if r["state"] != "succeeded"], [],
         "runs other than successes across a clean stop")
    ex = c.executions()
    print("  executions per node: %s, %d in all" % (per_node(ex), len(ex)))
    h.eq(sorted(e["partition"] for e in ex), parts, "partitions executed (once each)")
    for _, _, p in own:
        h.eq([e["node"] for e in ex if e["partition"] == p], [old],
             "nodes that ran partition %s, in flight on the planner at its stop" % p)
    no_overlap(ex)


def test_schedule_once():
    c = Nodes(cmd_job("daily", concurrency=3, sleep="0.1", start="2026-01-01", end=None,
                      catchup="true"))
    n1, n2, n3 = c["n1"], c["n2"], c["n3"]
    h.eq(n2.runs(), [], "runs before anything is due")

    def done(via, n):
        def f():
            rs = via.try_json("runs", "--job", "daily")
            if rs is None or any(r["state"] in ("queued", "running") for r in rs):
                return None
            return rs if len([r for r in rs if r["state"] == "succeeded"]) >= n else None
        return f

    c.set_clock("2026-01-08T00:00:00Z")   # 2026-01-01 .. 2026-01-07 are due
    c.wait_until(done(n2, 7), "7 scheduled partitions succeeded")
    # a duplicate from another node would show within a heartbeat or two
    time.sleep(2 * HEARTBEAT)
    first = h.days("2026-01-01", "2026-01-07")
    rs = n3.runs("--job", "daily")
    h.eq(sorted(r["partition"] for r in rs), first, "the schedule's runs (one per partition)")
    h.eq({r["state"] for r in rs}, {"succeeded"}, "their states")
    h.eq(sorted(e["partition"] for e in c.executions()), first, "partitions executed")
    # the next planner carries on from the same watermark
    old = c.planner(n1)
    c[old].kill9()
    left = [n for n in c.nodes if n != old]
    c.wait_role(c[left[0]], old, ("stopped",))
    c.wait_view(left, via=c[left[0]])
    c.set_clock("2026-01-09T00:00:00Z")   # 2026-01-08 is due
    via = c[left[0]]
    c.wait_until(done(via, 8), "the 8th scheduled partition succeeded")
    time.sleep(2 * HEARTBEAT)
    rs = via.runs("--job", "daily")
    h.eq(sorted(r["partition"] for r in rs), first + ["2026-01-08"],
         "the schedule's runs after the planner changed")
    h.eq(sorted(e["partition"] for e in c.executions()), first + ["2026-01-08"],
         "partitions executed after the planner changed")


def test_deposed_planner():
    c = Nodes(cmd_job("work", concurrency=4))
    old = c.planner(c["n1"])
    others = [n for n in c.nodes if n != old]
    via = c[others[0]]
    parts = h.days("2025-05-01", "2025-05-20")
    req = backfill(via, "work", parts[0], parts[-1])
    # stopped while it runs a partition of its own (its share, no work
    # row): once continued, it must not record it
    own = []
    for _ in range(20):
        c.wait_until(lambda: own_in_flight(c, old),
                     "the planner %s running a partition of its own" % old)
        c[old].signal(signal.SIGSTOP)
        own = own_in_flight(c, old)   # stable now, but for ended commands
        if own:
            break
        c[old].signal(signal.SIGCONT)
    h.check(own, "the planner %s was never stopped with a run of its own in flight" % old)
    print("  %s stopped with runs of its own in flight: %s" % (old, [p for _, _, p in own]))
    t0 = time.monotonic()
    v = c.wait_role(via, old, ("stopped",))
    newp = [n for n, x in v.items() if x["role"] == "planner"]
    print("  %s stopped; %s declared dead after %.2f s, planner now %s"
          % (old, old, time.monotonic() - t0, newp))
    h.check(newp and newp[0] != old, "no new planner while %s is stopped: %r" % (old, v))
    via.wait_request(req)
    runs = succeeded_once(via, req, [("work", p) for p in parts])
    for _, _, p in own:
        h.check(any(r["partition"] == p and r["state"] == "failed" and
                    "node %s stopped (the planner)" % old in (r["error"] or "")
                    for r in runs),
                "partition %s, run by the stopped planner %s itself, was not queued"
                " again as interrupted: %r" % (p, old, [r for r in runs if r["partition"] == p]))
    before = c.state.dump()
    with open(c[old].log, errors="replace") as f:
        mark = len(f.read())
    c[old].signal(signal.SIGCONT)
    # it comes back as a worker, having written nothing as planner
    c.wait_view(list(c.nodes), via=via, planner=newp[0])
    c.wait_view(list(c.nodes), via=c[old], planner=newp[0])
    after = c.state.dump()
    h.eq(after, before, "the state store's tables after the deposed planner woke")
    with open(c[old].log, errors="replace") as f:
        woke = f.read()[mark:]
    h.check(re.search(r"depos|no longer the planner|stops being planner", woke, re.I),
            "%s's log does not say it was deposed:\n%s" % (old, woke[-3000:]))
    if not re.search(r"depos", woke, re.I):
        print("  note: %s's log does not use the word \"deposed\"" % old)
    h.check(re.search(r"result is dropped|ran as planner are cancelled", woke),
            "%s's log does not say it dropped its own runs:\n%s" % (old, woke[-3000:]))
    no_overlap(c.executions())
    # and it works as a worker again
    more = h.days("2025-06-01", "2025-06-24")
    n0 = len(c.executions())
    req = backfill(c[old], "work", more[0], more[-1])
    c[old].wait_request(req)
    succeeded_once(via, req, [("work", p) for p in more])
    ran = per_node(c.executions()[n0:])
    print("  after it woke: executions per node %s" % ran)
    h.check(ran.get(old, 0) >= 1, "the deposed planner ran nothing as a worker: %r" % ran)


def log_of(d):
    with open(d.log, errors="replace") as f:
        return f.read()


def test_cut_off():
    role = "node_cut_%d" % (_SEQ[0] + 1)
    c0 = tp.cluster()
    c0.psql("CREATE ROLE %s LOGIN PASSWORD '%s'; GRANT etl TO %s; "
            "ALTER ROLE %s SET role = 'etl'" % (role, tp.PASSWORD, role, role), db="postgres")
    c = Nodes(cmd_job("work", concurrency=4), users={"n3": role})
    n1, n3 = c["n1"], c["n3"]
    h.check(c.planner(n1) != "n3", "n3 took the lease first")
    rc, text = n3.status_text()
    h.check("lost" not in text, "n3's status before the cut: %s" % text)
    h.check("reachable again" not in log_of(n3),
            "n3 says the state store is reachable again, never having lost it:\n%s"
            % n3.log_tail())
    c0.psql("ALTER ROLE %s NOLOGIN; SELECT count(pg_terminate_backend(pid)) "
            "FROM pg_stat_activity WHERE usename = '%s'" % (role, role), db="postgres")
    t0 = time.monotonic()
    # it knows: status names the state store (docs/several-hosts.md:
    # "state store lost since ...")
    said = c.wait_until(lambda: (lambda rc, t: (rc, t) if "state store" in t else None)(
        *n3.status_text()), "n3's status saying the state store is lost")
    print("  n3 cut off; its status after %.2f s: exit %d: %s"
          % (time.monotonic() - t0, said[0], said[1].strip().splitlines()[:3]))
    h.soft("state store lost" in said[1],
           "n3's status does not say \"state store lost\": exit %d: %s" % said)
    h.check(n3.alive(), "n3 exited when cut off")
    parts = h.days("2025-07-01", "2025-07-20")
    n0 = len(c.executions())
    req = backfill(n1, "work", parts[0], parts[-1])
    n1.wait_request(req)
    succeeded_once(n1, req, [("work", p) for p in parts])
    ran = per_node(c.executions()[n0:])
    print("  while n3 was cut off: executions per node %s" % ran)
    h.check("n3" not in ran, "n3 ran partitions while cut off: %r" % ran)
    c.wait_role(n1, "n3", ("stopped",))
    # the role may log in again: n3 comes back by itself
    c0.psql("ALTER ROLE %s LOGIN" % role, db="postgres")
    t0 = time.monotonic()
    c.wait_view(list(c.nodes), via=n1)
    c.wait_until(lambda: "lost" not in n3.status_text()[1], "n3's status back to normal")
    print("  n3 back after %.2f s" % (time.monotonic() - t0))
    c.wait_until(lambda: "the state store is reachable again" in log_of(n3),
                 "n3's log saying the state store is reachable again")
    more = h.days("2025-08-01", "2025-08-30")
    n0 = len(c.executions())
    req = backfill(n3, "work", more[0], more[-1])
    n3.wait_request(req)
    succeeded_once(n1, req, [("work", p) for p in more])
    ran = per_node(c.executions()[n0:])
    print("  once back: executions per node %s" % ran)
    h.check(ran.get("n3", 0) >= 1, "n3 ran nothing once back: %r" % ran)
    no_overlap(c.executions())


NODE_FIELDS = {"name", "role", "last_seen", "running", "config_hash"}


def warnings(text):
    return [l for l in text.splitlines() if re.search(r"warn|differ", l, re.I)]


def test_same_state_everywhere():
    c = Nodes(cmd_job("work", concurrency=4) + cmd_job("other", concurrency=2))
    base = {j["name"]: j["succeeded"] for j in c["n1"].json("status")["jobs"]}
    parts = h.days("2025-09-01", "2025-09-12")
    req = backfill(c["n3"], "work", parts[0], parts[-1])
    c["n3"].wait_request(req)
    req2 = backfill(c["n2"], "other", "2025-09-01", "2025-09-03")
    c["n1"].wait_request(req2)
    counts = ("name", "paused", "queued", "running", "succeeded", "failed", "blocked")
    seen = {}
    for name, d in c.nodes.items():
        st = d.json("status")
        seen[name] = ([{k: j.get(k) for k in counts} for j in st["jobs"]],
                      [(r["id"], r["job"], r["partition"], r["state"]) for r in d.runs()])
    for name in ("n2", "n3"):
        h.eq(seen[name], seen["n1"], "status counts and runs on %s against n1" % name)
    jobs = {j["name"]: j for j in seen["n1"][0]}
    h.eq((jobs["work"]["succeeded"] - base["work"], jobs["other"]["succeeded"] - base["other"]),
         (12, 3), "succeeded counts in status, less those of the start")
    st = c["n2"].json("status")
    nodes = st["nodes"]
    h.eq(sorted(n["name"] for n in nodes), ["n1", "n2", "n3"], "nodes in status")
    for n in nodes:
        h.eq(set(n) & NODE_FIELDS, NODE_FIELDS, "fields of node %r" % n)
        h.check(n["role"] in ("planner", "worker"), "role of %r" % n)
        h.check(isinstance(n["running"], int) and n["running"] >= 0, "running of %r" % n)
        h.check(isinstance(n["config_hash"], str) and n["config_hash"], "config_hash of %r" % n)
        h.parse_iso(n["last_seen"])
    h.eq(sorted(n["role"] for n in nodes), ["planner", "worker", "worker"], "roles")
    h.eq(len({n["config_hash"] for n in nodes}), 1, "config hashes of identical configurations")
    rc, text = c["n2"].status_text()
    h.eq(warnings(text), [], "status warnings with one configuration")
    # a fourth node with another configuration: status warns
    c.add("n4", settings={"max_catchup": 7})
    c.wait_view(["n1", "n2", "n3", "n4"], via=c["n1"])
    v = c.view(c["n1"])
    h.check(v["n4"]["config_hash"] != v["n1"]["config_hash"],
            "n4's different configuration has the same config_hash: %r" % v)
    for name in ("n1", "n4"):
        rc, text = c[name].status_text()
        h.eq(rc, 0, "status on %s with differing configurations: exit" % name)
        w = warnings(text)
        print("  status on %s warns: %r" % (name, w))
        h.check(w and "n4" in text,
                "status on %s does not warn about n4's configuration:\n%s" % (name, text))
    c["n4"].stop()
    c.wait_role(c["n1"], "n4", ("stopped",))
    rc, text = c["n1"].status_text()
    h.eq(warnings(text), [], "status warnings once n4 stopped")


def test_pinned():
    c = Nodes(cmd_job("pinned", concurrency=4, extra="  nodes: [n1]\n")
              + cmd_job("free", concurrency=4))
    parts = h.days("2025-10-01", "2025-10-16")
    req = backfill(c["n3"], "pinned", parts[0], parts[-1])
    req2 = backfill(c["n2"], "free", parts[0], parts[-1])
    c["n3"].wait_request(req)
    c["n3"].wait_request(req2)
    succeeded_once(c["n2"], req, [("pinned", p) for p in parts])
    succeeded_once(c["n2"], req2, [("free", p) for p in parts])
    ex = c.executions()
    pinned = per_node([e for e in ex if e["job"] == "pinned"])
    free = per_node([e for e in ex if e["job"] == "free"])
    print("  pinned: %s; free: %s" % (pinned, free))
    h.eq(pinned, {"n1": len(parts)}, "nodes that ran the pinned job")
    h.check(set(free) - {"n1"}, "the free job ran on n1 only: %r" % free)


def isolated(test):
    """The test, then its nodes' leftovers cleaned up, pass or fail."""
    def run():
        before = len(_CLUSTERS)
        ok = False
        try:
            test()
            ok = True
        except SystemExit:
            ok = True   # a skip: nothing to keep
            raise
        finally:
            for c in _CLUSTERS[before:]:
                c.close(ok)
            del _CLUSTERS[before:]
    run.__name__ = test.__name__
    return run


TESTS = [test_spread, test_kill_planner, test_kill_worker, test_stop_planner,
         test_stop_planner_own, test_schedule_once,
         test_deposed_planner, test_cut_off, test_same_state_everywhere, test_pinned]


def main():
    h.binaries()
    try:
        tp.cluster()
        only = sys.argv[1:]
        h.main([isolated(t) for t in TESTS if not only or t.__name__ in only])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
