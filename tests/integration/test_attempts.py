#!/usr/bin/env python3
"""`attempt` counts retries of a failure, not interruptions (issue 24,
item 9).

A job with `retries: 1` whose run is interrupted twice, by a crash (kill -9)
and by a stop (SIGTERM past shutdown_grace), then fails for real once and
succeeds: every interrupted run and the run after it share attempt 1
(BACKFILLD_ATTEMPT, `runs`), the real failure is attempt 1 too, and the
retry it earned is attempt 2, which lands the partition.  On main each
interruption climbed the attempt (the crash and the stop made it 3) and
used up the retry, so the real failure was final.

The job's script logs each execution's BACKFILLD_ATTEMPT; the test waits for
those lines (a bounded poll on the file), never for a time.
"""
import os
import time

import harness as h

GUARD = 30.0

SCRIPT = r"""#!/bin/sh
dir="$(dirname "$0")"
[ "$BACKFILLD_PARTITION" = 2026-02-03 ] || exit 0   # the schedule's own run
echo "$BACKFILLD_ATTEMPT" >> "$dir/attempts.log"
n=$(wc -l < "$dir/attempts.log")
case "$n" in
1|2) exec sleep 60 ;;                  # interrupted by the test
3) echo "a real failure" >&2; exit 3 ;;
*) exit 0 ;;
esac
"""

JOBS = """
- name: export
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  retries: 1
  retry_backoff: 1s
  command: ["/bin/sh", "{dir}/job.sh"]
"""


def attempts(d):
    try:
        with open(os.path.join(d.dir, "attempts.log")) as f:
            return [l.strip() for l in f if l.strip()]
    except FileNotFoundError:
        return []


def wait_executions(d, n):
    deadline = time.monotonic() + GUARD
    while len(attempts(d)) < n:
        h.check(time.monotonic() < deadline, "only %d of %d executions within %.0f s (guard)\n%s"
                % (len(attempts(d)), n, GUARD, d.log_tail()))
        time.sleep(0.02)


def test_interruptions_are_not_attempts():
    # the real clock: the retry's backoff must elapse
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 2, "shutdown_grace": "1s"},
                 clock=None, name="attempts", start=False)
    with open(os.path.join(d.dir, "job.sh"), "w") as f:
        f.write(SCRIPT)
    d.start()
    req = d.enqueue("backfill", "export", "--from", "2026-02-03", "--to", "2026-02-03")
    wait_executions(d, 1)
    d.kill9()                        # a crash during the run
    d.start()
    wait_executions(d, 2)
    d.stop()                         # a stop past shutdown_grace cancels it
    d.start()
    resp = d.wait_request(req)
    h.eq(resp.get("status"), "0", "the request after two interruptions and a failure: %r" % resp)
    h.eq(attempts(d), ["1", "1", "1", "2"], "BACKFILLD_ATTEMPT of each execution")
    runs = d.runs("--job", "export")
    got = [(r["attempt"], r["state"]) for r in runs]
    h.eq(got, [(1, "failed"), (1, "cancelled"), (1, "failed"), (2, "succeeded")],
         "runs of the partition (attempt, state), oldest first")
    h.check("interrupted" in (runs[0]["error"] or ""),
            "the crash's run does not say it was interrupted: %r" % runs[0])
    h.check("status 3" in (runs[2]["error"] or ""),
            "the failed attempt 1 does not carry its error: %r" % runs[2])
    h.eq(d.status("export")["export"]["failed"], 0, "failed partitions at the end")
    d.stop()


if __name__ == "__main__":
    h.main([test_interruptions_are_not_attempts])
