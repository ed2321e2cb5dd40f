#!/usr/bin/env python3
"""The report page (issue 15): `backfillctl report --html FILE` and
report_file write one self-contained HTML file; rendered by headless
Chromium, its partition cells (data-job, data-partition, data-state) match
`map --json` for every job, the day grid has its weeks' dates and its
months, the jobs table has the columns of `status` with its values, and its
screenshot is not blank; a throttle's bound shows in its shortest form; a
Berlin hourly job's page (issue 42) names its zone, draws 2023-10-29 as
one row of 25 hours with the second 02 marked, and its older and newer
links (a key's '+' as %2B) lead to the hours before and after.

Exit 77 (skipped) when chromium is not installed (Debian: chromium),
unless BACKFILLD_REQUIRE_CHROMIUM=1 (CI), which makes that a failure."""
import datetime
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
import test_http
import test_map

GUARD = 20.0
# the newest partitions a map shows on a page of jobs (docs/commands.md)
WINDOW = {"hour": 7 * 24, "day": 13 * 7, "week": 53, "month": 36}


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
    """The map cells of a DOM: [(job, partition, state)] in order; and the
    day grids' labels and cells in order, [(kind, job, value)] with kind
    "week", "month" or "cell"."""

    def __init__(self):
        super().__init__()
        self.cells = []
        self.events = []
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
            self.events.append(("cell", a["data-job"], a["data-partition"]))
        for kind in ("week", "month"):
            if "data-" + kind in a:
                self.events.append((kind, a["data-job"], a["data-" + kind]))


