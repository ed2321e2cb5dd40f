#!/usr/bin/env python3
"""Several hosts: `mark` and `logs` (docs/mark.md, docs/logs.md).

mark asked on a node that is not the planner: the node checks the peer's
rights, forwards the request to the planner through the state store with
the peer's name and its own (USER@NODE), and the planner records the
mark: the same note on every node's `runs`, the marked state on every
node's `map`, the downstream partition rebuilt, nothing run for the
marked one.  logs of a command run: the node that ran it (runs.node,
written with its claim) prints its log; another node names that node.
Nodes and the throwaway PostgreSQL server as in test_cluster.py.
"""
import harness as h
import test_cluster as tc

JOBS = tc.cmd_job("fact", sleep="0") + """
- name: weekly
  partition: week
  upstream: [fact]
  retries: 0
  command: ["/bin/bash", "@RUN@", "{partition}", "0"]
"""


def test_mark_through_the_planner():
    c = tc.Nodes(JOBS, names=("n1", "n2"))
    planner = c.planner(c["n1"])
    other = "n2" if planner == "n1" else "n1"
    rc, out, err = c[other].ctl("mark", "fact", "2025-03-04", "--succeeded", "--reason",
                                "loaded by hand")
    h.eq(rc, 0, "mark on %s: exit (stderr %r)" % (other, err))
    h.check("marked succeeded by root@%s" % other in out, "the answer: %r" % out)
    req = int(out.split()[1].rstrip(":"))
    c[other].wait_request(req)
    for n in (planner, other):
        runs = c[n].json("runs", "--request", str(req))
        marked = [r for r in runs if r["job"] == "fact"]
        h.eq([(r["partition"], r["state"], r["error"]) for r in marked],
             [("2025-03-04", "succeeded", "marked succeeded by root@%s: loaded by hand" % other)],
             "the mark on %s's runs" % n)
        weekly = [r for r in runs if r["job"] == "weekly"]
        h.eq([(r["partition"], r["state"]) for r in weekly], [("2025-03-03", "succeeded")],
             "the downstream rebuilt, seen on %s" % n)
        mp = c[n].json("map", "fact", "--from", "2025-03-04", "--to", "2025-03-04")
        h.eq(mp["ranges"][0]["state"], "marked", "map on %s" % n)
    ran = [e for e in c.executions() if (e["job"], e["partition"]) == ("fact", "2025-03-04")]
    h.eq(ran, [], "nothing ran for the marked partition")


def test_logs_names_the_node():
    c = tc.Nodes(tc.cmd_job("fact", sleep="0"), names=("n1", "n2"))
    planner = c.planner(c["n1"])
    req = c[planner].enqueue("backfill", "fact", "--from", "2025-03-10", "--to", "2025-03-10")
    c[planner].wait_request(req)
    ran = [e["node"] for e in c.executions()
           if (e["job"], e["partition"]) == ("fact", "2025-03-10")]
    h.eq(len(ran), 1, "one execution: %r" % ran)
    runner = ran[0]
    other = "n2" if runner == "n1" else "n1"
    rc, out, err = c[runner].ctl("logs", "fact", "2025-03-10")
    h.eq(rc, 0, "logs on %s, which ran it: %r" % (runner, err))
    rc, out, err = c[other].ctl("logs", "fact", "2025-03-10")
    e = h.one_line_error(rc, out, err, 2, "logs on %s" % other)
    h.check("is on node %s, which ran it" % runner in e, e)


def test_large_answer_forwarded():
    """An answer too large for one frame (above 1 MiB: DATA frames, cut
    between UTF-8 sequences) comes back through a worker whole, the same
    bytes as on the planner (the mailbox kept only its last frame)."""
    job = """
- name: hourly
  partition: hour
  start: 2020-01-01T00
  catchup: false
  max_backfill: 60000
  command: ["true"]
"""
    c = tc.Nodes(job, names=("n1", "n2"))
    planner = c.planner(c["n1"])
    worker = "n2" if planner == "n1" else "n1"
    args = ("backfill", "hourly", "--from", "2020-01-01T00", "--to", "2024-12-31T23",
            "--dry-run", "--json")
    rc, here, err = c[planner].ctl(*args)
    h.eq(rc, 0, "dry run on the planner: %s" % err)
    h.check(len(here) > 2 * 1024 * 1024, "the answer is above two frames: %d bytes" % len(here))
    rc, there, err = c[worker].ctl(*args)
    h.eq(rc, 0, "dry run through %s: %s" % (worker, err))
    h.eq(len(there), len(here), "bytes of the answer through the worker")
    h.check(there == here, "the answer through the worker differs from the planner's")


def test_http_on_each_node():
    import json
    import test_http as th
    c = tc.Nodes(tc.cmd_job("fact", sleep="0"), names=("n1", "n2"),
                 settings={"http_listen": "127.0.0.1:0"})
    planner = c.planner(c["n1"])
    other = "n2" if planner == "n1" else "n1"
    # runs the planner records after the other node opened the store:
    # the other one's runs_kept is the store's all the same
    req = tc.backfill(c[planner], "fact", "2025-02-01", "2025-02-03")
    c[planner].wait_request(req)
    runs = c.state.rows("SELECT count(*) FROM runs")[0][0]
    h.check(runs >= 3, "the backfill's runs are in the store: %d" % runs)
    for n in (planner, other):
        port = th.listening_port(c[n])
        st, hd, body = th.get(port, "/healthz")
        h.eq((st, body), (200, b"ok\n"), "/healthz on %s" % n)
        st, hd, body = th.get(port, "/status")
        h.eq(st, 200, "/status on %s" % n)
        web = json.loads(body)
        h.eq([j["name"] for j in web["jobs"]], ["fact"], "/status jobs on %s" % n)
        h.eq(web["runs_kept"], runs, "/status runs_kept on %s (the store's count)" % n)
        h.eq(sorted(x["name"] for x in web["nodes"]), ["n1", "n2"], "/status nodes on %s" % n)
        if n == planner:
            h.eq(web["from_memory"], None, "/status on the planner")
        else:
            h.check(web["from_memory"] and "its own memory" in web["from_memory"],
                    "/status on %s says it answers from its memory: %r"
                    % (n, web["from_memory"]))
        st, hd, body = th.get(port, "/metrics")
        h.check(st == 200 and b"backfilld_build_info" in body, "/metrics on %s" % n)


if __name__ == "__main__":
    h.main([test_mark_through_the_planner, test_logs_names_the_node, test_large_answer_forwarded,
            test_http_on_each_node])
