#!/usr/bin/env python3
"""A refused catchup gap stays until it is filled (issue 24, item 2).

max_catchup 5, a job started 68 days after its start: the 68-day gap is
refused.  Then the schedule goes on: one partition comes due and runs, two
come due at once and are caught up, the daemon restarts; through all of it
status keeps `catchup: refused` with the same gap, the metric
backfilld_catchup_refused stays 1 and `map` draws the gap as refused.  A
second refusal while the first gap is unfilled extends it.  Only once every
partition of the gap has succeeded (backfilled in bounded pieces) is
catchup `ok` again.  On main, the catchup of two partitions cleared the gap
although none of it had run.  Status also says the command that fills the
gap, in pieces of at most max_backfill (as the README promises).
"""
import os
import re

import harness as h
import test_schedule as ts

GAP = {"from": "2026-01-01", "to": "2026-03-09", "partitions": 68}


def metric(d):
    """backfilld_catchup_refused{job="gappy"} from the metrics file (written
    on shutdown, the daemon being stopped)."""
    with open(os.path.join(d.dir, "backfilld.prom")) as f:
        m = re.search(r'^backfilld_catchup_refused\{job="gappy"\} (\d+)$', f.read(), re.M)
    h.check(m, "no backfilld_catchup_refused line for gappy")
    return int(m.group(1))


def refused_ranges(d, frm, to):
    m = d.json("map", "gappy", "--from", frm, "--to", to, "--json")
    return [(r["from"], r["to"]) for r in m["ranges"] if r["state"] == "refused"]


def expect_refused(d, gap, what, cells=None):
    st = ts.job_status(d, "gappy")
    h.eq((st["catchup"], st["gap"]), ("refused", gap), "status of gappy " + what)
    h.eq(refused_ranges(d, gap["from"], gap["to"]), cells or [(gap["from"], gap["to"])],
         "map's refused cells " + what)


def expect_fill(d, gap, n, to, then):
    """status names the gap and the command that fills its first piece."""
    out = d.ok("status")
    want = ("catchup gappy: refused, gap %s..%s (%d partitions, above max_catchup 5);"
            " fill it in pieces of at most 60 partitions (its max_backfill): backfillctl"
            " backfill gappy --from %s --to %s, then the same from %s on\n"
            % (gap["from"], gap["to"], n, gap["from"], to, then))
    h.check(want in out, "status lacks %r:\n%s" % (want, out))


def restart(d, instant):
    d.stop()
    h.eq(metric(d), 1, "backfilld_catchup_refused at the stop before " + instant)
    d.set_clock(instant)
    d.now = instant
    d.start()


def test_refused_gap_stays_until_filled():
    jobs = ts.cmd_job("gappy", "day", "2026-01-01",
                      "catchup: true\nmax_catchup: 5\nmax_backfill: 60")
    d = ts.sched_daemon(jobs, "2026-03-10T00:30:00Z", "gap",
                        settings={"max_concurrency": 4, "metrics_file": "backfilld.prom"})
    expect_refused(d, GAP, "at the first start")
    expect_fill(d, GAP, 68, "2026-03-01", "2026-03-02")
    h.eq(ts.new_requests(d), [], "requests at the first start (the gap is refused)")

    # the next partition comes due: it runs, the gap stays
    ts.tick(d, "2026-03-11T01:30:00Z")
    h.eq(ts.new_requests(d), [("schedule", "gappy", ["2026-03-10"])], "the next day")
    expect_refused(d, GAP, "once the next partition ran")

    # two come due at once: caught up (within max_catchup), the gap stays
    ts.tick(d, "2026-03-13T02:30:00Z")
    h.eq(ts.new_requests(d), [("catchup", "gappy", ["2026-03-11", "2026-03-12"])],
         "two days due at once")
    expect_refused(d, GAP, "after a catchup of two partitions")

    # a restart changes nothing
    restart(d, "2026-03-13T03:30:00Z")
    expect_refused(d, GAP, "after a restart")

    # down for six days: a second gap above max_catchup extends the first
    restart(d, "2026-03-19T04:30:00Z")
    h.eq(ts.new_requests(d), [], "requests after six days down (refused)")
    wide = {"from": "2026-01-01", "to": "2026-03-18", "partitions": 77}
    # (the days that ran in between are drawn as succeeded, not refused)
    cells = [("2026-01-01", "2026-03-09"), ("2026-03-13", "2026-03-18")]
    expect_refused(d, wide, "after a second refusal", cells)
    expect_fill(d, wide, 77, "2026-03-01", "2026-03-02")
    h.eq(ts.ran_parts(d, "gappy"), h.days("2026-03-10", "2026-03-12"),
         "partitions run: none of either gap")

    # backfilled in bounded pieces: refused until the last piece lands
    d.ok("backfill", "gappy", "--from", "2026-01-01", "--to", "2026-02-28", "--wait")
    expect_refused(d, wide, "with part of the gap backfilled",
                   [("2026-03-01", "2026-03-09"), ("2026-03-13", "2026-03-18")])
    d.ok("backfill", "gappy", "--from", "2026-03-01", "--to", "2026-03-18", "--wait")
    st = ts.job_status(d, "gappy")
    h.eq((st["catchup"], st["gap"]), ("ok", None), "status once the whole gap succeeded")
    h.eq(refused_ranges(d, "2026-01-01", "2026-03-18"), [], "map once the gap is filled")
    d.stop()
    h.eq(metric(d), 0, "backfilld_catchup_refused once the gap is filled")


if __name__ == "__main__":
    h.main([test_refused_gap_stays_until_filled])
