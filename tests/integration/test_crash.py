#!/usr/bin/env python3
"""kill -9 in the middle of a backfill, then a restart (issue 2): the run that
was in flight is queued again, nothing is lost, and every partition lands
exactly once.

The kill happens at a known point, without sleeping: the command job blocks
in partition 2026-02-05 on a FIFO handshake, the test learns from the FIFO
that the partition is running (an event), then kills the daemon."""
import os
import select
import signal

import harness as h

SCRIPT = r"""#!/bin/sh
# $1 = the partition.  attempts.log counts executions (not idempotent on
# purpose); landed.txt is the effect, written idempotently.
set -e
dir="$(dirname "$0")"
p="$1"
echo "$p" >> "$dir/attempts.log"
if [ "$p" = "2026-02-05" ] && [ ! -e "$dir/release" ]; then
    echo "$$" > "$dir/started.fifo"   # blocks until the test reads it
    read x < "$dir/hold.fifo"         # blocks until killed
fi
grep -qx "$p" "$dir/landed.txt" 2>/dev/null || echo "$p" >> "$dir/landed.txt"
"""

JOBS = """
- name: export
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 1
  command: ["/bin/sh", "{dir}/job.sh", "{partition}"]
"""


def lines(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip()]
    except FileNotFoundError:
        return []


def test_kill9_mid_backfill_command_job():
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 2}, name="crash", start=False)
    with open(os.path.join(d.dir, "job.sh"), "w") as f:
        f.write(SCRIPT)
    os.mkfifo(os.path.join(d.dir, "started.fifo"))
    os.mkfifo(os.path.join(d.dir, "hold.fifo"))
    d.start()
    fd = os.open(os.path.join(d.dir, "started.fifo"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        req = d.enqueue("backfill", "export", "--from", "2026-02-01", "--to", "2026-02-10")
        with d.draining():
            r, _, _ = select.select([fd], [], [], 60)
        h.check(r, "partition 2026-02-05 did not start within 60 s (guard)\n" + d.log_tail())
        data = os.read(fd, 100).decode().strip()
    finally:
        os.close(fd)
    h.check(data.isdigit(), "the job sent %r instead of its pid" % data)
    child = int(data)
    h.eq(lines(os.path.join(d.dir, "landed.txt")), h.days("2026-02-01", "2026-02-04"),
         "partitions landed before the kill (concurrency 1, oldest first)")

    # runs --json shows every partition of the request: the running one and
    # the queued ones (backfillctl(1), JSON OUTPUT: state queued|running|...).
    now = d.runs()
    h.soft(sorted((r["partition"], r["state"]) for r in now if r["state"] != "succeeded")
           == [("2026-02-05", "running")] + [(p, "queued") for p in h.days("2026-02-06", "2026-02-10")],
           "runs --json while 2026-02-05 runs: expected it running and 06..10 queued, got %r"
           % [(r["partition"], r["state"]) for r in now])
    d.kill9()
    # The orphaned job would block forever: end it (it is ours to end).
    try:
        os.kill(child, signal.SIGKILL)
    except ProcessLookupError:
        pass
    open(os.path.join(d.dir, "release"), "w").close()

    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))

    want = h.days("2026-02-01", "2026-02-10")
    h.eq(lines(os.path.join(d.dir, "landed.txt")), want, "partitions landed (each once, in order)")
    attempts = lines(os.path.join(d.dir, "attempts.log"))
    for p in want:
        n = attempts.count(p)
        if p == "2026-02-05":
            h.eq(n, 2, "executions of the partition that was running at the kill")
        else:
            h.eq(n, 1, "executions of %s (only the interrupted run starts over)" % p)

    runs = d.runs()
    for p in want:
        ok = [r for r in runs if r["partition"] == p and r["state"] == "succeeded"]
        h.eq(len(ok), 1, "succeeded runs of %s" % p)
    left = [r for r in runs if r["state"] in ("running", "queued")]
    h.eq(left, [], "runs still running or queued after the request finished")
    st = d.status()["export"]
    h.eq((st["queued"], st["running"], st["failed"]), (0, 0, 0), "status after the restart")
    d.stop()


def reference_fact(d):
    """fct_daily_sales as one clean rebuild of every day would leave it."""
    import sqlite3
    con = sqlite3.connect(":memory:")
    con.executescript(h.sales_seed())
    for day in h.days(*h.ALL_DAYS):
        con.execute("DELETE FROM fct_daily_sales WHERE dt = ?", (day,))
        con.execute("INSERT INTO fct_daily_sales (dt, store_id, sales, revenue_usd) "
                    "SELECT dt, store_id, COUNT(*), SUM(amount_usd) FROM raw_sales "
                    "WHERE dt = ? GROUP BY dt, store_id", (day,))
    rows = con.execute("SELECT * FROM fct_daily_sales").fetchall()
    con.close()
    return sorted(tuple(repr(v) for v in r) for r in rows)


def test_kill9_during_sql_backfill():
    d = h.sales_daemon(name="crashsql")
    first, last = h.ALL_DAYS
    req = d.enqueue("backfill", "fct_daily_sales", "--from", first, "--to", last)
    d.kill9()   # wherever the backfill got to: a transaction in flight rolls back
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "wait for request %d after the restart: %r" % (req, resp))
    h.eq(d.dump("fct_daily_sales"), reference_fact(d),
         "fct_daily_sales after kill -9 and restart (one clean rebuild of every day)")
    runs = d.runs()
    for p in h.days(first, last):
        ok = [r for r in runs if r["partition"] == p and r["state"] == "succeeded"]
        h.eq(len(ok), 1, "succeeded runs of %s" % p)
    h.eq([r for r in runs if r["state"] in ("running", "queued")], [],
         "runs left running or queued")
    d.stop()


if __name__ == "__main__":
    h.main([test_kill9_mid_backfill_command_job, test_kill9_during_sql_backfill])
