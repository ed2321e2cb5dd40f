#!/usr/bin/env python3
"""cluster_bench.py - several hosts (issue 14): throughput, failover, idle load.

    tests/bench/cluster_bench.py [--runs N] [--n N] [--lease S] [--idle-seconds S] ...
    tests/bench/cluster_bench.py --smoke      # tiny sizes, checks results only

Starts a throwaway PostgreSQL server as pg_bench.py does (initdb/pg_ctl,
as `postgres` when root, Unix socket in a temporary folder, no TCP, the
server's default durability) and measures, in one run:

  throughput  N one-row partitions of an hourly SQL job (DELETE + INSERT
              of its key into a SQLite warehouse of each node's own, so
              that the warehouse is no shared bottleneck), end to end:
              `backfill` on the planner, then `wait` until the request is
              done.  Configurations, alternated: one node on the SQLite
              state store (the single-host baseline), and one, two and
              three nodes on one PostgreSQL state store.  Reported as
              partitions/s and as ratios to the SQLite node, with the
              CPU time all the processes spent per partition (the
              nodes, their threads, and every process of the
              PostgreSQL server): a figure less shaken than wall time
              by what else the machine runs.  --breakdown splits it by
              role: the nodes' main threads and their other threads
              (the runs), the server's store connections, its cluster
              connections (application_name) and the rest.
  failover    three nodes backfill a command job (`sleep 0.05` per
              partition); the planner is killed (-9) mid-request.
              Reported: the kill to the moment another node is listed as
              planner (status --json, polled every 50 ms), and the kill
              to the first run that the new planner dispatched (the
              earliest started_at after the kill among runs that were not
              on offer at the kill: the work table is read right after it).
  idle        three idle nodes: the state database's transactions per
              second (pg_stat_database.xact_commit + xact_rollback) over
              --idle-seconds, after --idle-warmup (12 s: PostgreSQL
              reports a backend's transactions up to 10 s late), with the
              default lease unless --idle-lease; and the nodes' CPU time
              over the same window.

Every measurement is checked: each partition of the request succeeded once
(runs --json), and the warehouses hold each key exactly once.  Targets
(issue 14): three nodes >= 1,500 partitions/s on a 2-core machine and no
worse than 2x the SQLite node per partition; failover <= lease + 2 s;
idle <= 5 transactions/s.  They are reported, not asserted: the exit code
is 0 when every result is right, 1 when one is wrong, 77 when PostgreSQL
cannot be started (or this backfilld cannot run `state: postgres:` yet).

Each configuration's run has a database of its own, dropped after it, and
starts after a CHECKPOINT, so that no run pays for an earlier one's
autovacuum or checkpoint.

Folders (the nodes', the server's) go under --dir, /dev/shm by default:
on tmpfs, no fsync costs anything, so the figures compare the stores'
and the coordination's work, not the disk's.  KEEP_TMP=1 keeps them.
"""

import argparse
import collections
import datetime
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness as h            # noqa: E402
import test_cluster as tc      # noqa: E402

SKIP = 77

SEED = "CREATE TABLE hourly (hour TEXT PRIMARY KEY, n INTEGER);"

HOURLY_JOB = """
- name: hourly_rows
  warehouse: w
  partition: hour
  end: 2009-12-31T23
  catchup: false
  concurrency: %(c)d
  retries: 0
  max_backfill: 500000
  sql: |
    DELETE FROM hourly WHERE hour = :partition;
    INSERT INTO hourly (hour, n) VALUES (:partition, 1);
"""

SLOW_JOB = """
- name: slow
  partition: hour
  end: 2009-12-31T23
  catchup: false
  concurrency: %(c)d
  retries: 0
  max_backfill: 500000
  command: ["/bin/sleep", "0.05"]
"""

IDLE_JOB = """
- name: idle
  warehouse: w
  partition: day
  start: 2000-01-01
  end: 2000-12-31
  catchup: false
  sql: |
    DELETE FROM hourly WHERE hour = :partition;
"""

