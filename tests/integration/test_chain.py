#!/usr/bin/env python3
"""A three-level chain (issue 3): day -> week -> month, over a range whose
ISO week 2026-01-26 straddles the January/February boundary and so feeds
both months.  Every downstream partition runs exactly once, after all of its
inputs in the request finished; the command jobs see the partition bounds."""
import os

import harness as h

RUN = ('echo "$BACKFILLD_JOB $BACKFILLD_PARTITION $BACKFILLD_PARTITION_START '
       '$BACKFILLD_PARTITION_END $BACKFILLD_ATTEMPT" >> {dir}/log.txt; sleep 0.1')

JOBS = """
- name: day
  partition: day
  start: 2026-01-01
  end: 2026-03-31
  catchup: false
  concurrency: 3
  command: ["/bin/sh", "-c", '%(run)s']
- name: week
  partition: week
  start: 2025-12-29
  end: 2026-03-30
  upstream: [day]
  concurrency: 2
  command: ["/bin/sh", "-c", '%(run)s']
- name: month
  partition: month
  start: 2026-01-01
  end: 2026-03-01
  upstream: [week]
  concurrency: 2
  command: ["/bin/sh", "-c", '%(run)s']
""" % {"run": RUN}


def test_day_week_month_chain():
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 4}, clock=None, name="chain")
    # Whatever the schedule ran at the first start (with its downstream)
    # stays inside every job's start..end.
    ends = {"day": "2026-03-31", "week": "2026-03-30", "month": "2026-03-01"}
    for r in d.runs(include_boot=True):
        h.soft(r["partition"][:10] <= ends[r["job"]],
               "the schedule's first run enqueued %s %s, after the job's end %s"
               % (r["job"], r["partition"], ends[r["job"]]))
    log = os.path.join(d.dir, "log.txt")
    if os.path.exists(log):
        os.remove(log)
    d.backfill("day", "2026-01-28", "2026-02-03")
    runs = d.runs()
    h.check(all(r["state"] == "succeeded" for r in runs), "runs not all succeeded: %r" % runs)
    days = h.days("2026-01-28", "2026-02-03")
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "day")), days, "day runs")
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "week")), ["2026-01-26", "2026-02-02"],
         "week runs (each once)")
    h.eq(sorted(r["partition"] for r in h.by_job(runs, "month")), ["2026-01-01", "2026-02-01"],
         "month runs (each once; the straddling week feeds both)")

    def t(job, part, field):
        [r] = [r for r in runs if r["job"] == job and r["partition"] == part]
        return h.parse_iso(r[field])

    for wk in ("2026-01-26", "2026-02-02"):
        last = max(t("day", x, "finished_at") for x in days if h.week_of(x) == wk)
        h.check(t("week", wk, "started_at") >= last,
                "week %s started before its last day finished" % wk)
    h.check(t("month", "2026-01-01", "started_at") >= t("week", "2026-01-26", "finished_at"),
            "month 2026-01-01 started before week 2026-01-26 finished")
    for wk in ("2026-01-26", "2026-02-02"):
        h.check(t("month", "2026-02-01", "started_at") >= t("week", wk, "finished_at"),
                "month 2026-02-01 started before week %s finished" % wk)

    with open(os.path.join(d.dir, "log.txt")) as f:
        seen = sorted(tuple(l.split()) for l in f if l.strip())
    want = sorted([("day", x, x, h.days(x, "2026-12-31")[1], "1") for x in days] + [
        ("week", "2026-01-26", "2026-01-26", "2026-02-02", "1"),
        ("week", "2026-02-02", "2026-02-02", "2026-02-09", "1"),
        ("month", "2026-01-01", "2026-01-01", "2026-02-01", "1"),
        ("month", "2026-02-01", "2026-02-01", "2026-03-01", "1")])
    h.eq(seen, want, "BACKFILLD_JOB/PARTITION/PARTITION_START/PARTITION_END/ATTEMPT of every run")
    d.stop()


if __name__ == "__main__":
    h.main([test_day_week_month_chain])
