#!/usr/bin/env python3
"""Several hosts: `mark` asked on a node that is not the planner
(docs/mark.md): the node checks the peer's rights, forwards the request
to the planner through the state store with the peer's name and its own
(USER@NODE), and the planner records the mark: the same note on every
node's `runs`, the marked state on every node's `map`, and the
downstream partition rebuilt once (its run recorded in the shared
store).  Nodes and the throwaway PostgreSQL server as in test_cluster.py.
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


if __name__ == "__main__":
    h.main([test_mark_through_the_planner])
