#!/usr/bin/env python3
"""Several hosts: `status` on a node that is not the planner while the
state database does not answer (docs/several-hosts.md, "status answers
on every node").

Such a node reads the store's figures of status (runs kept, the
database's size) from the store: before, on the loop's own connection
(SELECT count(*) FROM runs, pg_database_size), so a database stopped
(SIGSTOP) held the whole daemon until it ran again: the status itself,
/healthz and every other client of the socket and of the HTTP endpoint.
Now they are read on a thread of the store's (daemon/store/store_pg_stats.c)
and status answers with the last figures read and their time.

Nodes as in test_cluster.py on a throwaway PostgreSQL server of this
test process; every process of that server is stopped with SIGSTOP, and
continued whatever the outcome.  What it checks:
  - while the server is stopped: status over the control socket and over
    HTTP on the node that is not the planner, /healthz there and `jobs`
    there all answer (each within the harness's guard: a failure guard,
    not a time this test claims; /healthz 200, or 503 naming the state
    store once the node found it lost); /status says its figures are stale and
    gives the runs kept of the reading before the stop, and when it was
    read;
  - once continued: runs kept on a node that is not the planner comes to
    the store's count, more runs recorded meanwhile included, and the
    figures are fresh again.
"""
import json
import os
import signal
import subprocess
import threading
import time

import harness as h
import test_cluster as tc
import test_http as th
import test_postgres as tp

GUARD = th.GUARD   # seconds: a call not answered by then has failed
LEASE = 20


def server_pids(pg):
    """The PostgreSQL server's processes: its postmaster and its children."""
    with open(os.path.join(pg.data, "postmaster.pid")) as f:
        pm = int(f.readline())
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pm:
            kids.append(int(name))
    return [pm] + kids


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def http_status(port):
    st, _, body = th.get(port, "/status")
    h.eq(st, 200, "/status")
    return json.loads(body)


def in_thread(calls):
    """Run each (name, fn) at once in a thread of its own; their results
    {name: ("ok", value) or ("error", repr)}, once all returned (each is
    bounded by its own guard)."""
    out = {}

    def run(name, fn):
        try:
            out[name] = ("ok", fn())
        except Exception as e:  # a timeout: the daemon did not answer
            out[name] = ("error", repr(e))

    threads = [threading.Thread(target=run, args=c, daemon=True) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * GUARD + 10)
    return out


def test_status_while_the_store_is_stopped():
    # a lease well above the stop (2 s of psql, and the forwarded status:
    # a statement of the cluster's bounded at 2 s): no planner deposed,
    # none restarting in place (and changing its HTTP port) after it
    c = tc.Nodes(tc.cmd_job("fact", sleep="0"), names=("n1", "n2"), lease=LEASE,
                 settings={"http_listen": "127.0.0.1:0"})
    planner = c.planner(c["n1"])
    other = "n2" if planner == "n1" else "n1"
    req = tc.backfill(c[planner], "fact", "2025-02-01", "2025-02-03")
    c[planner].wait_request(req)
    runs = c.state.rows("SELECT count(*) FROM runs")[0][0]
    port = th.listening_port(c[other])
    web = http_status(port)
    h.eq((web["runs_kept"], web["store_figures_stale"]), (runs, False),
         "runs_kept on %s before the stop (the store's count), stale" % other)
    h.check(web["store_figures_at"] is not None, "store_figures_at: %r" % web)

    pg = tp.cluster()
    pids = server_pids(pg)
    signal_all(pids, signal.SIGSTOP)
    try:
        # the server answers nothing now (else this test proves nothing)
        try:
            subprocess.run(pg.psql_cmd("postgres") + ["-c", "SELECT 1"],
                           capture_output=True, timeout=2)
            h.fail("the stopped server answered a query")
        except subprocess.TimeoutExpired:
            pass
        got = in_thread([
            ("/status", lambda: http_status(port)),
            ("/healthz", lambda: th.get(port, "/healthz")[::2]),
            ("status", lambda: c[other].ctl("status", "--json", timeout=GUARD)),
            ("jobs", lambda: c[other].ctl("jobs", timeout=GUARD)),
        ])
    finally:
        signal_all(pids, signal.SIGCONT)
    for name in ("/status", "/healthz", "status", "jobs"):
        h.check(got.get(name, ("error", "no answer"))[0] == "ok",
                "%s on %s while the database was stopped: %r"
                % (name, other, got.get(name)))
    # (503 once the node found the store lost: an answer all the same)
    h.check(got["/healthz"][1] == (200, b"ok\n") or
            (got["/healthz"][1][0] == 503 and b"state store" in got["/healthz"][1][1]),
            "/healthz on %s: %r" % (other, got["/healthz"][1]))
    web = got["/status"][1]
    h.eq((web["runs_kept"], web["store_figures_stale"]), (runs, True),
         "/status runs_kept and store_figures_stale on %s while the database"
         " was stopped" % other)
    h.check(web["store_figures_at"] is not None
            and web["store_figures_at"] <= web["now"],
            "/status says when its figures were read: %r" % web["store_figures_at"])
    rc, out, err = got["status"][1]
    h.eq(rc, 0, "status on %s while the database was stopped: %s" % (other, err))
    st = json.loads(out)
    h.eq(st["runs_kept"], runs, "status runs_kept on %s (from memory: %r)"
         % (other, st["from_memory"]))

    # continued: more runs, and a node that is not the planner counts them
    end = time.monotonic() + GUARD
    while True:
        v = c.view(c[other])
        ps = [n for n, x in (v or {}).items() if x["role"] == "planner"]
        if len(ps) == 1:
            break
        h.check(time.monotonic() < end, "no planner after the database was"
                " continued: %r\n%s" % (v, c.activity()))
        time.sleep(0.1)
    planner = ps[0]
    other = "n2" if planner == "n1" else "n1"
    req = tc.backfill(c[planner], "fact", "2025-02-04", "2025-02-05")
    c[planner].wait_request(req)
    runs = c.state.rows("SELECT count(*) FROM runs")[0][0]
    port = th.listening_port(c[other])
    end = time.monotonic() + GUARD
    while True:
        web = http_status(port)
        if (web["runs_kept"], web["store_figures_stale"]) == (runs, False):
            break
        h.check(time.monotonic() < end, "runs_kept on %s never came to the"
                " store's %d: %r" % (other, runs, web))
        time.sleep(0.1)


TESTS = [test_status_while_the_store_is_stopped]


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(t) for t in TESTS])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
