#!/usr/bin/env python3
"""backfillctl wait REQUEST (issue 30): waits for a request submitted by
another client and exits as --wait does: 0 succeeded, 1 failed or
cancelled, 2 for an unknown request."""
import harness as h

JOBS = """
- name: ok
  partition: day
  catchup: false
  command: ["/bin/true"]
- name: bad
  partition: day
  catchup: false
  command: ["/bin/false"]
- name: slow
  partition: day
  catchup: false
  concurrency: 1
  command: ["/bin/sleep", "5"]
"""


def test_wait():
    d = h.Daemon(jobs=JOBS, name="wait")
    req = d.enqueue("backfill", "ok", "--from", "2026-02-01", "--to", "2026-02-03")
    rc, out, err = d.ctl("wait", req)
    h.eq(rc, 0, "wait on a succeeding request: exit\n" + out + err)
    h.check("3 succeeded" in out, "wait summary: %r" % out)

    req = d.enqueue("backfill", "bad", "--from", "2026-02-01", "--to", "2026-02-01")
    rc, out, err = d.ctl("wait", req)
    h.eq(rc, 1, "wait on a failing request: exit\n" + out + err)
    h.check("1 failed" in out, "wait summary: %r" % out)

    req = d.enqueue("backfill", "slow", "--from", "2026-02-01", "--to", "2026-02-04")
    d.ok("cancel", req)
    rc, out, err = d.ctl("wait", req)
    h.eq(rc, 1, "wait on a cancelled request: exit\n" + out + err)
    h.check("cancelled" in out, "wait summary: %r" % out)

    rc, out, err = d.ctl("wait", 99999)
    h.eq(rc, 2, "wait on an unknown request: exit")
    h.check("no request 99999" in err and err.count("\n") == 1, "stderr: %r" % err)
    d.stop()


if __name__ == "__main__":
    h.main([test_wait])
