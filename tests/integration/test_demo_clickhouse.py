#!/usr/bin/env python3
"""tools/demo-clickhouse runs the lesson on a local ClickHouse to the end:
the fact is shown wrong for the deploy window, then repaired (equal to raw
for every day shown), exactly the two ISO weeks of the window rebuilt, no
stage table left holding rows, the audit shown is the backfill's request,
a second backfill leaves the warehouse's checksum unchanged, the daemon
stops with status 0, and the server it started is stopped and its folder
removed.  Stopped by SIGTERM midway, it still stops its server.  Skipped
(77) without clickhouse-server or the ClickHouse driver; with
BACKFILLD_REQUIRE_CLICKHOUSE=1 (CI) that is a failure."""
import os
import re
import shutil
import signal
import subprocess
import sys

import harness as h
from test_clickhouse import SERVER, skip

DEMO = os.path.join(h.SOURCE_ROOT, "tools", "demo-clickhouse")


def build_dir():
    return os.path.dirname(os.path.dirname(h.binaries()[0]))


def server_line(out):
    """(pid, folder) of the server the demo said it started."""
    m = re.search(r"^clickhouse-server \S+, pid (\d+), folder (\S+), HTTP on", out, re.M)
    h.check(m, "the demo did not say which server it started:\n%s" % out[-3000:])
    return int(m.group(1)), m.group(2)


def running(pid):
    """pid is a live process (not a zombie waiting for its reaper)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pid, folder, what):
    h.check(not running(pid), "%s: clickhouse-server %d still runs" % (what, pid))
    h.check(not os.path.exists(folder), "%s: the server's folder %s is left" % (what, folder))


def section(out, title):
    """The text of the demo's section whose heading starts with title."""
    parts = out.split("\n== " + title, 1)
    h.check(len(parts) == 2, "the demo output has no section %r" % title)
    return parts[1].split("\n== ", 1)[0]


def test_demo_clickhouse():
    tmp = h.suite_mkdtemp("chdemo")
    try:
        p = subprocess.run([sys.executable, DEMO, "--build", build_dir(), "--dir", tmp],
                           capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        h.fail("tools/demo-clickhouse did not finish within 240 s (kept %s)" % tmp)
    out = p.stdout
    print(out[-3000:])
    h.eq(p.returncode, 0, "tools/demo-clickhouse exit status (stderr: %s)" % p.stderr[-2000:])
    pid, folder = server_line(out)
    gone(pid, folder, "after the demo")
    before = section(out, "The warehouse before")
    h.eq(before.count("WRONG"), 7, "WRONG before the backfill (5 days, 2 weeks)")
    fact = section(out, "After: the fact table agrees")
    h.check("WRONG" not in fact, "after the backfill a day is still WRONG:\n%s" % fact)
    days = re.findall(r"│ (2026-02-\d\d) │\s+(\d+) │\s+([\d.]+) │\s+(\d+) │\s+([\d.]+) │ ok",
                      fact)
    h.eq([d[0] for d in days], h.days("2026-02-07", "2026-02-13"), "days shown after")
    for d, fs, fr, rs, rr in days:
        h.check(fs == rs and fr == rr, "%s: fact %s/%s vs raw %s/%s" % (d, fs, fr, rs, rr))
    h.check("fact rows outside the window that changed: 0" in fact,
            "the fact changed outside the window:\n%s" % fact)
    weeks = section(out, "After: exactly the weeks")
    rebuilt = re.findall(r"│ (2026-\d\d-\d\d) │.*│ rebuilt", weeks)
    unchanged = re.findall(r"│ (2026-\d\d-\d\d) │.*│ unchanged", weeks)
    h.eq(rebuilt, ["2026-02-02", "2026-02-09"], "weeks rebuilt")
    h.eq(unchanged, ["2026-01-26", "2026-02-16"], "weeks unchanged")
    stages = section(out, "The stage tables")
    h.eq(sorted(re.findall(r"^(_backfilld_stage_\w+): (\d+) rows$", stages, re.M)),
         [("_backfilld_stage_fct_daily_sales", "0"), ("_backfilld_stage_mart_weekly_sales", "0")],
         "stage tables and their rows")
    m = re.search(r"^request (\d+): queued", section(out, "The backfill:"), re.M)
    h.check(m, "the backfill printed no request id")
    audit = section(out, "The audit of that request: backfillctl audit --request %s"
                    % m.group(1))
    h.check(re.search(r"^request %s \(fct_daily_sales\): 7 partitions \(2 downstream\): "
                      r"7 passed" % m.group(1), audit, re.M),
            "the audit shown is not the backfill's:\n%s" % audit)
    again = section(out, "The same backfill again")
    sums = re.findall(r"^warehouse checksum (?:before the second backfill|after it): +(.*)$",
                      again, re.M)
    h.eq(len(sums), 2, "checksums shown")
    h.check(sums[0] == sums[1] and "fct_daily_sales 84:" in sums[0],
            "the second backfill changed the warehouse: %r" % sums)
    h.check("backfilld exited 0." in out, "the daemon did not exit 0")
    shutil.rmtree(tmp)


def test_demo_clickhouse_sigterm():
    """SIGTERM while the demo runs: the daemon and the server are stopped."""
    tmp = h.suite_mkdtemp("chdemo")
    p = subprocess.Popen([sys.executable, DEMO, "--build", build_dir(), "--dir", tmp],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    try:
        for line in p.stdout:
            out += line
            if line.startswith("backfilld is running"):
                break
        pid, folder = server_line(out)
        m = re.search(r"^backfilld is running \(pid (\d+)\)", out, re.M)
        h.check(m, "the demo did not say its daemon runs:\n%s" % out)
        daemon = int(m.group(1))
        h.check(p.poll() is None, "the demo ended before its daemon ran:\n%s" % out)
        p.send_signal(signal.SIGTERM)
        rest, _ = p.communicate(timeout=120)
        out += rest
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    h.eq(p.returncode, 128 + signal.SIGTERM, "exit status after SIGTERM:\n%s" % out[-2000:])
    gone(pid, folder, "after SIGTERM")
    h.check(not running(daemon), "after SIGTERM: backfilld %d still runs" % daemon)
    h.check("clickhouse-server (pid %d) stopped" % pid in out,
            "the demo did not say it stopped the server:\n%s" % out[-2000:])
    shutil.rmtree(tmp)


if __name__ == "__main__":
    if not os.access(SERVER, os.X_OK):
        skip("no %s (apt-get install clickhouse-server)" % SERVER)
    if not os.path.exists(os.path.join(build_dir(), "daemon", "backfilld-ch.so")):
        skip("this build has no ClickHouse driver (libcurl4-openssl-dev)")
    h.main([test_demo_clickhouse, test_demo_clickhouse_sigterm])
