#!/usr/bin/env python3
"""Several hosts with a zoned job (issue 42; docs/several-hosts.md,
docs/configuration.md "Time zones"): two nodes on one PostgreSQL state
store run a Europe/Berlin daily job.

- The schedule: the shared test clock at 21:59 UTC on 2026-03-29 (23:59
  in Berlin, the 23-hour day) has 2026-03-28 run and not 2026-03-29; at
  22:00 UTC (Berlin midnight) 2026-03-29 runs, once, on either node.
- Backfills across both DST days of 2026 (11 and 12 days), one sent to
  each node: both nodes run partitions, every partition succeeds once per
  request, no two executions of one overlap, its command receives its key
  and its local and UTC bounds (the 23- and 25-hour days; Python's
  zoneinfo as the reference), and the scheduled days ran once in all.
- A node whose configuration names another zone for the built job is
  refused at its start, and a reload of a running node to it is refused,
  in the one line a single host gives; the store keeps Europe/Berlin.

Nodes and the throwaway PostgreSQL server as in test_cluster.py (exit 77
without PostgreSQL, unless BACKFILLD_REQUIRE_POSTGRES=1).
"""
import collections
import datetime
import subprocess
import zoneinfo

import harness as h
import test_cluster as tc
import test_postgres as tp

# the command records "node|key|start|end|start_utc|end_utc|env" in the
# shared folder's bounds file, then runs run.sh (its execution record)
JOB = """
- name: berlin
  partition: day
  timezone: Europe/Berlin
  start: 2026-03-28
  catchup: true
  concurrency: 4
  retries: 0
  command:
    - /bin/bash
    - -c
    - 'echo "$BFD_TEST_NODE|$1|$2|$3|$4|$5|$BACKFILLD_PARTITION_END_UTC" >> "${6%/*}/bounds"; exec /bin/bash "$6" "$1" 0.3'
    - bounds
    - "{partition}"
    - "{partition_start}"
    - "{partition_end}"
    - "{partition_start_utc}"
    - "{partition_end_utc}"
    - "@RUN@"
"""

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def day_bounds(key):
    """key, local start and end, UTC start and end of a Berlin day, by
    Python's zoneinfo (independent of the daemon's reader)."""
    d = datetime.date.fromisoformat(key)
    n = d + datetime.timedelta(days=1)

    def utc(x):
        t = datetime.datetime(x.year, x.month, x.day, tzinfo=BERLIN)
        return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return (key, key, n.isoformat(), utc(d), utc(n))


REFUSAL = ('job "berlin": its built partitions are keyed in timezone: Europe/Berlin;'
           ' timezone: America/Chicago would give those keys other intervals: write'
           ' timezone: Europe/Berlin again, or define a new job (another name and table)'
           ' in the new calendar')


def bounds(c):
    with open(c.shared + "/bounds") as f:
        return [tuple(l.rstrip("\n").split("|")) for l in f if l.strip()]


def succeeded(via):
    """The job's runs once none is queued or running, else None."""
    rs = via.try_json("runs", "--job", "berlin")
    if rs is None or any(r["state"] in ("queued", "running") for r in rs):
        return None
    return sorted(r["partition"] for r in rs if r["state"] == "succeeded")


def test_zoned_daily_on_two_nodes():
    c = tc.Nodes(JOB, names=("n1", "n2"))
    n1, n2 = c["n1"], c["n2"]
    h.eq(n1.runs(), [], "runs before anything is due (the clock in January)")
    # 23:59 in Berlin on its 23-hour day: 2026-03-28 is due, 03-29 not
    c.set_clock("2026-03-29T21:59:00Z")
    c.wait_until(lambda: succeeded(n2) == ["2026-03-28"], "2026-03-28 scheduled and run")
    # Berlin midnight (22:00 UTC in summer time): 2026-03-29 is due
    c.set_clock("2026-03-29T22:00:00Z")
    c.wait_until(lambda: succeeded(n1) == ["2026-03-28", "2026-03-29"],
                 "2026-03-29 scheduled at Berlin midnight and run")
    # a backfill across each change, sent to each node
    planner = c.planner(n1)
    worker = "n2" if planner == "n1" else "n1"
    spring = h.days("2026-03-28", "2026-04-07")
    fall = h.days("2026-10-20", "2026-10-31")
    sreq = tc.backfill(c[worker], "berlin", spring[0], spring[-1])
    freq = tc.backfill(c[planner], "berlin", fall[0], fall[-1])
    c[worker].wait_request(sreq)
    c[planner].wait_request(freq)
    tc.succeeded_once(n1, sreq, [("berlin", d) for d in spring])
    tc.succeeded_once(n2, freq, [("berlin", d) for d in fall])
    ex = c.executions()
    tc.no_overlap(ex)
    want = collections.Counter(spring + fall + ["2026-03-28", "2026-03-29"])
    h.eq(sorted(collections.Counter(e["partition"] for e in ex).items()), sorted(want.items()),
         "executions per partition (the two scheduled days once, then once each request)")
    spread = tc.per_node(ex)
    print("  executions per node: %s" % spread)
    h.eq(sorted(spread), ["n1", "n2"], "the nodes that ran partitions")
    got = bounds(c)
    h.eq(len(got), len(ex), "bounds lines against executions")
    h.eq(sorted(set(g[1:] for g in got)),
         sorted(day_bounds(k) + (day_bounds(k)[4],) for k in want),
         "the key, local and UTC bounds (argv and environment) each command received")
    h.eq((day_bounds("2026-03-29")[3:], day_bounds("2026-10-25")[3:]),
         (("2026-03-28 23:00:00", "2026-03-29 22:00:00"),
          ("2026-10-24 22:00:00", "2026-10-25 23:00:00")), "the 23- and 25-hour days")
    h.eq(c.state.rows("SELECT job, calendar FROM jobs WHERE calendar IS NOT NULL"),
         [("berlin", "Europe/Berlin")], "the calendar the shared store records")

    # another zone for the built job: a third node's start is refused ...
    chicago = JOB.replace("Europe/Berlin", "America/Chicago")
    n3 = c.add("n3", jobs=chicago, start=False)
    r = subprocess.run([n3.backfilld, "--config", n3.conf], capture_output=True, text=True,
                       timeout=60, cwd=n3.dir, env=n3.env())
    h.eq(r.returncode, 2, "a node's start with another zone for the built job: %s" % r.stderr)
    h.check(REFUSAL in r.stderr, "the start's refusal: %r" % r.stderr)
    # ... and so is a reload of a running node to it
    c[worker].write_config(c[worker].config_text.replace("Europe/Berlin", "America/Chicago"))
    rc, out, err = c[worker].ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "a node's reload to another zone for the built job")
    h.check(e.endswith(REFUSAL), "the reload's refusal: %r" % e)
    h.eq([j["timezone"] for j in c[worker].json("jobs")["jobs"]], ["Europe/Berlin"],
         "the running zone after the refusal")
    h.eq(c.state.rows("SELECT job, calendar FROM jobs WHERE calendar IS NOT NULL"),
         [("berlin", "Europe/Berlin")], "the store after the refusals")


def main():
    h.binaries()
    try:
        tp.cluster()
        h.main([tc.isolated(test_zoned_daily_on_two_nodes)])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()


if __name__ == "__main__":
    main()
