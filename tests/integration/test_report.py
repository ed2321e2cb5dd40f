#!/usr/bin/env python3
"""The report page (issue 15): `backfillctl report --html FILE` and
report_file write one self-contained HTML file; rendered by headless
Chromium, its partition cells (data-job, data-partition, data-state) match
`map --json` for every job, and its screenshot is not blank.

Exit 77 (skipped) when chromium is not installed (Debian: chromium),
unless BACKFILLD_REQUIRE_CHROMIUM=1 (CI), which makes that a failure."""
import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import harness as h
import test_map

GUARD = 20.0


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("BACKFILLD_REQUIRE_CHROMIUM") == "1":
        print("chromium is not installed (apt-get install chromium) and"
              " BACKFILLD_REQUIRE_CHROMIUM=1")
        sys.exit(1)
    print("SKIP: chromium is not installed (apt-get install chromium)")
    sys.exit(77)


def run_chromium(tool, *args):
    profile = tempfile.mkdtemp(prefix="bfd-chromium-")
    try:
        p = subprocess.run([tool, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-background-networking", "--no-first-run",
                            "--disable-dev-shm-usage",
                            "--user-data-dir=" + profile] + list(args),
                           capture_output=True, text=True, timeout=180)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return p


class Cells(html.parser.HTMLParser):
    """The map cells of a DOM: [(job, partition, state)] in order."""

    def __init__(self):
        super().__init__()
        self.cells = []
        self.scripts = 0
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for k in ("src", "href"):
            if a.get(k):
                self.external.append((tag, a[k]))
        if "data-partition" in a:
            self.cells.append((a["data-job"], a["data-partition"], a["data-state"]))


def png_varied(path):
    """True when the PNG's pixels are not all one colour."""
    with open(path, "rb") as f:
        data = f.read()
    h.check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG: %s" % path)
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return len(set(raw[1:4096 * 16])) > 4


def test_report_matches_map():
    tool = chromium()
    d = h.Daemon(jobs=test_map.JOBS, name="report", clock="2026-01-31T12:00:00Z",
                 settings={"report_file": "report.html"})
    auto = os.path.join(d.dir, "report.html")
    deadline = time.monotonic() + GUARD
    while not os.path.exists(auto):
        h.check(time.monotonic() < deadline, "report_file not written at start")
        time.sleep(0.02)
    rc, out, err = d.ctl("backfill", "daily", "--from", "2026-01-05", "--to", "2026-01-18",
                         "--wait")
    h.eq(rc, 1, "backfill with a failed partition: exit")
    page = os.path.join(d.dir, "now.html")
    d.ok("report", "--html", page)
    with open(page) as f:
        text = f.read()
    h.check("<script" not in text.lower(), "no script in the page")
    h.check("command exited with status 1" in text, "the failure's error in the page")
    h.check("<th>time left</th>" in text, "the requests table has the time left")
    h.check("<h2>Audit of recent requests</h2>" in text and
            re.search(r"<tr><td>\d+</td><td>daily</td><td>backfill</td>", text),
            "the backfill in the audit of recent requests")
    p = run_chromium(tool, "--dump-dom", "file://" + page)
    h.check(p.returncode == 0, "chromium --dump-dom: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
    dom = Cells()
    dom.feed(p.stdout)
    h.eq((dom.scripts, dom.external), (0, []), "scripts and external assets in the DOM")
    for job in ("daily", "weekly", "hourly"):
        m = d.json("map", job)
        want = []
        for r in m["ranges"]:
            want += [r["state"]] * r["count"]
        got = [c for c in dom.cells if c[0] == job]
        h.eq(len(got), len(want), "cells of %s" % job)
        h.eq(got[0][1], m["from"], "first cell of %s" % job)
        h.eq(got[-1][1], m["to"], "last cell of %s" % job)
        h.eq([c[2] for c in got], want, "cell states of %s against map --json" % job)
    h.check(("daily", "2026-01-08", "failed") in dom.cells, "the failed day's cell")
    h.check(("weekly", "2026-01-05", "blocked") in dom.cells, "the blocked week's cell")
    png = os.path.join(d.dir, "shot.png")
    p = run_chromium(tool, "--screenshot=" + png, "--window-size=1000,1200",
                     "file://" + page)
    h.check(os.path.exists(png), "no screenshot: %s" % p.stderr[-2000:])
    h.check(png_varied(png), "the screenshot is blank")
    d.stop()
    with open(auto) as f:
        final = f.read()
    h.check('data-partition="2026-01-08" data-state="failed"' in final,
            "report_file rewritten at shutdown with the failure")
    h.eq(sorted(n for n in os.listdir(d.dir) if ".tmp." in n), [], "temporary files left")


if __name__ == "__main__":
    h.main([test_report_matches_map])
