#!/usr/bin/env python3
"""map_bench.py - the cost of `backfillctl map` over 87,600 hourly
partitions (ten years), issue 15.

Starts a daemon (tests/integration/harness.py) with an hourly job, fills
its state store's partition_latest with 87,600 rows (every 97th failed),
restarts it and times `backfillctl map JOB --from 2016-01-01T00 --to
2025-12-28T23` with --json and as the calendar: the wall time of the
whole command (client start, request, the daemon's range read and
rendering, output), median of 9, after one warm-up.  Prints one line per
form; target: at most 50 ms.

    BACKFILLD=build/daemon/backfilld BACKFILLCTL=build/daemon/backfillctl \\
        python3 tests/bench/map_bench.py
"""
import datetime
import os
import sqlite3
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness as h  # noqa: E402

N = 87600
JOB = """
- name: hourly
  partition: hour
  start: 2016-01-01T00
  catchup: false
  command: ["true"]
"""


def main():
    d = h.Daemon(jobs=JOB, name="mapbench", clock="2026-01-01T00:30:00Z")
    d.stop()
    t0 = datetime.datetime(2016, 1, 1)
    con = sqlite3.connect(d.state_db)
    con.executemany(
        "INSERT OR REPLACE INTO partition_latest (job, partition_key, run_id, state)"
        " VALUES ('hourly', ?, ?, ?)",
        (((t0 + datetime.timedelta(hours=i)).strftime("%Y-%m-%dT%H"), i + 1000,
          "failed" if i % 97 == 0 else "succeeded") for i in range(N)))
    con.commit()
    con.close()
    d.start()
    args = ["map", "hourly", "--from", "2016-01-01T00", "--to", "2025-12-28T23"]
    for form, extra in (("json", ["--json"]), ("calendar", [])):
        argv = [d.backfillctl, "--socket", d.sock] + args + extra
        subprocess.run(argv, capture_output=True, check=True)
        times = []
        for _ in range(9):
            t = time.monotonic()
            p = subprocess.run(argv, capture_output=True, check=True)
            times.append((time.monotonic() - t) * 1000)
        print("map %s, %d hourly partitions: median %.1f ms (min %.1f, max %.1f),"
              " %d bytes out" % (form, N, statistics.median(times), min(times),
                                 max(times), len(p.stdout)))
    d.stop()
    d.close()


if __name__ == "__main__":
    main()
