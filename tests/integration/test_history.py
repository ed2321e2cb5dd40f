#!/usr/bin/env python3
"""test_history.py - keep_runs: old runs are pruned, what matters stays.

Nine backfills of the same 240 hourly partitions a day apart on the test
clock, of a job with `keep_runs: 2d` and of one that overrides it with
365d.  Once pruning has run on the daemon's clock: the first job keeps
only the runs of the last two days (at most 4 x 240, as the contract
bounds it), plus the newest successful run of a partition whose newest
runs failed; the second keeps everything; the requests left empty are
gone with their audit rows; `runs`, `audit`, `--reprocess failed` and
status work on what is left, and status shows the runs kept and the
store's size.

Pruning is asynchronous (slices on the loop): the test waits for status's
runs_kept to reach the exact number that must remain, a bounded poll.
"""

import datetime
import time

import harness as h

HOURS = 240           # 2026-01-01T00 .. 2026-01-10T23
BACKFILLS = 9
FAILING = "2026-01-05T00"
GUARD = 60.0


def jobs_yaml():
    return """
    - name: short
      warehouse: a
      partition: hour
      keep_runs: 2d
      sql: INSERT INTO ran (k) VALUES (:partition)
      checks:
        - name: not_broken
          sql: SELECT NOT (:partition = '%s' AND (SELECT broken FROM ctl))
    - name: long
      warehouse: b
      partition: hour
      keep_runs: 365d
      sql: INSERT INTO ran (k) VALUES (:partition)
    """ % FAILING


SEED = "CREATE TABLE ran (k TEXT); CREATE TABLE ctl (broken INTEGER); INSERT INTO ctl VALUES (0);"


def state(d, sql):
    return d.state_rows(sql)


def test_keep_runs_prunes_and_keeps_what_matters():
    day0 = datetime.datetime(2026, 3, 1)
    d = h.Daemon(jobs=jobs_yaml(), warehouses={"a": SEED, "b": SEED},
                 settings={"max_concurrency": 2, "max_backfill": 1000, "keep_runs": "2d"},
                 clock=day0.strftime("%Y-%m-%dT%H:%M:%SZ"), name="history")
    requests = []
    for i in range(BACKFILLS):
        now = day0 + datetime.timedelta(days=i)
        d.set_clock(now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if i == BACKFILLS - 2:   # the last two backfills fail one partition
            con = d.wh("a")
            con.execute("UPDATE ctl SET broken = 1")
            con.commit()
            con.close()
        for job in ("short", "long"):
            rc, out, err = d.ctl("backfill", job, "--from", "2026-01-01",
                                 "--to", "2026-01-10", "--wait")
            want = 1 if (job == "short" and i >= BACKFILLS - 2) else 0
            h.eq(rc, want, "backfill %s #%d exit (stderr %r)" % (job, i + 1, err))
        requests.append(max(r["request"] for r in d.runs("--job", "short")))
    # pruning ran as the days passed: never more than 4 backfills of short
    h.check(d.json("status")["runs_kept"] <= 4 * HOURS + BACKFILLS * HOURS,
            "runs kept while the days passed")

    # a day after the last backfill: runs finished before day 7 may go
    d.set_clock((day0 + datetime.timedelta(days=BACKFILLS)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    want = (2 * HOURS + 1) + BACKFILLS * HOURS
    deadline = time.monotonic() + GUARD
    while True:
        st = d.json("status")
        if st["runs_kept"] == want:
            break
        h.check(time.monotonic() < deadline,
                "runs_kept is %d, not %d, %.0f s after the clock moved (guard)"
                % (st["runs_kept"], want, GUARD))
        time.sleep(0.05)
    h.check(st["runs_kept"] <= 4 * HOURS + BACKFILLS * HOURS, "contract bound")
    h.check(st["store_bytes"] > 0 and st["wal_bytes"] >= 0, "store size in status: %r" % st)
    text = d.ok("status")
    h.check("history: %d runs kept; state store " % want in text,
            "the text status names the runs kept: %r" % text)

    short = d.runs("--job", "short")
    h.eq(len(short), 2 * HOURS + 1, "runs of short left")
    h.eq({r["request"] for r in short}, set(requests[-2:]) | {requests[-3]},
         "requests whose runs of short are left")
    kept_success = [r for r in short if r["request"] == requests[-3]]
    h.eq([(r["partition"], r["state"]) for r in kept_success], [(FAILING, "succeeded")],
         "the newest success of the failing partition is kept")
    h.eq(len(d.runs("--job", "long")), BACKFILLS * HOURS, "runs of long: all kept")
    # the pruned requests are gone whole, audit rows and manifest rows too
    h.eq(state(d, "SELECT COUNT(*) FROM requests WHERE job = 'short'"), [(3,)],
         "requests of short left")
    h.eq(state(d, "SELECT COUNT(*) FROM run_audit WHERE run_id NOT IN (SELECT id FROM runs)"),
         [(0,)], "audit rows of pruned runs")
    h.eq(state(d, "SELECT COUNT(*) FROM manifest WHERE request_id NOT IN (SELECT id FROM requests)"),
         [(0,)], "manifest rows of pruned requests")
    rc, out, err = d.ctl("audit", "--request", requests[0])
    h.one_line_error(rc, out, err, 2, "audit of a pruned request")
    audit = d.json("audit", "--request", requests[-1])
    h.eq(len(audit["partitions"]), HOURS, "partitions in the last request's audit")
    # the partition's state survives pruning: it is the one failed one
    st = d.status("short")["short"]
    h.eq((st["succeeded"], st["failed"]), (HOURS - 1, 1), "status counts of short")
    con = d.wh("a")
    con.execute("UPDATE ctl SET broken = 0")
    con.commit()
    con.close()
    out = d.ok("backfill", "short", "--from", "2026-01-01", "--to", "2026-01-10",
               "--reprocess", "failed", "--wait")
    h.check("1 succeeded" in out, "--reprocess failed reran the one failed partition: %r" % out)
    d.stop()


def test_keep_runs_bad_values():
    for value, col in (("30m", 12), ("a year", 12)):
        d = h.Daemon(jobs="- name: x\n  partition: day\n  command: [\"true\"]\n",
                     settings={"keep_runs": value}, name="keep", start=False)
        p = h.subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                             capture_output=True, text=True)
        e = h.one_line_error(p.returncode, p.stdout, p.stderr, 2, "keep_runs: %s" % value)
        h.check(":3:%d: keep_runs must be a duration of at least 1h" % col in e,
                "keep_runs: %s: %r" % (value, e))


if __name__ == "__main__":
    h.main([test_keep_runs_prunes_and_keeps_what_matters, test_keep_runs_bad_values])