CONFIGS = [("sqlite", 1), ("pg", 1), ("pg", 2), ("pg", 3)]
LABEL = {("sqlite", 1): "SQLite store, 1 node", ("pg", 1): "PostgreSQL store, 1 node",
         ("pg", 2): "PostgreSQL store, 2 nodes", ("pg", 3): "PostgreSQL store, 3 nodes"}


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def cpu_seconds(pids):
    """utime + stime of these processes (their threads included), plus
    cutime + cstime (their children that ended and were waited for: the
    PostgreSQL backends and autovacuum workers that exit during a run
    count through the postmaster's), in s."""
    tick = os.sysconf("SC_CLK_TCK")
    t = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                p = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        t += (int(p[11]) + int(p[12]) + int(p[13]) + int(p[14])) / tick
    return t


def server_pids(server):
    """The PostgreSQL server's processes: the postmaster and its children."""
    try:
        with open(os.path.join(server.data, "postmaster.pid")) as f:
            master = int(f.readline())
    except (OSError, ValueError):
        return []
    pids = [master]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                        pids.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return pids


def main_thread_seconds(pid):
    """utime + stime of the process's main thread alone (its event loop:
    scheduling, the stores' client side, the coordination), in s."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
            p = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(p[11]) + int(p[12])) / tick


def backend_roles(server, db):
    """{pid: role} of the server's backends connected to db: "store" (a
    node's state store connection, application_name backfilld) or
    "cluster" (its coordination connection, backfilld-cluster)."""
    rows = server.psql("SELECT pid, application_name FROM pg_stat_activity"
                       " WHERE datname = '%s'" % db, db="postgres")
    roles = {}
    for pid, app in rows:
        if app == "backfilld":
            roles[int(pid)] = "store"
        elif app == "backfilld-cluster":
            roles[int(pid)] = "cluster"
    return roles


BREAKDOWN = ("nodes: main threads", "nodes: other threads (the runs)",
             "server: store connections", "server: cluster connections", "server: the rest")


def hour_keys(first, n):
    t0 = datetime.datetime.fromisoformat(first)
    return [(t0 + datetime.timedelta(hours=i)).strftime("%Y-%m-%dT%H") for i in range(n)]


class Bench:
    def __init__(self, args):
        self.args = args
        self.server = None
        self.seq = 0
        self.open = []
        self.breakdowns = collections.defaultdict(list)

    # -- set-up

    def pg_server(self):
        if self.server is None:
            from pg_bench import Cluster
            ns = argparse.Namespace(port=self.args.port, shared_buffers="256MB")
            self.server = Cluster(ns)
        return self.server

    def state(self):
        s = self.pg_server()
        self.seq += 1
        return tc.SharedState(s.bindir, s.sockdir, self.args.port, s.pwfile,
                              "bench_%d" % self.seq)

    def nodes(self, jobs, n, lease, clock=None):
        """n nodes on a fresh PostgreSQL database, all listed live."""
        c = tc.Nodes(jobs, names=["n%d" % (i + 1) for i in range(n)], lease=lease,
                     clock=clock, state=self.state(), warehouses={"w": SEED},
                     settings={"max_concurrency": self.args.max_concurrency,
                               "max_backfill": 500000})
        self.open.append(c)
        return c

    def sqlite_node(self, jobs):
        st = h.SqliteState(None)
        d = tc.Node(jobs=jobs, warehouses={"w": SEED}, clock=None, name="sqlite",
                    settings={"max_concurrency": self.args.max_concurrency,
                              "max_backfill": 500000}, start=False, state=st)
        st.d = d
        d.start()
        return d

    def close(self, c, ok=True):
        for d in c.nodes.values():
            if d.alive():
                d.stop(expect_rc=None)
        c.close(ok)
        for d in c.nodes.values():
            d.close(keep=not ok)
        if c in self.open:
            self.open.remove(c)
        if ok and not os.environ.get("KEEP_TMP"):
            # no autovacuum of a finished run's tables during the next
            c.state.sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % c.state.db,
                        db="postgres")

    # -- checks

    def check_request(self, via, req, job, keys, warehouses=()):
        """Each key succeeded once in request req; the warehouses hold each
        key once among them.  Returns {node: rows} of the warehouses."""
        runs = via.runs("--request", str(req))
        ok = collections.Counter(r["partition"] for r in runs
                                 if r["job"] == job and r["state"] == "succeeded")
        bad = [k for k in keys if ok.get(k) != 1]
        if bad or len(ok) != len(keys):
            raise BenchError("request %d: %d of %d partitions did not succeed exactly once "
                             "(first: %r)" % (req, len(bad), len(keys), bad[:5]))
        left = [r for r in runs if r["state"] in ("queued", "running")]
        if left:
            raise BenchError("request %d: %d runs still queued or running" % (req, len(left)))
        split = {}
        if warehouses:
            want = set(keys)
            seen = collections.Counter()
            for name, d in warehouses:
                con = sqlite3.connect(d.warehouses["w"], timeout=30)
                rows = [r[0] for r in con.execute("SELECT hour FROM hourly WHERE n = 1")]
                con.close()
                rows = [k for k in rows if k in want]
                split[name] = len(rows)
                seen.update(rows)
            if set(seen) != want or any(v != 1 for v in seen.values()):
                raise BenchError("warehouses: %d of %d keys, %d held twice"
                                 % (len(set(seen) & want), len(want),
                                    sum(1 for v in seen.values() if v > 1)))
        return runs, split

    # -- measurements

    def throughput(self, kind, n, keys):
        a = self.args
        jobs = HOURLY_JOB % {"c": a.concurrency}
        if kind == "sqlite":
            d = self.sqlite_node(jobs)
            via, members, c = d, [("sqlite", d)], None
        else:
            c = self.nodes(jobs, n, a.lease)
            via = c[c.planner(c["n1"])]
            members = list(c.nodes.items())
        ok = False
        try:
            if self.server is not None:
                # every run starts without a checkpoint owed
                self.server.psql("CHECKPOINT", db="postgres")
            pids = [m.proc.pid for _, m in members]
            if kind != "sqlite":
                pids += server_pids(self.server)
            nodes = [m.proc.pid for _, m in members]
            c0 = cpu_seconds(pids)
            each0 = {p: cpu_seconds([p]) for p in pids}
            main0 = {p: main_thread_seconds(p) for p in nodes}
            t0 = time.monotonic()
            req = via.enqueue("backfill", "hourly_rows", "--from", keys[0], "--to", keys[-1])
            via.wait_request(req, timeout=a.guard)
            dt = time.monotonic() - t0
            if kind != "sqlite":
                # the server's processes born during the run (their whole
                # time is the run's; those that ended are the postmaster's)
                born = [p for p in server_pids(self.server) if p not in pids]
                pids += born
            cpu = cpu_seconds(pids) - c0
            if a.breakdown:
                roles = backend_roles(self.server, c.state.db) if c is not None else {}
                parts = dict.fromkeys(BREAKDOWN, 0.0)
                for p in pids:
                    used = cpu_seconds([p]) - each0.get(p, 0.0)
                    if p in main0:
                        main = main_thread_seconds(p) - main0[p]
                        parts[BREAKDOWN[0]] += main
                        parts[BREAKDOWN[1]] += used - main
                    elif roles.get(p) == "store":
                        parts[BREAKDOWN[2]] += used
                    elif roles.get(p) == "cluster":
                        parts[BREAKDOWN[3]] += used
                    else:
                        parts[BREAKDOWN[4]] += used
                self.breakdowns[(kind, n)].append(parts)
            _, split = self.check_request(via, req, "hourly_rows", keys, members)
            ok = True
        finally:
            if c is None:
                if d.alive():
                    d.stop(expect_rc=None)
                d.close(keep=not ok)
            else:
                self.close(c, ok)
        return dt, split, cpu

    def failover(self):
        a = self.args
        c = self.nodes(SLOW_JOB % {"c": a.concurrency}, 3, a.lease)
        ok = False
        try:
            old = c.planner(c["n1"])
            via = c[[n for n in c.nodes if n != old][0]]
            keys = hour_keys("1995-01-01T00", a.failover_n)
            req = via.enqueue("backfill", "slow", "--from", keys[0], "--to", keys[-1])

            def progressed():
                st = via.try_json("status")
                j = [x for x in (st or {}).get("jobs", []) if x["name"] == "slow"]
                return j and j[0]["succeeded"] >= a.kill_after
            c.wait_until(progressed, "%d runs succeeded before the kill" % a.kill_after,
                         guard=a.guard)
            t_wall = time.time()
            t0 = time.monotonic()
            c[old].kill9()
            on_offer = {r[0] for r in c.state.rows("SELECT id FROM work")}

            def new_planner():
                v = c.view(via)
                p = [n for n, x in (v or {}).items() if x["role"] == "planner" and n != old]
                return p[0] if p else None
            newp = c.wait_until(new_planner, "a new planner", guard=a.guard)
            takeover = time.monotonic() - t0
            via.wait_request(req, timeout=a.guard)
            runs, _ = self.check_request(via, req, "slow", keys)
            started = [h.parse_iso(r["started_at"]).timestamp() for r in runs
                       if r["started_at"] and r["id"] not in on_offer]
            after = [s for s in started if s > t_wall]
            first = min(after) - t_wall if after else None
            interrupted = sum(1 for r in runs if r["state"] == "failed"
                              and "interrupted" in (r["error"] or ""))
            ok = True
        finally:
            self.close(c, ok)
        return {"takeover_s": takeover, "first_run_s": first, "new_planner": newp,
                "old_planner": old, "interrupted": interrupted, "partitions": len(keys)}

    def idle(self):
        a = self.args
        c = self.nodes(IDLE_JOB, 3, a.idle_lease)
        ok = False
        try:
            # nothing queued or running, every node listed: then measure
            time.sleep(a.idle_warmup)
            db = c.state.db

            def xacts():
                r = c.state.sql("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                "WHERE datname = '%s'" % db, db="postgres")
                return int(r[0][0])

            def cpu():
                tick = os.sysconf("SC_CLK_TCK")
                t = 0
                for d in c.nodes.values():
                    with open("/proc/%d/stat" % d.proc.pid) as f:
                        p = f.read().rsplit(")", 1)[1].split()
                    t += (int(p[11]) + int(p[12])) / tick
                return t
            x0, c0, t0 = xacts(), cpu(), time.monotonic()
            time.sleep(a.idle_seconds)
            x1, c1, t1 = xacts(), cpu(), time.monotonic()
            for d in c.nodes.values():
                d.assert_alive("after the idle window")
            runs = c["n1"].runs()
            ok = True
        finally:
            self.close(c, ok)
        el = t1 - t0
        return {"tx_per_s": (x1 - x0) / el, "seconds": el, "cpu_ms_per_s": 1000 * (c1 - c0) / el,
                "runs": len(runs)}


def table(rows, head):
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    out = ["| " + " | ".join(str(x).ljust(w[i]) for i, x in enumerate(head)) + " |",
           "|" + "|".join("-" * (n + 2) for n in w) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x).rjust(w[i]) if i else str(x).ljust(w[i])
                                     for i, x in enumerate(r)) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, checks results only")
    ap.add_argument("--runs", type=int, default=3, help="throughput runs of each configuration")
    ap.add_argument("--n", type=int, default=6000, help="partitions per throughput run")
    ap.add_argument("--concurrency", type=int, default=48,
                    help="the jobs' concurrency (max_concurrency too): room for"
                         " every node (--concurrency 4 measures the latency of"
                         " four runs in flight in the whole cluster)")
    ap.add_argument("--lease", type=int, default=3, help="lease (s) for throughput and failover")
    ap.add_argument("--failover-n", type=int, default=600)
    ap.add_argument("--kill-after", type=int, default=60,
                    help="runs succeeded before the planner is killed")
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    # longer than PostgreSQL's statistics lag: a backend reports its
    # transactions to pg_stat_database at most once a second and, once
    # idle, up to 10 s later (PGSTAT_IDLE_INTERVAL), so that after a 3 s
    # warm-up the nodes' start-up (schema, registration, loading the
    # state) was still counted in the window (about 7 of 9 tx/s)
    ap.add_argument("--idle-warmup", type=float, default=12.0)
    ap.add_argument("--idle-lease", type=int, default=None,
                    help="lease (s) of the idle nodes (default: the daemon's, 10 s)")
    ap.add_argument("--skip", default="", help="comma list of: throughput,failover,idle")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the folders go (default /dev/shm)")
    ap.add_argument("--port", type=int, default=54341)
    ap.add_argument("--build", help="build folder (else $BACKFILLD/$BACKFILLCTL or build/)")
    ap.add_argument("--guard", type=float, default=600.0, help="failure guard (s)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--breakdown", action="store_true",
                    help="also split each configuration's CPU per partition by role: the"
                         " nodes' main threads and their other threads (the runs), the"
                         " server's store connections, cluster connections and the rest"
                         " (always with --smoke)")
    a = ap.parse_args()
    if a.smoke:
        a.runs, a.n, a.failover_n, a.kill_after = 1, 200, 150, 10
        a.idle_seconds, a.idle_warmup = 3.0, 0.5
        a.breakdown = True
    a.max_concurrency = a.concurrency
    if a.build:
        a.build = os.path.abspath(a.build)
        os.environ["BACKFILLD"] = os.path.join(a.build, "daemon", "backfilld")
        os.environ["BACKFILLCTL"] = os.path.join(a.build, "daemon", "backfillctl")
    if a.dir:
        tempfile.tempdir = a.dir
    h.binaries()
    skip = set(filter(None, a.skip.split(",")))
    b = Bench(a)
    res = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_start": loadavg()}}
    try:
        b.pg_server()
        res["machine"]["postgres"] = b.server.version
        log("cluster_bench: PostgreSQL %s, %d CPUs, load %s, folders in %s"
            % (b.server.version, os.cpu_count(), loadavg(), a.dir or tempfile.gettempdir()))
        if "throughput" not in skip:
            keys = hour_keys("1990-01-01T00", a.n)
            times = collections.defaultdict(list)
            cpus = collections.defaultdict(list)
            splits = {}
            for i in range(a.runs):
                order = CONFIGS[i % len(CONFIGS):] + CONFIGS[:i % len(CONFIGS)]
                for kind, n in order:
                    dt, split, cpu = b.throughput(kind, n, keys)
                    times[(kind, n)].append(dt)
                    cpus[(kind, n)].append(cpu)
                    splits[(kind, n)] = split
                    log("  %-26s run %d: %7.2f s  %7.0f partitions/s  %4.0f us CPU/partition  %s"
                        % (LABEL[(kind, n)], i + 1, dt, a.n / dt, 1e6 * cpu / a.n, split))
            res["throughput"] = {LABEL[k]: {"seconds": v, "cpu_seconds": cpus[k],
                                            "split": splits[k]}
                                 for k, v in times.items()}
            for k, parts in b.breakdowns.items():
                res["throughput"][LABEL[k]]["breakdown_cpu_seconds"] = parts
        if "failover" not in skip:
            log("  failover: %d partitions of `sleep 0.05`, kill -9 of the planner after %d"
                % (a.failover_n, a.kill_after))
            res["failover"] = b.failover()
            log("  %r" % res["failover"])
        if "idle" not in skip:
            log("  idle: 3 nodes, %.0f s" % a.idle_seconds)
            res["idle"] = b.idle()
            log("  %r" % res["idle"])
    except (BenchError, h.TestFailure) as e:
        print("cluster_bench: FAIL: %s" % e, flush=True)
        for c in list(b.open):
            for d in c.nodes.values():
                print(d.log_tail(30))
            b.close(c, ok=False)
        return 1
    finally:
        for c in list(b.open):
            b.close(c, ok=False)
        if b.server is not None:
            b.server.close(keep=bool(os.environ.get("KEEP_TMP")))
    res["machine"]["load_end"] = loadavg()
    report(a, res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def report(a, res):
    print()
    print("cluster_bench%s: load average %s at the start, %s at the end"
          % (" --smoke (no timing claims)" if a.smoke else "",
             res["machine"]["load_start"], res["machine"]["load_end"]))
    targets = []
    if "throughput" in res:
        med = {k: statistics.median(v["seconds"]) for k, v in res["throughput"].items()}
        mcpu = {k: statistics.median(v["cpu_seconds"]) for k, v in res["throughput"].items()}
        base = med[LABEL[("sqlite", 1)]]
        cbase = mcpu[LABEL[("sqlite", 1)]]
        rows = []
        for k in CONFIGS:
            lab = LABEL[k]
            t = med[lab]
            rows.append((lab, a.n, "%.2f" % t, "%.0f" % (a.n / t), "%.2f" % (base / t),
                         "%.2f" % (t / base), "%.0f" % (1e6 * mcpu[lab] / a.n),
                         "%.2f" % (mcpu[lab] / cbase),
                         " ".join("%s:%d" % kv for kv in sorted(res["throughput"][lab]["split"].items()))))
        print()
        print("%d one-row hourly partitions (SQL, a SQLite warehouse per node), "
              "concurrency %d, lease %d s, median of %d:" % (a.n, a.concurrency, a.lease, a.runs))
        print(table(rows, ("configuration", "partitions", "seconds", "partitions/s",
                           "rate vs SQLite", "time/partition vs SQLite", "CPU us/partition",
                           "CPU vs SQLite", "per node")))
        if any("breakdown_cpu_seconds" in v for v in res["throughput"].values()):
            brows = []
            for k in CONFIGS:
                v = res["throughput"][LABEL[k]]
                brows.append([LABEL[k]] + ["%.0f" % (1e6 * statistics.median(
                    p[name] for p in v["breakdown_cpu_seconds"]) / a.n) for name in BREAKDOWN])
            print()
            print("Where the CPU goes, us per partition (medians; the nodes' threads from"
                  " /proc/PID/task, the server's backends by application_name):")
            print(table(brows, ("configuration",) + BREAKDOWN))
        t3 = med[LABEL[("pg", 3)]]
        targets.append(("3 nodes: partitions/s", "%.0f" % (a.n / t3), ">= 1,500",
                        a.n / t3 >= 1500))
        targets.append(("3 nodes: time per partition vs the SQLite node", "%.2fx" % (t3 / base),
                        "<= 2x", t3 / base <= 2))
        c3 = mcpu[LABEL[("pg", 3)]]
        targets.append(("3 nodes: CPU of every process per partition vs the SQLite node",
                        "%.2fx" % (c3 / cbase), "<= 2x", c3 / cbase <= 2))
    if "failover" in res:
        f = res["failover"]
        first = f["first_run_s"]
        targets.append(("failover: kill -9 to a new planner listed", "%.2f s" % f["takeover_s"],
                        "", None))
        targets.append(("failover: kill -9 to the new planner's first run",
                        "%.2f s" % first if first is not None else "none",
                        "<= lease + 2 s = %d s" % (a.lease + 2),
                        first is not None and first <= a.lease + 2))
    if "idle" in res:
        i = res["idle"]
        targets.append(("idle: 3 nodes, state database transactions/s (lease %s)"
                        % ("%d s" % a.idle_lease if a.idle_lease else "default"),
                        "%.2f" % i["tx_per_s"], "<= 5", i["tx_per_s"] <= 5))
        targets.append(("idle: 3 nodes, CPU ms per second together", "%.1f" % i["cpu_ms_per_s"],
                        "", None))
    print()
    print(table([(t, m, g, "" if ok is None else ("yes" if ok else "NO"))
                 for t, m, g, ok in targets], ("measure", "measured", "target", "met")))
    if "failover" in res:
        f = res["failover"]
        print("\nfailover: %s killed, %s planner; %d runs interrupted and run again"
              % (f["old_planner"], f["new_planner"], f["interrupted"]))


if __name__ == "__main__":
    sys.exit(main())
