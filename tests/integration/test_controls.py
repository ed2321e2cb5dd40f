#!/usr/bin/env python3
"""Backfill controls (issue 16): a cap for one request (--concurrency N),
fail fast then resume (--fail-fast, retry REQUEST), a narrowed downstream
(--downstream JOB[,JOB]), --wait on a cancelled request, and the refusals
of bad input, each one line on stderr with exit 2."""
import re
import subprocess
import time

import harness as h

GUARD = 30.0


def manifest_states(d, req):
    """{(job, partition): state} of a request's manifest rows."""
    return {(j, p): s for j, p, s in d.state_rows(
        "SELECT job, partition_key, state FROM manifest WHERE request_id = ?", (req,))}


def count(states, state):
    return sum(1 for s in states.values() if s == state)


def wait_until(d, cond, what):
    deadline = time.monotonic() + GUARD
    while not cond():
        if time.monotonic() > deadline:
            h.fail("%s: not within %.0f s\n%s" % (what, GUARD, d.log_tail()))
        time.sleep(0.05)


# ---------------------------------------------------------------- --concurrency

CAP_JOBS = """
- name: conc
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 4
  command: ["/bin/sleep", "0.3"]
- name: conc_down
  partition: day
  upstream: [conc]
  concurrency: 4
  command: ["/bin/sleep", "0.3"]
"""


def test_request_cap():
    """--concurrency 1 on a job whose cap is 4: no two runs of the request
    overlap, its downstream items included, while another request of the
    same job still runs several at once."""
    # The real clock: run times are what this test measures.
    d = h.Daemon(jobs=CAP_JOBS, settings={"max_concurrency": 6}, clock=None,
                 name="cap")
    plan = d.json("backfill", "conc", "--from", "2026-02-01", "--to", "2026-02-04",
                  "--concurrency", "1", "--dry-run")
    h.eq(plan.get("concurrency"), 1, "--dry-run --json concurrency")
    out = d.ok("backfill", "conc", "--from", "2026-02-01", "--to", "2026-02-04",
               "--concurrency", "1", "--dry-run")
    h.check("at most 1 runs of this request" in out, "--dry-run table lacks the cap: %r" % out)
    r1 = d.enqueue("backfill", "conc", "--from", "2026-02-01", "--to", "2026-02-06",
                   "--concurrency", "1")
    r2 = d.enqueue("backfill", "conc", "--from", "2026-02-11", "--to", "2026-02-18")
    for r in (r1, r2):
        resp = d.wait_request(r)
        h.eq(resp.get("status"), "0", "wait for request %d: %r" % (r, resp))
    runs = d.runs()
    iv = {r1: [], r2: []}
    for r in runs:
        h.eq(r["state"], "succeeded", "state of %s %s" % (r["job"], r["partition"]))
        iv[r["request"]].append((h.parse_iso(r["started_at"]), h.parse_iso(r["finished_at"])))
    h.eq(len(iv[r1]), 12, "runs of the capped request (6 + 6 downstream)")
    h.eq(len(iv[r2]), 16, "runs of the other request (8 + 8 downstream)")
    capped, free = h.overlap_max(iv[r1]), h.overlap_max(iv[r2])
    print("  max overlap: capped request %d, other request %d" % (capped, free))
    h.eq(capped, 1, "runs of the --concurrency 1 request at once")
    h.check(free >= 2, "the other request never ran two at once (%d)" % free)
    h.check(h.overlap_max(iv[r1] + iv[r2]) <= 6, "max_concurrency exceeded")
    # the cap is kept with the request across a restart
    row = d.state_rows("SELECT concurrency, CASE WHEN fail_fast THEN 1 ELSE 0 END"
                       " FROM requests WHERE id = ?", (r1,))[0]
    h.eq(row, (1, 0), "requests.concurrency, fail_fast of the capped request")
    out = d.ok("runs", "--request", str(r1))
    h.check(out.startswith("request %d: concurrency 1\n" % r1),
            "runs --request of the capped request does not show its cap: %r" % out[:200])
    out = d.ok("runs", "--request", str(r2))
    h.check(out.startswith("ID "), "runs --request of a request without controls: %r" % out[:200])
    d.stop()