def table_rows(page, heading):
    """The rows of the table under <h2>heading</h2>: [[cell text]]."""
    part = page.split("<h2>%s</h2>" % heading, 1)[1].split("</table>", 1)[0]
    return [[re.sub(r"<[^>]*>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)]
            for r in re.findall(r"<tr>(.*?)</tr>", part, re.S)]


def check_jobs_table(d, page):
    """The jobs table has the columns of status, with its values."""
    rows = table_rows(page, "Jobs")
    head = rows[0]
    for col in ("watermark", "next due", "stale"):
        h.check(col in head, "the jobs table has no %r column: %r" % (col, head))
    st = d.status()
    h.eq(sorted(r[0] for r in rows[1:]), sorted(st), "the jobs table's jobs")
    for r in rows[1:]:
        j = st[r[0]]
        got = dict(zip(head, r))
        h.eq((got["watermark"], got["next due"], got["stale"]),
             (j["watermark"] or "-", j["next_due"] or "-", str(j["stale"])),
             "the jobs table's watermark, next due and stale of %s against status --json" % r[0])
        h.eq([got[k] for k in ("grain", "paused", "catchup", "queued", "running", "succeeded",
                               "failed", "blocked", "late")],
             [j["grain"], "yes" if j["paused"] else "no", j["catchup"]]
             + [str(j[k]) for k in ("queued", "running", "succeeded", "failed", "blocked",
                                    "late")],
             "the jobs table's other columns of %s against status --json" % r[0])


def check_day_labels(dom, job, first, last):
    """The day grid of job (first..last) has the date of each week's
    Monday before that week's row and the month before its 1st."""
    ev = [(k, v) for k, j, v in dom.events if j == job]
    cells = [v for k, v in ev if k == "cell"]
    h.eq((cells[0], cells[-1]), (first, last), "the day grid's range of %s" % job)
    d0 = datetime.date.fromisoformat(first)
    mondays = []
    m = d0 - datetime.timedelta(d0.weekday())
    while m <= datetime.date.fromisoformat(last):
        mondays.append(m.isoformat())
        m += datetime.timedelta(7)
    weeks = [v for k, v in ev if k == "week"]
    h.eq(weeks, mondays, "the week labels of %s (each week's Monday)" % job)
    for i, (k, v) in enumerate(ev):
        if k == "week":
            nxt = next(x for kk, x in ev[i:] if kk == "cell")
            h.check(nxt == v or (nxt == first and v == mondays[0]),
                    "the label %s is not at its week's row (next cell %s)" % (v, nxt))
    months = [v for k, v in ev if k == "month"]
    want = sorted({c[:7] for c in cells})
    h.eq(months, want, "the month labels of %s" % job)
    for i, (k, v) in enumerate(ev):
        if k == "month":
            nxt = next(x for kk, x in ev[i:] if kk == "cell")
            day1 = max(v + "-01", first)
            h.check(nxt <= day1 < (datetime.date.fromisoformat(nxt)
                                   + datetime.timedelta(7)).isoformat(),
                    "the month label %s is not at the row of its first day (next cell %s)"
                    % (v, nxt))


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
    # each map: the newest WINDOW partitions due (from the job's start at
    # the earliest: daily's whole map), as map --json states them
    for job, grain in (("daily", "day"), ("weekly", "week"), ("hourly", "hour")):
        got = [c for c in dom.cells if c[0] == job]
        whole = d.json("map", job)
        if job == "daily":
            h.eq(got[0][1], whole["from"], "first cell of daily: its start")
        else:
            h.eq(len(got), WINDOW[grain], "cells of %s" % job)
        m = d.json("map", job, "--from", got[0][1])
        want = []
        for r in m["ranges"]:
            want += [r["state"]] * r["count"]
        h.eq(len(got), len(want), "cells of %s" % job)
        h.eq(got[-1][1], whole["to"], "last cell of %s" % job)
        h.eq([c[2] for c in got], want, "cell states of %s against map --json" % job)
    h.check(("daily", "2026-01-08", "failed") in dom.cells, "the failed day's cell")
    m = d.json("map", "daily")
    check_day_labels(dom, "daily", m["from"], m["to"])
    check_jobs_table(d, text)
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


THROTTLE_CONFIG = """state_db: state.db
socket: backfilld.sock
warehouses:
  - name: w
    sqlite: w.db
    throttle:
      sql: SELECT 1.5
      max: 0.9
      every: 1s
jobs:
  - name: work
    warehouse: w
    partition: day
    start: 2026-04-01
    sql: SELECT 1;
  - name: span
    partition: day
    start: 2026-01-20
    catchup: false
    command: ["true"]
"""


def test_report_throttle_shortest():
    """A throttle max of 0.9 shows as 0.9 in the warehouses table (the
    shortest form that reads back), not 0.90000000000000002; a day grid
    over three months has the three month labels."""
    d = h.Daemon(warehouses={"w": ""}, config=THROTTLE_CONFIG, name="report-th",
                 clock="2026-03-05T00:00:00Z")
    deadline = time.monotonic() + GUARD
    while True:
        st = d.json("status")
        t = {w["name"]: w for w in st["warehouses"]}["w"]["throttle"]
        if t and t["state"] == "throttled":
            break
        h.check(time.monotonic() < deadline, "not throttled within %.0f s: %r" % (GUARD, t))
        time.sleep(0.05)
    page = os.path.join(d.dir, "th.html")
    d.ok("report", "--html", page)
    with open(page) as f:
        text = f.read()
    rows = table_rows(text, "Warehouses")
    h.check(len(rows) == 2 and rows[1][1].endswith(": value 1.5 above max 0.9"),
            "the warehouses table: %r" % rows)
    # a day grid over three months: each month's label before its 1st
    dom = Cells()
    dom.feed(text)
    m = d.json("map", "span")
    h.eq((m["from"], m["to"]), ("2026-01-20", "2026-03-04"), "the map of span")
    check_day_labels(dom, "span", m["from"], m["to"])
    d.stop()


def test_report_zoned_hours():
    """A Berlin hourly job's page over 2023-10-29: named in Berlin's local
    time, one row of 25 hours with the second 02 marked, and its older and
    newer links (keys with '+' sent as %2B) lead to the hours before and
    after."""
    d = h.Daemon(jobs="""
- name: ber
  partition: hour
  timezone: Europe/Berlin
  catchup: false
  command: ["true"]
""", name="rzoned", clock="2023-11-02T00:00:00Z",
                 settings={"http_listen": "127.0.0.1:0"})
    port = test_http.listening_port(d)

    def page(query):
        st, _, body = test_http.get(port, "/report?" + query)
        body = body.decode()
        h.eq(st, 200, "GET /report?%s: %s" % (query, body[:200]))
        return body

    def keys(body):
        return re.findall(r'data-job="ber" data-partition="([^"]+)"', body)

    def link(body, text):
        m = re.search(r'<a href="\?([^"]+)">%s</a>' % text, body)
        h.check(m is not None, "the %s link" % text)
        return m.group(1).replace("&amp;", "&")

    one = page("job=ber&from=2023-10-29T00%2B02:00&to=2023-10-29T23%2B01:00")
    h.check("hour, Europe/Berlin, local time" in one, "the heading names the zone")
    got = keys(one)
    h.eq(len(got), 25, "the 25 hours of Berlin's 2023-10-29")
    h.eq(got[2:4], ["2023-10-29T02+02:00", "2023-10-29T02+01:00"], "both 02s, in order")
    h.eq(len(re.findall(r'data-job="ber" data-day="', one)), 1, "one day row")
    h.eq(re.findall(r'data-partition="([^"]+)" data-state="[a-z_]+" data-hour="02\'"', one),
         ["2023-10-29T02+01:00"], "the second 02 marked")
    older, newer = link(one, "older"), link(one, "newer")
    h.eq(older, "job=ber&to=2023-10-28T23%2B02:00", "the older link, its '+' encoded")
    h.eq(newer, "job=ber&from=2023-10-30T00%2B01:00", "the newer link, its '+' encoded")
    old = page(older)
    h.check(keys(old)[-1:] == ["2023-10-28T23+02:00"], "older ends before the day: %s" % re.findall(r"<p>no map[^<]*", old))
    after = keys(page(newer))
    h.eq(after[0], "2023-10-30T00+01:00", "newer starts after the day")
    d.stop()


if __name__ == "__main__":
    h.main([test_report_matches_map, test_report_throttle_shortest,
            test_report_zoned_hours])
