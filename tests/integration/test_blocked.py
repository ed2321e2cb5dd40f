#!/usr/bin/env python3
"""A failed input blocks its week (issue 3): the week is `blocked`, names the
failed input, and does not run; the other week runs; --wait exits 1.  A later
successful rerun of the failed day releases the week, which then runs once."""
import os

import harness as h

JOBS = """
- name: day
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 2
  retries: 0
  command: ["/bin/sh", "-c", 'if [ "$BACKFILLD_PARTITION" = 2026-02-10 ] && [ ! -e {dir}/fixed ]; then echo broken >&2; exit 3; fi']
- name: week
  partition: week
  start: 2026-01-26
  end: 2026-02-23
  upstream: [day]
  command: ["/bin/sh", "-c", 'echo "$BACKFILLD_PARTITION" >> {dir}/weeks.txt']
"""


def weeks_run(d):
    try:
        with open(os.path.join(d.dir, "weeks.txt")) as f:
            return [l.strip() for l in f if l.strip()]
    except FileNotFoundError:
        return []


def test_failed_input_blocks_then_rerun_releases():
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 3}, name="blocked")
    rc, out, err = d.ctl("backfill", "day", "--from", "2026-02-08", "--to", "2026-02-12", "--wait")
    h.eq(rc, 1, "backfill --wait with a failed day and its week blocked (stdout %r stderr %r)"
         % (out, err))
    h.soft("2026-02-10" in out + err and "blocked" in (out + err).lower(),
            "the --wait summary does not say the failure and the block:\n%s%s" % (out, err))
    h.eq(weeks_run(d), ["2026-02-02"], "weeks run (the blocked one must not run)")
    runs = d.runs()
    req = runs[0]["request"]
    failed = [r for r in runs if r["job"] == "day" and r["state"] == "failed"]
    h.eq([r["partition"] for r in failed], ["2026-02-10"], "failed days")
    blocked = [r for r in d.runs("--state", "blocked")]
    h.eq([(r["job"], r["partition"]) for r in blocked], [("week", "2026-02-09")],
         "runs --state blocked")
    b = blocked[0]
    h.check(b["started_at"] is None, "a blocked partition has a start time: %r" % b)
    h.check(b["error"] and "2026-02-10" in b["error"] and "day" in b["error"],
            "the blocked week does not name its failed input: %r" % b["error"])
    st = d.status()
    h.eq(st["week"]["blocked"], 1, "status: blocked weeks")
    h.eq(st["day"]["failed"], 1, "status: failed days")

    # Fix the cause; rerun the failed day: the week is released and runs once.
    open(os.path.join(d.dir, "fixed"), "w").close()
    rc, out, err = d.ctl("rerun", "day", "2026-02-10", "--wait")
    h.eq(rc, 0, "rerun of the fixed day --wait (stdout %r stderr %r)" % (out, err))
    d.wait_request(req)   # the first request's downstream work, now final
    h.eq(sorted(weeks_run(d)), ["2026-02-02", "2026-02-09"], "weeks run (the released one once)")
    week = [r for r in d.runs() if r["job"] == "week" and r["partition"] == "2026-02-09"]
    # one execution, shown under each request it served (the first,
    # whose blocked week it released, and the rerun's downstream)
    ok = [r for r in week if r["state"] == "succeeded"]
    h.eq(len({(r["started_at"], r["finished_at"]) for r in ok}), 1,
         "executions of the released week")
    h.eq(len({r["request"] for r in ok}), len(ok), "one row per request served")
    h.eq([r for r in week if r["state"] == "blocked"], [], "the week still shows blocked")
    st = d.status()
    h.eq(st["week"]["blocked"], 0, "status: blocked weeks after the release")
    d.stop()


if __name__ == "__main__":
    h.main([test_failed_input_blocks_then_rerun_releases])