def test_request_cap_survives_restart():
    """A capped request interrupted by a restart keeps its cap."""
    jobs = CAP_JOBS.replace('["/bin/sleep", "0.3"]', '["/bin/sleep", "0.4"]')
    d = h.Daemon(jobs=jobs, settings={"max_concurrency": 4}, clock=None,
                 name="caprestart")
    r = d.enqueue("backfill", "conc", "--from", "2026-02-01", "--to", "2026-02-06",
                  "--concurrency", "1", "--no-downstream")
    wait_until(d, lambda: count(manifest_states(d, r), "succeeded") >= 1,
               "a first run of the capped request")
    d.stop()
    d.start()
    resp = d.wait_request(r)
    h.eq(resp.get("status"), "0", "wait after the restart: %r" % resp)
    iv = [(h.parse_iso(x["started_at"]), h.parse_iso(x["finished_at"]))
          for x in d.runs() if x["request"] == r and x["state"] == "succeeded"]
    h.eq(len(iv), 6, "succeeded runs of the capped request")
    h.eq(h.overlap_max(iv), 1, "runs of the request at once, across the restart")
    d.stop()


# ---------------------------------------------------------------- --fail-fast

FF_JOBS = """
- name: ff
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 1
  retries: 0
  command: ["sh", "-c", "test {partition} != 2026-02-04 || test -e {dir}/fixed"]
- name: ff_week
  partition: week
  upstream: [ff]
  command: ["true"]
"""


def test_fail_fast_then_retry():
    """The third partition fails: 2 succeeded, 1 failed, the rest (and the
    week they feed) cancelled, --wait exits 1; after the fix, retry --wait
    completes all of them as the same request and exits 0."""
    d = h.Daemon(jobs=FF_JOBS, name="failfast")
    rc, out, err = d.ctl("backfill", "ff", "--from", "2026-02-02", "--to", "2026-02-08",
                         "--fail-fast", "--wait")
    h.eq(rc, 1, "backfill --fail-fast --wait with a failure (stderr %r)" % err)
    m = re.search(r"request (\d+): (\d+) succeeded, (\d+) failed, (\d+) blocked, "
                  r"(\d+) cancelled of (\d+)", out)
    h.check(m, "--wait summary missing: %r" % out)
    req = int(m.group(1))
    h.eq(tuple(int(x) for x in m.groups()[1:]), (2, 1, 0, 5, 8),
         "summary counts (succeeded, failed, blocked, cancelled, total)")
    h.check("backfillctl retry %d" % req in out, "the summary does not say how to retry: %r" % out)
    st = manifest_states(d, req)
    h.eq({k: v for k, v in st.items() if k[0] == "ff"},
         {("ff", "2026-02-02"): "succeeded", ("ff", "2026-02-03"): "succeeded",
          ("ff", "2026-02-04"): "failed", ("ff", "2026-02-05"): "cancelled",
          ("ff", "2026-02-06"): "cancelled", ("ff", "2026-02-07"): "cancelled",
          ("ff", "2026-02-08"): "cancelled"}, "states after the failure")
    h.eq(st[("ff_week", "2026-02-02")], "cancelled", "the week fed by the request")
    h.eq(sorted(r["partition"] for r in d.runs() if r["id"] is not None),
         ["2026-02-02", "2026-02-03", "2026-02-04"], "partitions that ran")
    out = d.ok("runs", "--request", str(req))
    h.check(out.startswith("request %d: fail-fast\n" % req), "runs --request: %r" % out[:200])
    # A cancelled partition never started: its DURATION is "-", not its
    # finish time since the epoch.
    head = out.split("\n")[1].split()
    rows = [l.split() for l in out.split("\n")[2:] if l.strip()]
    cancelled = [r for r in rows if r[head.index("STATE")] == "cancelled"]
    h.eq(len(cancelled), 5, "cancelled rows of runs --request")
    h.eq({r[head.index("DURATION")] for r in cancelled}, {"-"},
         "DURATION of the cancelled rows (%r)" % cancelled)

    # the fix, then the resume
    open(d.dir + "/fixed", "w").close()
    rc, out, err = d.ctl("retry", str(req), "--wait")
    h.eq(rc, 0, "retry --wait after the fix (stdout %r stderr %r)" % (out, err))
    h.check(re.search(r"request %d: 8 succeeded, 0 failed, 0 blocked, 0 cancelled of 8"
                      % req, out), "retry --wait summary: %r" % out)
    st = manifest_states(d, req)
    h.eq(set(st.values()), {"succeeded"}, "states after the retry")
    runs = [r for r in d.runs() if r["id"] is not None]
    h.eq({r["request"] for r in runs}, {req}, "requests of the runs (retry is the same request)")
    h.eq(sorted(r["partition"] for r in runs if r["job"] == "ff" and r["state"] == "succeeded"),
         h.days("2026-02-02", "2026-02-08"), "ff partitions succeeded")
    audit = d.json("audit", "--request", str(req))
    h.eq(sorted((p["job"], p["partition"]) for p in audit["partitions"]),
         sorted([("ff", x) for x in h.days("2026-02-02", "2026-02-08")] +
                [("ff_week", "2026-02-02")]), "audit --request covers the whole request")
    # the request is done: nothing left to retry
    e = h.one_line_error(*d.ctl("retry", str(req)), 2, "retry with nothing to retry")
    h.check("nothing to retry" in e, "message: %r" % e)
    d.stop()


