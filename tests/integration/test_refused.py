#!/usr/bin/env python3
"""Bounded requests (issue 2): a backfill above the job's max_backfill is
refused whole (exit 2, one line naming the count and the bound, nothing
enqueued), the count is computed (ten thousand years refused at once), and a
request exactly at the bound is accepted."""
import re
import time

import harness as h

JOBS = """
- name: daily
  partition: day
  start: 0001-01-01
  catchup: false
  max_backfill: 30
  command: ["/bin/true"]
- name: default_bound
  partition: day
  start: 0001-01-01
  catchup: false
  command: ["/bin/true"]
- name: hourly
  partition: hour
  start: 2026-01-01
  catchup: false
  max_backfill: 48
  command: ["/bin/true"]
- name: weekly
  partition: week
  start: 2024-01-01
  catchup: false
  max_backfill: 4
  command: ["/bin/true"]
"""

TEN_THOUSAND_YEARS = 3652059  # days from 0001-01-01 to 9999-12-31 inclusive


def names(err, count, bound, what):
    flat = err.replace(",", "").replace("_", "")
    h.check(re.search(r"(?<!\d)%d(?!\d)" % count, flat),
            "%s: the message does not name the count %d: %r" % (what, count, err))
    h.check(re.search(r"(?<!\d)%d(?!\d)" % bound, flat),
            "%s: the message does not name the bound %d: %r" % (what, bound, err))


def refused(d, job, frm, to, count, bound, guard=5.0):
    t0 = time.monotonic()
    rc, out, err = d.ctl("backfill", job, "--from", frm, "--to", to, "--reason", "too big",
                         timeout=60)
    took = time.monotonic() - t0
    what = "backfill %s --from %s --to %s" % (job, frm, to)
    e = h.one_line_error(rc, out, err, 2, what)
    names(e, count, bound, what)
    h.check(took < guard, "%s took %.1f s to refuse (counted, not enumerated?)" % (what, took))
    # --dry-run is refused the same way, and --wait does not change that.
    rc, out, err = d.ctl("backfill", job, "--from", frm, "--to", to, "--dry-run", timeout=60)
    h.one_line_error(rc, out, err, 2, what + " --dry-run")
    rc, out, err = d.ctl("backfill", job, "--from", frm, "--to", to, "--wait", timeout=60)
    h.one_line_error(rc, out, err, 2, what + " --wait")


def test_refused_ranges():
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 2, "max_backfill": 366},
                 name="refused")
    before = d.state_dump()
    refused(d, "daily", "2025-11-01", "2025-12-30", 60, 30)
    refused(d, "daily", "2025-12-01", "2025-12-31", 31, 30)
    refused(d, "daily", "0001-01-01", "9999-12-31", TEN_THOUSAND_YEARS, 30)
    refused(d, "default_bound", "0001-01-01", "9999-12-31", TEN_THOUSAND_YEARS, 366)
    refused(d, "default_bound", "2024-01-01", "2025-01-01", 367, 366)
    refused(d, "hourly", "2026-01-10", "2026-01-12", 72, 48)
    refused(d, "hourly", "2026-01-10T00", "2026-01-12T00", 49, 48)
    # weeks containing 2026-01-01..2026-02-28: 2025-12-29 .. 2026-02-23
    refused(d, "weekly", "2026-01-01", "2026-02-28", 9, 4)
    d.assert_alive("after the refused requests")
    h.eq(d.runs(), [], "runs after refused requests")
    for name, j in d.status().items():
        h.eq((j["queued"], j["running"]), (0, 0), "status of %s after refusals" % name)
    h.eq(d.state_dump(), before, "state store after refused requests")
    d.stop()


def test_at_the_bound_is_accepted():
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 4, "max_backfill": 366},
                 name="bound")
    d.backfill("daily", "2025-12-01", "2025-12-30")
    # (ignore what the schedule may have run for the newest due partition)
    runs = [r for r in h.by_job(d.runs(), "daily") if r["partition"] < "2026"]
    h.eq(sorted(r["partition"] for r in runs), h.days("2025-12-01", "2025-12-30"),
         "partitions of a request of exactly max_backfill days")
    h.check(all(r["state"] == "succeeded" for r in runs), "runs not all succeeded: %r" % runs)
    plan = d.json("backfill", "hourly", "--from", "2026-01-10T00", "--to", "2026-01-11T23",
                  "--dry-run")
    h.eq(plan.get("total"), 48, "dry-run total of 48 hours (bound 48)")
    h.eq(plan["partitions"][0]["partition"], "2026-01-10T00", "first hour key")
    h.eq(plan["partitions"][-1]["partition"], "2026-01-11T23", "last hour key")
    d.stop()


if __name__ == "__main__":
    h.main([test_refused_ranges, test_at_the_bound_is_accepted])
