#!/usr/bin/env python3
"""backfillctl map (issue 15): the ranges of `map --json` match the runs
of a backfill with a failed partition and a blocked downstream week; the
calendar shows the same letters; the default range and the bound."""
import os
import pty
import re
import subprocess

import harness as h

JOBS = """
- name: daily
  partition: day
  start: 2026-01-01
  catchup: false
  retries: 0
  command: ["sh", "-c", "test {partition} != 2026-01-08"]
- name: weekly
  partition: week
  upstream: [daily]
  command: ["true"]
- name: hourly
  partition: hour
  command: ["true"]
"""


def compress(states):
    """[(key, state)] in key order -> ranges as map --json gives them."""
    out = []
    for key, st in states:
        if out and out[-1]["state"] == st:
            out[-1]["to"] = key
            out[-1]["count"] += 1
        else:
            out.append({"from": key, "to": key, "state": st, "count": 1})
    return out


def test_map_matches_runs():
    d = h.Daemon(jobs=JOBS, name="map", clock="2026-01-31T12:00:00Z")
    rc, out, err = d.ctl("backfill", "daily", "--from", "2026-01-05", "--to", "2026-01-18",
                         "--wait")
    h.eq(rc, 1, "backfill with a failed partition: exit")
    # the newest run of each partition (runs: oldest first), the blocked
    # downstream item as runs --json shows it (id null, state blocked)
    latest = {}
    for r in d.runs(include_boot=True):
        latest[(r["job"], r["partition"])] = r["state"]
    days = h.days("2026-01-01", "2026-01-20")
    want = compress([(k, latest.get(("daily", k), "never_run")) for k in days])
    got = d.json("map", "daily", "--from", "2026-01-01", "--to", "2026-01-20")
    h.eq(got, {"job": "daily", "grain": "day", "timezone": "UTC", "from": "2026-01-01",
               "to": "2026-01-20", "ranges": want}, "map daily --json against the runs")
    h.eq([r["state"] for r in want],
         ["never_run", "succeeded", "failed", "succeeded", "never_run"],
         "the shape of the expected ranges (test sanity)")
    # the daily schedule: 01-30 is the newest due day (catchup off), so the
    # default range is start..2026-01-30
    got = d.json("map", "daily")
    h.eq((got["from"], got["to"], sum(r["count"] for r in got["ranges"])),
         ("2026-01-01", "2026-01-30", 30), "default range")
    wk = d.json("map", "weekly", "--from", "2026-01-05", "--to", "2026-01-18")
    want = compress([(k, latest.get(("weekly", k), "never_run"))
                     for k in ("2026-01-05", "2026-01-12")])
    h.eq(wk["ranges"], want, "map weekly --json against the runs")
    h.eq([r["state"] for r in wk["ranges"]], ["blocked", "succeeded"],
         "the week of the failed day is blocked")
    # the calendar: a row per ISO week, one letter per day
    text = d.ok("map", "daily", "--from", "2026-01-01", "--to", "2026-01-20")
    h.check("\033[" not in text, "colours without a terminal:\n" + text)
    rows = {l[:10]: l[15:] for l in text.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", l)}
    h.eq(rows, {"2025-12-29": "   nnnn", "2026-01-05": "sssFsss",
                "2026-01-12": "sssssss", "2026-01-19": "nn"}, "calendar rows")
    h.check(re.search(r"legend:  s succeeded 13  F failed 1  n never_run 6", text),
            "legend with counts:\n" + text)
    # on a terminal (a pty): the same letters, coloured with ANSI escapes
    master, slave = pty.openpty()
    p = subprocess.Popen([d.backfillctl, "--socket", d.sock, "map", "daily", "--from",
                          "2026-01-05", "--to", "2026-01-11"], stdout=slave,
                         stderr=subprocess.PIPE, env=d.env())
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    h.eq(p.wait(timeout=30), 0, "map on a terminal: exit")
    tty = b"".join(chunks).decode()
    h.check("\033[0;32msss\033[0;1;31mF\033[0;32msss\033[0m" in tty,
            "coloured cells on a terminal: %r" % tty)
    # bounds: refused above 100,000 partitions, computed not enumerated
    rc, out, err = d.ctl("map", "hourly", "--from", "2000-01-01", "--to", "2026-01-01")
    h.eq(rc, 2, "a map of 228,000 hours: exit")
    h.check("above the bound of 100000" in err and "\n" not in err.strip(),
            "one line naming the bound: %r" % err)
    rc, out, err = d.ctl("map", "nosuch")
    h.eq(rc, 2, "unknown job: exit")
    d.stop()


if __name__ == "__main__":
    h.main([test_map_matches_runs])