# ---------------------------------------------------------------- --downstream

def test_downstream_narrowed():
    """--downstream mart_weekly_sales with a weekly and a monthly downstream
    rebuilds only the week; the month shows as stale."""
    d = h.sales_daemon(marts=True, monthly=True, name="narrow")
    # the test clock: nothing due, nothing built at start
    plan = d.json("backfill", "fct_daily_sales", "--from", "2026-02-09", "--to",
                  "2026-02-10", "--downstream", "mart_weekly_sales", "--dry-run")
    h.eq([(p["job"], p["partition"]) for p in plan["partitions"]],
         [("fct_daily_sales", "2026-02-09"), ("fct_daily_sales", "2026-02-10"),
          ("mart_weekly_sales", "2026-02-09")], "--dry-run plan narrowed to the week")
    h.eq(plan.get("downstream_jobs"), ["mart_weekly_sales"], "--dry-run --json: downstream_jobs")
    two = d.json("backfill", "fct_daily_sales", "--from", "2026-02-09", "--to", "2026-02-10",
                 "--downstream", "mart_weekly_sales,mart_monthly_sales", "--dry-run")
    h.eq(two.get("downstream_jobs"), ["mart_weekly_sales", "mart_monthly_sales"],
         "--dry-run --json: downstream_jobs of two")
    every = d.json("backfill", "fct_daily_sales", "--from", "2026-02-09", "--to", "2026-02-10",
                   "--dry-run")
    h.check("downstream_jobs" in every and every["downstream_jobs"] is None,
            "--dry-run --json without --downstream: downstream_jobs null: %r" % every)
    h.eq((every.get("fail_fast"), plan.get("fail_fast")), (False, False), "--dry-run fail_fast")
    ff = d.json("backfill", "fct_daily_sales", "--from", "2026-02-09", "--to", "2026-02-10",
                "--fail-fast", "--dry-run")
    h.eq(ff.get("fail_fast"), True, "--dry-run --fail-fast --json: fail_fast")
    text = d.ok("backfill", "fct_daily_sales", "--from", "2026-02-09", "--to", "2026-02-10",
                "--downstream", "mart_weekly_sales", "--dry-run")
    h.check("\ndownstream: only mart_weekly_sales and what they feed; the other downstream"
            " jobs' partitions are left stale\n" in text, "--dry-run text: --downstream:\n" + text)
    text = d.ok("backfill", "fct_daily_sales", "--from", "2026-02-09", "--to", "2026-02-10",
                "--dry-run")
    h.check("downstream: only" not in text, "--dry-run text without --downstream:\n" + text)
    before = len(d.runs())
    d.backfill("fct_daily_sales", "2026-02-09", "2026-02-10", "--downstream",
               "mart_weekly_sales")
    new = d.runs()[before:]
    h.eq(sorted((r["job"], r["partition"]) for r in new),
         [("fct_daily_sales", "2026-02-09"), ("fct_daily_sales", "2026-02-10"),
          ("mart_weekly_sales", "2026-02-09")], "runs of the narrowed backfill")
    out = d.ok("runs", "--request", str(d.runs()[-1]["request"]))
    h.check(out.startswith("request %d: downstream mart_weekly_sales\n"
                           % d.runs()[-1]["request"]), "runs --request: %r" % out[:200])
    out = d.ok("stale")
    h.check(re.search(r"mart_monthly_sales\s+2026-02-01", out),
            "the month left out is not stale: %r" % out)
    h.check("mart_weekly_sales" not in out, "the rebuilt week is stale: %r" % out)
    # errors name the job
    e = h.one_line_error(*d.ctl("backfill", "fct_daily_sales", "--from", "2026-02-09",
                                "--to", "2026-02-10", "--downstream", "nope"),
                         2, "--downstream unknown job")
    h.check("nope" in e, "message does not name the job: %r" % e)
    e = h.one_line_error(*d.ctl("backfill", "mart_weekly_sales", "--from", "2026-02-09",
                                "--to", "2026-02-09", "--downstream",
                                "mart_weekly_sales,fct_daily_sales"),
                         2, "--downstream job not downstream")
    h.check("mart_weekly_sales is not downstream" in e, "message: %r" % e)
    e = h.one_line_error(*d.ctl("backfill", "fct_daily_sales", "--from", "2026-02-09",
                                "--to", "2026-02-10", "--downstream", "fct_daily_sales"),
                         2, "--downstream naming the backfilled job")
    h.check("fct_daily_sales is not downstream of fct_daily_sales" in e, "message: %r" % e)
    d.stop()


