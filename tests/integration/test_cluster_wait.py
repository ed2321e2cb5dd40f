#!/usr/bin/env python3
"""Several hosts: `backfill --wait` on a node that is not the planner.

docs/several-hosts.md ("Roles", "Wake-ups"): the node forwards the wait
to the planner through the state store, and the planner holds it until
the request finishes (or a few seconds pass, then answers its progress
and the node asks again): a long poll, not a request every few hundred
milliseconds.  Nodes and the throwaway PostgreSQL server as in
test_cluster.py.

What it checks:
  - a forwarded `backfill --wait` returns exit 0 and the summary once
    every partition succeeded, although it outlives the daemon's idle
    timeout for connections (set to 1 s here): a forwarded wait is not an
    idle connection;
  - it makes few forwarded requests: the node's rows in `mailbox` grow by
    at most one per hold (5 s) of the wait, plus the backfill itself and
    slack; one every 300 ms (the way before) would be several times more;
  - the wait outlives the planner's death: the planner is killed (-9)
    while a node waits on another; the wait still returns exit 0 once
    the request is done under the new planner.
"""
import os
import subprocess
import sys
import time

import harness as h
import test_cluster as tc
import test_postgres as tp

HOLD = 5.0      # the planner holds a forwarded wait this long at most


def mails(c):
    """Forwarded requests so far, on any node (mailbox rows are deleted
    once answered: the id sequence counts them)."""
    r = c.state.rows("SELECT last_value, is_called FROM mailbox_id_seq")[0]
    return int(r[0]) if r[1] in (True, "t") else 0


def test_forwarded_wait():
    c = tc.Nodes(tc.cmd_job("slow", concurrency=2, sleep="0.5"), names=("n1", "n2"))
    planner = c.planner(c["n1"])
    other = "n2" if planner == "n1" else "n1"
    parts = h.days("2025-05-01", "2025-05-14")
    before = mails(c)
    t0 = time.monotonic()
    rc, out, err = c[other].ctl("backfill", "slow", "--from", parts[0], "--to", parts[-1],
                                "--wait", timeout=tc.GUARD)
    took = time.monotonic() - t0
    h.eq(rc, 0, "backfill --wait forwarded from %s: exit (stderr %r)" % (other, err))
    h.check(took > 2.0, "the wait lasted %.2f s, not past the 1 s idle timeout" % took)
    h.check("14" in out, "the wait's summary does not count 14 partitions: %r" % out)
    reqs = [r for r in c[planner].runs() if r["job"] == "slow"]
    h.eq(sorted(r["partition"] for r in reqs if r["state"] == "succeeded"), parts,
         "partitions succeeded when the forwarded wait returned")
    asked = mails(c) - before
    allowed = 1 + int(took / HOLD) + 3
    print("  the wait took %.2f s and %d forwarded request(s) (at most %d allowed;"
          " one per 300 ms would be %d)" % (took, asked, allowed, int(took / 0.3)))
    h.check(asked <= allowed, "%d forwarded requests for a %.2f s wait: more than %d"
            % (asked, took, allowed))


def test_wait_outlives_planner():
    c = tc.Nodes(tc.cmd_job("slow", concurrency=2, sleep="0.5"))
    planner = c.planner(c["n1"])
    waiter = [n for n in c.nodes if n != planner][0]
    parts = h.days("2025-06-01", "2025-06-16")
    argv = [c[waiter].backfillctl, "--socket", c[waiter].sock, "backfill", "slow",
            "--from", parts[0], "--to", parts[-1], "--wait"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=c[waiter].env())
    c.wait_until(lambda: len(c.executions()) >= 2, "two executions")
    c[planner].kill9()
    try:
        out, err = p.communicate(timeout=tc.GUARD)
    except subprocess.TimeoutExpired:
        p.kill()
        h.fail("the forwarded wait did not return after the planner's death")
    h.eq(p.returncode, 0, "wait on %s across the planner's death: exit (stderr %r)"
         % (waiter, err))
    reqs = {r["request"] for r in c[waiter].runs() if r["job"] == "slow"}
    h.eq(len(reqs), 1, "requests of the slow job")
    tc.succeeded_once(c[waiter], reqs.pop(), [("slow", x) for x in parts])


def main():
    os.environ["BACKFILLD_TEST_IDLE_TIMEOUT_MS"] = "1000"
    h.binaries()
    try:
        tp.cluster()
        only = sys.argv[1:]
        tests = [test_forwarded_wait, test_wait_outlives_planner]
        h.main([tc.isolated(t) for t in tests if not only or t.__name__ in only])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
