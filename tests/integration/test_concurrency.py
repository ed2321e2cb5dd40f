#!/usr/bin/env python3
"""Concurrency caps (issue 2), observed from the runs' own started_at and
finished_at: max_concurrency 3 over all jobs and concurrency 2 on each of two
jobs whose runs sleep 0.3 s.  The caps hold and are reached, and the two
requests share the pool (neither waits for the other to finish)."""
import harness as h

JOBS = """
- name: j1
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 2
  command: ["/bin/sleep", "0.3"]
- name: j2
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 2
  command: ["/bin/sleep", "0.3"]
"""


def test_caps_observed():
    # The real clock: run times are what this test measures.
    d = h.Daemon(jobs=JOBS, settings={"max_concurrency": 3}, clock=None, name="caps")
    r1 = d.enqueue("backfill", "j1", "--from", "2026-02-01", "--to", "2026-02-08")
    r2 = d.enqueue("backfill", "j2", "--from", "2026-02-01", "--to", "2026-02-08")
    for r in (r1, r2):
        resp = d.wait_request(r)
        h.eq(resp.get("status"), "0", "wait for request %d: %r" % (r, resp))
    runs = d.runs()
    h.eq(len(runs), 16, "runs of the two requests")
    iv = {}
    for r in runs:
        h.eq(r["state"], "succeeded", "state of %s %s" % (r["job"], r["partition"]))
        s, e = h.parse_iso(r["started_at"]), h.parse_iso(r["finished_at"])
        h.check(e >= s, "run %s finished before it started" % r["id"])
        h.check((e - s).total_seconds() >= 0.25,
                "run %s %s took %.3f s, less than its 0.3 s sleep: times not real?"
                % (r["job"], r["partition"], (e - s).total_seconds()))
        iv.setdefault(r["job"], []).append((s, e))
    total = h.overlap_max(iv["j1"] + iv["j2"])
    per = {j: h.overlap_max(v) for j, v in iv.items()}
    print("  max overlap: all %d, j1 %d, j2 %d" % (total, per["j1"], per["j2"]))
    h.check(total <= 3, "max_concurrency 3 exceeded: %d runs at once" % total)
    for j, n in per.items():
        h.check(n <= 2, "concurrency 2 of %s exceeded: %d runs at once" % (j, n))
    h.eq(total, 3, "max_concurrency reached (3 runs at once)")
    h.eq(max(per.values()), 2, "a job's concurrency reached (2 runs at once)")
    # Both requests progressed together (round-robin, no starvation).
    j2_first = min(s for s, _ in iv["j2"])
    j1_last = max(e for _, e in iv["j1"])
    h.check(j2_first < j1_last, "j2's request waited for j1's to finish")
    d.stop()


if __name__ == "__main__":
    h.main([test_caps_observed])