# ---------------------------------------------------------------- --wait, cancel

SLOW_JOBS = """
- name: slow
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 1
  command: ["/bin/sleep", "0.4"]
"""


def newest_request(d):
    return d.state_rows("SELECT max(id) FROM requests")[0][0]


def test_wait_on_cancelled_request():
    """--wait on a request cancelled midway exits 1 and counts the cancelled."""
    d = h.Daemon(jobs=SLOW_JOBS, name="waitcancel")
    argv = [d.backfillctl, "--socket", d.sock, "backfill", "slow", "--from",
            "2026-02-01", "--to", "2026-02-10", "--wait"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=d.env(), cwd=d.dir)
    wait_until(d, lambda: newest_request(d) and
               count(manifest_states(d, newest_request(d)), "succeeded") >= 1,
               "a first partition done")
    req = newest_request(d)
    d.ok("cancel", str(req))
    with d.draining():
        out, err = p.communicate(timeout=GUARD)
    h.eq(p.returncode, 1, "--wait on a cancelled request (stdout %r stderr %r)" % (out, err))
    m = re.search(r"(\d+) cancelled of 10", out)
    h.check(m and int(m.group(1)) >= 1, "summary lacks the cancelled count: %r" % out)
    h.check("backfillctl retry %d" % req in out, "summary: %r" % out)
    d.stop()


# ---------------------------------------------------------------- bad input

def test_bad_input():
    d = h.Daemon(jobs=SLOW_JOBS.replace("0.4", "3") + """
- name: slow_down
  partition: day
  upstream: [slow]
  command: ["true"]
""", name="ctlbad")
    state0 = d.state_dump()
    bad = [
        ("--concurrency 0", ["--concurrency", "0"], "positive integer"),
        ("--concurrency -1", ["--concurrency", "-1"], "positive integer"),
        ("--concurrency abc", ["--concurrency", "abc"], "positive integer"),
        ("--concurrency above the job's", ["--concurrency", "2"], "concurrency 1"),
        ("--downstream unknown", ["--downstream", "nope"], "nope"),
        ("--downstream not downstream", ["--downstream", "slow"], "slow is not downstream"),
        ("--downstream empty name", ["--downstream", "slow_down,"], "empty"),
        ("--downstream with --no-downstream", ["--downstream", "slow_down",
                                               "--no-downstream"], "choose one"),
    ]
    for what, extra, word in bad:
        e = h.one_line_error(*d.ctl("backfill", "slow", "--from", "2026-02-01", "--to",
                                    "2026-02-02", *extra), 2, what)
        h.check(word in e, "%s: message %r lacks %r" % (what, e, word))
    e = h.one_line_error(*d.ctl("retry", "999999"), 2, "retry of an unknown request")
    h.check("no request 999999" in e, "message: %r" % e)
    e = h.one_line_error(*d.ctl("retry", "abc"), 2, "retry abc")
    h.eq(d.state_dump(), state0, "the state store after refused commands")
    # a request with a run in flight
    req = d.enqueue("backfill", "slow", "--from", "2026-02-01", "--to", "2026-02-01",
                    "--no-downstream")
    wait_until(d, lambda: manifest_states(d, req).get(("slow", "2026-02-01")) == "running",
               "the run in flight")
    e = h.one_line_error(*d.ctl("retry", str(req)), 2, "retry of a running request")
    h.check("in flight" in e, "message: %r" % e)
    d.wait_request(req)
    e = h.one_line_error(*d.ctl("retry", str(req)), 2, "retry with nothing to retry")
    h.check("nothing to retry" in e, "message: %r" % e)
    d.stop()


if __name__ == "__main__":
    h.main([test_request_cap,
            test_request_cap_survives_restart,
            test_fail_fast_then_retry,
            test_downstream_narrowed,
            test_wait_on_cancelled_request,
            test_bad_input])
