#!/usr/bin/env python3
"""Several hosts: the coordination module alone (daemon/cluster_pg.c).

Nodes are tests/cluster_probe processes (CLUSTER_PROBE) that load
cluster_pg_driver from the PostgreSQL module (PG_MODULE) and run it on a
libuv loop, on a throwaway PostgreSQL server started as test_postgres.py
starts one (exit 77 without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1).
Each test gets a fresh database with the PostgreSQL store's schema
(sql/pg/*.sql, in order: the nodes and lease tables come with
001_init.sql, work and mailbox with 002_cluster.sql).

What it checks:
  - one node takes the lease; after it is killed (-9), another takes it
    over within the lease and a heartbeat, with the generation one higher;
  - many nodes claiming at once never claim one offer twice, and every
    offer is claimed and finished once;
  - a node stopped (SIGSTOP) past its lease is declared dead: its claimed
    runs come back to the planner failed, "interrupted: node N stopped";
    continued, its result is refused and it registers again;
  - a planner stopped past its lease is deposed when continued, and its
    offers are refused;
  - withdrawn offers go, claimed ones are asked to stop at the heartbeat;
  - a request forwarded to the planner through the mailbox is answered;
    with the planner gone, the node gets one error line;
  - the database stopped: every node says so and claims fail; started
    again: they carry on.
"""
import os
import queue
import signal
import subprocess
import threading
import time

import harness as h
import test_postgres as tp

LEASE = 3          # seconds: short, so that the test is quick
GUARD = 30.0       # seconds: failure guard for any awaited line
PROBE = os.environ.get("CLUSTER_PROBE")
MODULE = os.environ.get("PG_MODULE")
SQL_DIR = os.path.join(h.SOURCE_ROOT, "sql", "pg")
DB = "bfc"
PROBES = []


def schema_files():
    return sorted(os.path.join(SQL_DIR, f) for f in os.listdir(SQL_DIR) if f.endswith(".sql"))


def fresh_db():
    c = tp.cluster()
    c.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB, db="postgres")
    c.psql("CREATE DATABASE %s OWNER etl" % DB, db="postgres")
    for f in schema_files():
        argv = c.psql_cmd(DB) + ["-c", "SET ROLE etl", "-f", f]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            h.fail("applying %s failed: %s" % (f, r.stderr))


def sql(q):
    return tp.cluster().psql(q, db=DB)


class Probe:
    """One node: a cluster_probe process and the lines it prints."""

    def __init__(self, node, lease=LEASE, sink=None):
        c = tp.cluster()
        self.node = node
        self.errlog = open(os.path.join(c.dir, "probe-%s.log" % node), "a")
        env = dict(os.environ, PROBE_PASSWORD_FILE=c.pwfile)
        conninfo = "host=%s port=%d dbname=%s user=etl" % (c.sockdir, tp.PORT, DB)
        self.p = subprocess.Popen([PROBE, MODULE, conninfo, node, str(lease)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.errlog, text=True, bufsize=1, env=env)
        self.q = queue.Queue()
        self.sink = sink
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()
        PROBES.append(self)
        if sink is None:
            self.expect("ready")

    def _read(self):
        for line in self.p.stdout:
            line = line.rstrip("\n")
            sink = self.sink
            if sink is not None:
                sink.put((self, line))
            else:
                self.q.put(line)
        (self.sink or self.q).put(None if self.sink is None else (self, None))

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def expect(self, prefix, timeout=GUARD):
        """The next line starting with prefix (others are kept in seen)."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                h.fail("node %s: no %r within %.0f s; saw %r" % (self.node, prefix, timeout,
                                                                 self.seen[-20:]))
            try:
                line = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                h.fail("node %s exited (rc %s) waiting for %r; saw %r"
                       % (self.node, self.p.wait(), prefix, self.seen[-20:]))
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def ask(self, cmd, prefix):
        self.send(cmd)
        return self.expect(prefix)

    def state(self):
        f = self.ask("state", "state ").split()
        return {"role": f[1], "generation": int(f[2]), "incarnation": int(f[3]),
                "db": f[4], "planner": f[5], "live": int(f[6]), "previous": f[7]}

    def signal(self, sig):
        self.p.send_signal(sig)

    def kill9(self):
        self.p.kill()
        self.p.wait()

    def quit(self):
        if self.p.poll() is None:
            self.send("quit")
            self.expect("closed")
            h.eq(self.p.wait(timeout=GUARD), 0, "node %s exit status" % self.node)

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.errlog.close()


def first_line(probes, prefix):
    """The first of the probes to print a line starting with prefix."""
    end = time.monotonic() + GUARD
    while time.monotonic() < end:
        for n in probes:
            try:
                line = n.q.get(timeout=0.05)
            except queue.Empty:
                continue
            if line is None:
                h.fail("node %s exited" % n.node)
            n.seen.append(line)
            if line.startswith(prefix):
                return n
    h.fail("no node printed %r within %.0f s" % (prefix, GUARD))


def close_all():
    while PROBES:
        PROBES.pop().close()


def planner_and_worker():
    a = Probe("a")
    gen = int(a.expect("role planner").split()[2])
    b = Probe("b")
    b.expect("role worker")
    h.eq(b.state()["planner"], "a", "the planner b sees")
    return a, b, gen


def test_takeover():
    fresh_db()
    a, b, gen = planner_and_worker()
    h.eq(a.state()["role"], "planner", "a's role")
    h.eq(a.state()["previous"], "-", "the planner before a (none)")
    rows = sql("SELECT holder, generation FROM lease")
    h.eq(rows, [("a", str(gen))], "the lease row")
    a.kill9()
    t0 = time.monotonic()
    line = b.expect("role planner")
    took = time.monotonic() - t0
    print("  takeover after kill -9: %.2f s (lease %d s)" % (took, LEASE))
    h.eq(int(line.split()[2]), gen + 1, "the new generation")
    # the lease ran out, then b noticed at its next heartbeat
    h.check(took <= LEASE + LEASE / 3.0 + 1.0,
            "takeover took %.2f s, more than lease + a heartbeat + 1 s" % took)
    h.eq(sql("SELECT holder, generation FROM lease"), [("b", str(gen + 1))], "the lease row")
    h.eq(b.state()["previous"], "a", "the planner before b (its lease ran out)")
    # a is declared dead by b, the new planner
    b.send("nodes")
    nodes = {}
    while True:
        l = b.expect("node")
        if l == "nodes-end":
            break
        f = l.split()
        nodes[f[1]] = f[2]
    h.eq(nodes, {"a": "stopped", "b": "planner"}, "nodes and roles")
    b.quit()
    # a clean stop releases the lease at once
    h.eq(sql("SELECT coalesce(holder, '-') FROM lease"), [("-",)], "the lease after b left")
    h.eq(sql("SELECT role FROM nodes WHERE name = 'b'"), [("stopped",)], "b's row")
    close_all()


def test_claims_never_double():
    fresh_db()
    p = Probe("p")
    p.expect("role planner")
    sink = queue.Queue()
    workers = [Probe("w%d" % i, sink=sink) for i in range(4)]
    for w in workers:
        w.send("auto 7")
    total = 2000
    for first in range(1, total + 1, 250):
        h.eq(p.ask("offer %d 250" % first, "offer"), "offered 250", "offer from %d" % first)
    finished = {}
    n = 0
    while n < total:
        try:
            w, line = sink.get(timeout=GUARD)
        except queue.Empty:
            h.fail("only %d of %d runs finished" % (n, total))
        if line is None:
            h.fail("worker %s exited" % w.node)
        if line.startswith("claimed "):
            h.check(len(line.split()) - 1 <= 7,
                    "worker %s claimed more than its 7: %r" % (w.node, line))
        if line.startswith("finish "):
            f = line.split()
            h.eq(f[2], "ok", "worker %s finishing %s" % (w.node, f[1]))
            finished.setdefault(int(f[1]), []).append(w.node)
            n += 1
    doubles = {k: v for k, v in finished.items() if len(v) > 1}
    h.eq(doubles, {}, "runs finished by two nodes")
    h.eq(sorted(finished), list(range(1, total + 1)), "runs finished")
    per_node = {}
    for v in finished.values():
        per_node[v[0]] = per_node.get(v[0], 0) + 1
    print("  runs per node: %s" % per_node)
    h.check(len(per_node) >= 2, "only one node claimed: %r" % per_node)
    rows = sql("SELECT state, count(*), count(DISTINCT claimed_by) > 1 FROM work GROUP BY state")
    h.eq(rows, [("done", str(total), "t")], "the work table")
    p.send("results")
    n = 0
    while p.expect("result") != "results-end":
        n += 1
    h.eq(n, total, "results the planner reads")
    ids = " ".join(str(i) for i in range(1, 51))
    h.eq(p.ask("forget " + ids, "forgot"), "forgot 50", "forget")
    h.eq(sql("SELECT count(*) FROM work"), [(str(total - 50),)], "rows left")
    close_all()


def test_dead_node_reaped():
    fresh_db()
    p, w, gen = planner_and_worker()
    h.eq(p.ask("offer 1 3", "offer"), "offered 3", "offer")
    h.eq(w.ask("claim 3", "claimed"), "claimed 1 2 3", "w's claim")
    inc = w.state()["incarnation"]
    w.signal(signal.SIGSTOP)
    t0 = time.monotonic()
    p.expect("done")
    print("  claims of a stopped node reaped after %.2f s (lease %d s)"
          % (time.monotonic() - t0, LEASE))
    p.send("results")
    res = []
    while True:
        l = p.expect("result")
        if l == "results-end":
            break
        res.append(l)
    h.eq(res, ["result %d b 1 1 interrupted: node b stopped" % i for i in (1, 2, 3)],
         "the reaped runs")
    mark = len(w.seen)
    w.signal(signal.SIGCONT)
    # continued: its result is refused, it learns it was declared dead
    # (at its next heartbeat, which may come first)
    h.eq(w.ask("finish 2", "finish"), "finish 2 refused", "a stale result")
    fenced = [l for l in w.seen[mark:] if l.startswith("fenced")]
    f = (fenced[0] if fenced else w.expect("fenced")).split()
    h.eq(int(f[1]), inc, "the incarnation w had")
    h.check(int(f[2]) > inc + 1, "w registers again with a new incarnation: %r" % f)
    h.eq(sql("SELECT state, failed, error FROM work WHERE id = 2"),
         [("done", "t", "interrupted: node b stopped")], "row 2 kept the reaped result")
    # and it works again under its new incarnation
    h.eq(p.ask("offer 4 1", "offer"), "offered 1", "offer")
    h.eq(w.ask("claim 5", "claimed"), "claimed 4", "w claims again")
    h.eq(w.ask("finish 4", "finish"), "finish 4 ok", "w finishes again")
    close_all()


def test_deposed_planner():
    fresh_db()
    a, b, gen = planner_and_worker()
    a.signal(signal.SIGSTOP)
    line = b.expect("role planner")
    h.eq(int(line.split()[2]), gen + 1, "b's generation")
    # a's offer, written before it is continued, comes after it has
    # noticed: its lease deadline passed while it was stopped
    a.send("planner-now")
    a.send("offer 100 5")
    a.send("own 200 2")
    a.signal(signal.SIGCONT)
    # the answers in order; its role may change before them (a heartbeat
    # that finds it fenced) or because of the first (past its lease)
    got = {}
    while len(got) < 4:
        line = a.expect("")
        for k in ("planner-now", "role worker", "offer", "own"):
            if line.startswith(k + " ") or line.startswith(k + "-"):
                got.setdefault(k, line)
    h.eq(got["planner-now"], "planner-now no", "a planner past its lease")
    h.check(got["offer"].startswith("offer-refused"), "a deposed planner offered")
    h.check(got["own"].startswith("own-refused"),
            "a deposed planner made its own runs claims")
    h.eq(sql("SELECT count(*) FROM work"), [("0",)], "work rows")
    h.eq(a.state()["role"], "worker", "a's role")
    h.eq(sql("SELECT holder, generation FROM lease"), [("b", str(gen + 1))], "the lease row")
    close_all()


def test_claim_own():
    """The planner's own runs become its claims (a planner stopping while
    others live): claimed by it under its incarnation, never claimable by
    another node, finished like any claim; its heartbeat counts the live
    nodes."""
    fresh_db()
    p, w, gen = planner_and_worker()
    h.eq(p.ask("planner-now", "planner-now"), "planner-now yes", "p is planner now")
    end = time.monotonic() + GUARD
    while p.state()["live"] != 2:
        h.check(time.monotonic() < end, "p never counted 2 live nodes: %r" % p.state())
        time.sleep(0.1)
    h.eq(w.state()["live"], 2, "the live nodes w counts")
    inc = p.state()["incarnation"]
    h.eq(p.ask("own 10 2", "own"), "owned 2", "p's own runs")
    h.eq(sql("SELECT id, state, claimed_by, incarnation, generation FROM work ORDER BY id"),
         [("10", "claimed", "a", str(inc), str(gen)), ("11", "claimed", "a", str(inc), str(gen))],
         "the work rows of p's own runs")
    h.eq(w.ask("claim 5", "claimed"), "claimed", "what w may claim")
    h.check(p.ask("own 10 1", "own").startswith("own-refused"), "a run made p's own twice")
    h.eq(p.ask("finish 10", "finish"), "finish 10 ok", "p finishes its own run")
    h.eq(w.ask("finish 11", "finish"), "finish 11 refused", "w finishes p's run")
    p.send("results")
    h.eq(p.expect("result"), "result 10 a 0 0 ", "the result of p's own run")
    h.eq(p.expect("result"), "results-end", "results")
    close_all()


def test_cancel():
    fresh_db()
    p, w, gen = planner_and_worker()
    h.eq(p.ask("offer 1 3", "offer"), "offered 3", "offer")
    h.eq(w.ask("claim 2", "claimed"), "claimed 1 2", "w's claim")
    # withdrawn: the offered row goes, the claimed ones are asked to stop
    h.eq(p.ask("forget 1 2 3", "forgot"), "forgot 3", "forget")
    h.eq(sql("SELECT id, state, cancel FROM work ORDER BY id"),
         [("1", "claimed", "t"), ("2", "claimed", "t")], "the work rows")
    got = sorted([w.expect("cancel "), w.expect("cancel ")])
    h.eq(got, ["cancel 1", "cancel 2"], "cancels at w's heartbeat")
    h.eq(w.ask("finish 1", "finish"), "finish 1 ok", "a cancelled run's end")


def test_batch_exchange():
    """finish_claim: a worker's finishes and its claim in one statement;
    then the planner reads the results and deletes them once recorded."""
    fresh_db()
    p, w, gen = planner_and_worker()
    x = Probe("x")
    x.expect("role worker")
    h.eq(p.ask("offer 1 6", "offer"), "offered 6", "offer")
    h.eq(w.ask("batch 2", "claimed"), "claimed 1 2", "a claim of at most 2")
    h.eq(x.ask("batch 1", "claimed"), "claimed 3", "x's claim")
    # 1 and 2 finished, 3 (x's claim) refused, and 2 more claimed
    w.send("batch 2 1 2 3")
    got = [w.expect("batch-finish") for _ in range(3)]
    h.eq(got, ["batch-finish 1 ok", "batch-finish 2 ok", "batch-finish 3 refused"],
         "the finishes")
    h.eq(w.expect("claimed"), "claimed 4 5", "the claim of the same statement")
    h.eq(sql("SELECT id, state, coalesce(claimed_by, '-') FROM work ORDER BY id"),
         [("1", "done", "b"), ("2", "done", "b"), ("3", "claimed", "x"),
          ("4", "claimed", "b"), ("5", "claimed", "b"), ("6", "offered", "-")],
         "the work rows")
    h.eq(w.ask("batch 0 4", "batch-finish"), "batch-finish 4 ok", "a finish, no claim")
    h.eq(w.expect("claimed"), "claimed", "nothing claimed with no room")
    h.check(w.ask("results", "result").startswith("results-error"),
            "a worker reads no results")
    p.send("results")
    got = []
    while True:
        l = p.expect("result")
        if l == "results-end":
            break
        got.append(l.split()[:5])
    h.eq(got, [["result", str(i), "b", "0", "0"] for i in (1, 2, 4)], "the results read")
    h.eq(sql("SELECT id FROM work ORDER BY id"),
         [("1",), ("2",), ("3",), ("4",), ("5",), ("6",)],
         "the rows stay until the planner forgets them (recorded first)")
    h.eq(p.ask("forget 1 2 4", "forgot"), "forgot 3", "forget")
    h.eq(sql("SELECT id FROM work ORDER BY id"), [("3",), ("5",), ("6",)],
         "the rows left once forgotten")
    p.send("results")
    h.eq(p.expect("result"), "results-end", "nothing left to read")
    close_all()


def test_mailbox():
    fresh_db()
    p, w, gen = planner_and_worker()
    p.send("serve")
    p.expect("serving")
    h.eq(w.ask("forward hello", "reply"), "reply echo:hello", "a forwarded request")
    h.eq(sql("SELECT count(*) FROM mailbox"), [("0",)], "mailbox rows once answered")
    p.kill9()
    w.send("forward again")
    line = w.expect("reply")
    h.check(line.startswith("reply-error ") and ("did not answer" in line or
                                                 "no planner" in line or
                                                 "the planner changed" in line),
            "no planner: %r" % line)
    close_all()


def test_database_lost():
    fresh_db()
    p, w, gen = planner_and_worker()
    tp.cluster().stop(mode="immediate")
    try:
        w.expect("db lost")
        p.expect("db lost")
        w.expect("role offline")
        h.check(w.ask("claim 1", "claim").startswith("claim-error"), "a claim without database")
        p.expect("role offline")  # its lease could have run out
    finally:
        tp.cluster().start()
    w.expect("db ok")
    p.expect("db ok")
    # someone plans again, and work flows
    planner = first_line([p, w], "role planner")
    other = w if planner is p else p
    h.eq(planner.ask("offer 1 1", "offer"), "offered 1", "offer")
    other.expect("work")
    h.eq(other.ask("claim 1", "claimed"), "claimed 1", "claim after the database came back")
    close_all()


def isolated(test):
    """The test, then every node it started killed, pass or fail."""
    def run():
        try:
            test()
        except Exception:
            for n in PROBES:
                n.errlog.flush()
                with open(n.errlog.name, errors="replace") as f:
                    log = f.read().splitlines()[-10:]
                print("node %s printed %r\nand logged:\n  %s"
                      % (n.node, n.seen[-15:], "\n  ".join(log)))
            raise
        finally:
            close_all()
    run.__name__ = test.__name__
    return run


def main():
    if not PROBE or not MODULE:
        tp.skip("CLUSTER_PROBE and PG_MODULE are not set (meson test sets them)")
    try:
        tp.cluster()
        h.main([isolated(t) for t in (test_takeover, test_claims_never_double,
                                      test_dead_node_reaped, test_deposed_planner,
                                      test_claim_own, test_cancel, test_batch_exchange,
                                      test_mailbox, test_database_lost)])
    finally:
        close_all()
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
