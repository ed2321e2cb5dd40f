#!/usr/bin/env python3
"""OpenLineage run events (issue 45; docs/operations.md, "Lineage events
(OpenLineage)"): a collector on loopback (a real HTTP server of the
standard library) receives the events of a backfill of a day fact with
its downstream weekly mart: one START and one end per run with the same
runId, every event carrying the spec's required fields and types
(RunEvent 2-0-2: eventTime, producer, schemaURL, eventType, run.runId as
a UUID, job.namespace/name), each event and its facets valid against the
spec's own JSON schemas (olschema.py, tests/openlineage/), the tables named as OpenLineage names SQLite
datasets, the partition's interval as nominalTime, the weeks parented to
the request; a second backfill whose weeks' inputs came out unchanged
makes the skipped week one COMPLETE saying so.  A failing run ends in
FAIL (a command that exits non-zero; a run whose check fails, the check
named), a run past its timeout in FAIL with "timed out" in errorMessage,
one interrupted by the daemon's stop in ABORT (`cancel` drops only queued
partitions: no running run is cancelled).  The collector answering 500 then 200:
the event is sent again and counted sent; the collector down: the
backfill succeeds the same and the events are counted failed in
/metrics; the collector slow: `status` answers within 100 ms.  The file
transport: the same events as JSON lines."""
import http.server
import json
import os
import re
import socket
import threading
import time
import urllib.request

import harness as h
import olschema
import test_stream

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
GUARD = 30.0
OURS = "/backfilld/openlineage/BackfilldPartitionRunFacet.json#/$defs/BackfilldPartitionRunFacet"

WAREHOUSE = ("CREATE TABLE src (dt TEXT, v INTEGER); CREATE TABLE fct (dt TEXT, v INTEGER);"
             " CREATE TABLE chk (dt TEXT, v INTEGER);"
             " CREATE TABLE wk (week TEXT, total INTEGER);")
JOBS = """
- name: fct
  warehouse: dw
  partition: day
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct SELECT dt, v FROM src WHERE dt = :partition;
- name: wk
  warehouse: dw
  partition: week
  upstream: [fct]
  table: wk
  partition_column: week
  sql: |
    DELETE FROM wk WHERE week = :partition;
    INSERT INTO wk SELECT CAST(:partition AS TEXT), COALESCE(SUM(v), 0) FROM fct
      WHERE dt >= :partition_start AND dt < :partition_end;
- name: checked
  warehouse: dw
  partition: day
  retries: 0
  table: chk
  partition_column: dt
  sql: |
    DELETE FROM chk WHERE dt = :partition;
    INSERT INTO chk SELECT dt, v FROM src WHERE dt = :partition;
  checks:
    - name: never_holds
      sql: SELECT COUNT(*) > 1000 FROM chk WHERE dt = :partition
- name: broken
  partition: day
  retries: 0
  command: ["sh", "-c", "echo broken >&2; exit 3"]
- name: slow
  partition: day
  retries: 0
  timeout: 1s
  command: ["sleep", "60"]
- name: waits
  partition: day
  command: ["sh", "-c", "until [ -e {dir}/go ]; do sleep 0.05; done"]
"""


class Collector:
    """An OpenLineage consumer on loopback: the events POSTed to
    /api/v1/lineage, answering each with the next of `statuses` (then
    200), after `delay` seconds."""

    def __init__(self):
        self.events = []
        self.statuses = []
        self.posts = 0
        self.delay = 0.0
        self.cv = threading.Condition()
        col = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(col.delay)
                with col.cv:
                    col.posts += 1
                    status = col.statuses.pop(0) if col.statuses else 200
                    h.eq(self.path, "/api/v1/lineage", "the path POSTed to")
                    h.eq(self.headers["Content-Type"], "application/json", "Content-Type")
                    if status == 200:
                        col.events.append(json.loads(body))
                    col.cv.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d/api/v1/lineage" % self.port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def until(self, cond, what):
        deadline = time.monotonic() + GUARD
        with self.cv:
            while not cond(self.events):
                left = deadline - time.monotonic()
                if left <= 0:
                    h.fail("%s within %.0f s (guard); got %d events" % (what, GUARD,
                                                                           len(self.events)))
                self.cv.wait(left)
            return list(self.events)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def check_event(ev):
    """The spec's required fields and their types (RunEvent 2-0-2, the
    facets' BaseFacet); returns the event."""
    for k in ("eventTime", "producer", "schemaURL", "eventType", "run", "job"):
        h.check(k in ev, "%s missing in %r" % (k, ev))
    h.check(TIME.match(ev["eventTime"]), "eventTime %r" % ev["eventTime"])
    olschema.validate(ev)
    h.check(re.match(r"^urn:backfilld:\d", ev["producer"]), "producer %r" % ev["producer"])
    h.eq(ev["schemaURL"], SCHEMA, "schemaURL")
    h.check(ev["eventType"] in ("START", "COMPLETE", "FAIL", "ABORT"), ev["eventType"])
    h.check(UUID.match(ev["run"]["runId"]), "runId %r" % ev["run"]["runId"])
    h.check(isinstance(ev["job"]["namespace"], str) and isinstance(ev["job"]["name"], str),
            "job %r" % ev["job"])
    for side in ("inputs", "outputs"):
        for d in ev.get(side, []):
            h.check(isinstance(d["namespace"], str) and isinstance(d["name"], str), d)
    for name, f in ev["run"].get("facets", {}).items():
        h.eq(f["_producer"], ev["producer"], "facet %s's _producer" % name)
        h.check(f["_schemaURL"].startswith("https://openlineage.io/spec/facets/1-0-1/")
                or f["_schemaURL"].endswith(OURS), "facet %s's _schemaURL %r" % (name, f))
    nt = ev["run"]["facets"]["nominalTime"]
    h.check(TIME.match(nt["nominalStartTime"]) and TIME.match(nt["nominalEndTime"]), nt)
    return ev


def runs_of(events):
    """{runId: [event, ...]} in arrival order."""
    out = {}
    for ev in events:
        out.setdefault(ev["run"]["runId"], []).append(check_event(ev))
    return out


def daemon(name, ol, settings=None):
    s = {"max_concurrency": 4, "openlineage": ol}
    s.update(settings or {})
    d = h.Daemon(jobs=JOBS, warehouses={"dw": WAREHOUSE}, settings=s, name=name)
    return d


def seed(d, days, v):
    import sqlite3
    con = sqlite3.connect(os.path.join(d.dir, "dw.db"))
    con.execute("DELETE FROM src")
    con.executemany("INSERT INTO src VALUES (?, ?)", [(x, v.get(x, 1)) for x in days])
    con.commit()
    con.close()


DAYS = ["2026-01-%02d" % n for n in range(5, 19)]   # Monday 5 .. Sunday 18: two weeks


def test_backfill_events():
    c = Collector()
    d = daemon("ol", "{url: %s, namespace: etl-test, timeout: 5s}" % c.url,
               {"shutdown_grace": "1s"})
    wh = os.path.join(d.dir, "dw.db")
    seed(d, DAYS, {})
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[-1], "--wait")
    h.eq(rc, 0, "the backfill (%r %r)" % (out, err))
    rq = d.runs()[0]["request"]
    evs = c.until(lambda e: len(e) >= 32, "16 runs' START and COMPLETE")
    runs = runs_of(evs)
    h.eq(len(runs), 16, "one runId per run")
    for rid, pair in runs.items():
        h.eq([e["eventType"] for e in pair], ["START", "COMPLETE"], "run %s's events" % rid)
        h.eq(pair[0]["job"], pair[1]["job"], "one job per run")
        h.eq(pair[0]["job"]["namespace"], "etl-test", "the configured namespace")
    by_job = {}
    for pair in runs.values():
        by_job.setdefault(pair[0]["job"]["name"], []).append(pair[1])
    h.eq(sorted(len(v) for v in by_job.values()), [2, 14], "14 days of fct, 2 weeks of wk")
    ns = "sqlite://" + wh
    day = next(e for e in by_job["fct"]
               if e["run"]["facets"]["backfilld_partition"]["partition"] == "2026-01-06")
    h.eq(day["inputs"], [{"namespace": ns, "name": "src"}], "fct reads src")
    h.eq(day["outputs"], [{"namespace": ns, "name": "fct"}], "fct writes fct")
    h.eq(day["run"]["facets"]["nominalTime"]["nominalStartTime"], "2026-01-06T00:00:00.000Z",
         "the day's first instant")
    h.eq(day["run"]["facets"]["nominalTime"]["nominalEndTime"], "2026-01-07T00:00:00.000Z",
         "the next day's first instant")
    bp = day["run"]["facets"]["backfilld_partition"]
    h.eq((bp["request"], bp["requestKind"], bp["attempt"], bp["skipped"]),
         (rq, "backfill", 1, False), "the custom facet")
    h.check(re.match(r"^[0-9a-f]{16}$", bp["codeVersion"]), bp)
    h.check("parent" not in day["run"]["facets"], "a root run has no parent")
    weeks = sorted(by_job["wk"], key=lambda e: e["run"]["facets"]["nominalTime"]["nominalStartTime"])
    h.eq([w["run"]["facets"]["nominalTime"]["nominalEndTime"] for w in weeks],
         ["2026-01-12T00:00:00.000Z", "2026-01-19T00:00:00.000Z"], "the weeks' ends")
    h.eq(weeks[0]["inputs"], [{"namespace": ns, "name": "fct"}], "wk reads fct")
    h.eq(weeks[0]["outputs"], [{"namespace": ns, "name": "wk"}], "wk writes wk")
    parents = {json.dumps(w["run"]["facets"]["parent"], sort_keys=True) for w in weeks}
    h.eq(len(parents), 1, "both weeks parented to the one request")
    p = weeks[0]["run"]["facets"]["parent"]
    h.eq(p["job"], {"namespace": "etl-test", "name": "fct"}, "the parent is the request's job")
    h.check(UUID.match(p["run"]["runId"]) and p["run"]["runId"] not in runs, p)

    # a second backfill, one day of the first week changed: its week is
    # rebuilt, the second week's inputs came out the same: skipped
    seed(d, DAYS, {"2026-01-06": 5})
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[0], "--to", DAYS[-1], "--wait")
    h.eq(rc, 0, "the second backfill (%r %r)" % (out, err))
    evs = c.until(lambda e: len(e) >= 32 + 28 + 3, "the second backfill's events")[32:]
    wk = [e for e in evs if e["job"]["name"] == "wk"]
    h.eq(sorted((e["eventType"], e["run"]["facets"]["backfilld_partition"]["partition"],
                 e["run"]["facets"]["backfilld_partition"]["skipped"]) for e in wk),
         [("COMPLETE", "2026-01-05", False), ("COMPLETE", "2026-01-12", True),
          ("START", "2026-01-05", False)], "the rebuilt week's pair, the skipped week's COMPLETE")
    h.check(wk[0]["run"]["facets"]["parent"]["run"]["runId"] != p["run"]["runId"],
            "a new request, a new parent")

    # a failing run: FAIL with its error; a cancelled one: ABORT
    rc, out, err = d.ctl("backfill", "broken", "--from", "2026-01-05", "--to", "2026-01-05",
                         "--wait")
    h.check(rc != 0, "the failing backfill fails")
    evs = c.until(lambda e: any(x["eventType"] == "FAIL" for x in e), "FAIL")
    fail = next(x for x in evs if x["eventType"] == "FAIL")
    h.eq(fail["job"]["name"], "broken", "FAIL's job")
    h.check("exit" in fail["run"]["facets"]["errorMessage"]["message"],
            fail["run"]["facets"]["errorMessage"])
    # a run whose check fails: rolled back, FAIL naming the check
    rc, out, err = d.ctl("backfill", "checked", "--from", "2026-01-05", "--to", "2026-01-05",
                         "--wait")
    h.check(rc != 0, "the backfill whose check fails fails")
    evs = c.until(lambda e: sum(x["job"]["name"] == "checked" for x in e) >= 2,
                  "checked's events")
    ck = [x for x in evs if x["job"]["name"] == "checked"]
    h.eq([x["eventType"] for x in ck], ["START", "FAIL"], "the failed check's run's events")
    h.check("never_holds" in ck[1]["run"]["facets"]["errorMessage"]["message"],
            ck[1]["run"]["facets"]["errorMessage"])
    h.eq(ck[1]["outputs"], [{"namespace": ck[1]["outputs"][0]["namespace"], "name": "chk"}],
         "the failed run's output")
    # a run past its timeout: killed, failed, so FAIL with the reason
    # (not ABORT: the spec's ABORT is a run stopped from outside)
    rc, out, err = d.ctl("backfill", "slow", "--from", "2026-01-05", "--to", "2026-01-05",
                         "--wait")
    h.check(rc != 0, "the timed-out backfill fails")
    evs = c.until(lambda e: sum(x["job"]["name"] == "slow" for x in e) >= 2, "slow's events")
    sl = [x for x in evs if x["job"]["name"] == "slow"]
    h.eq([x["eventType"] for x in sl], ["START", "FAIL"], "the timed-out run's events")
    h.check("timed out" in sl[1]["run"]["facets"]["errorMessage"]["message"],
            sl[1]["run"]["facets"]["errorMessage"])
    # a run the daemon's stop interrupts (shutdown_grace 1s): ABORT,
    # delivered while the daemon stops
    d.ok("backfill", "waits", "--from", "2026-01-05", "--to", "2026-01-05")
    c.until(lambda e: any(x["job"]["name"] == "waits" for x in e), "waits' START")
    d.stop()
    evs = c.until(lambda e: any(x["eventType"] == "ABORT" for x in e), "ABORT")
    ab = [x for x in evs if x["job"]["name"] == "waits"]
    h.eq([x["eventType"] for x in ab], ["START", "ABORT"], "the interrupted run's events")
    h.eq(ab[0]["run"]["runId"], ab[1]["run"]["runId"], "one runId")
    c.close()


def metric(port, result):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    m = re.search(r'^backfilld_lineage_events_total\{result="%s"\} (\d+)$' % result, text, re.M)
    h.check(m is not None, "no backfilld_lineage_events_total{result=%r}:\n%s" % (result, text))
    return int(m.group(1))


free_port = h.free_port


def until(cond, what):
    deadline = time.monotonic() + GUARD
    while not cond():
        h.check(time.monotonic() < deadline, "%s within %.0f s (guard)" % (what, GUARD))
        time.sleep(0.05)


def test_retry_down_slow():
    c = Collector()
    port = free_port()
    d = daemon("ol-net", "{url: %s, timeout: 1s}" % c.url, {"http_listen": port})
    seed(d, DAYS, {})
    # 500, then 200: sent again, counted sent, nothing failed
    c.statuses = [500]
    d.ok("backfill", "fct", "--from", DAYS[0], "--to", DAYS[0], "--no-downstream", "--wait")
    c.until(lambda e: len(e) >= 2, "START and COMPLETE after a 500")
    h.eq(c.posts, 3, "one POST answered 500, sent again, and the COMPLETE")
    until(lambda: metric(port, "sent") == 2, "2 sent")
    h.eq(metric(port, "failed"), 0, "nothing failed")

    # slow: each answer takes 2 s (past the 1 s timeout); status answers
    # at once all the while
    c.delay = 2.0
    d.ok("backfill", "fct", "--from", DAYS[1], "--to", DAYS[1], "--no-downstream", "--wait")
    # 100 ms, backfillctl's own start included; the sanitizers slow both
    # programs (test_report_bound.py scales its bound the same way)
    bound = 0.4 if test_stream.sanitized(d) else 0.1
    for _ in range(5):
        t = time.monotonic()
        d.ok("status")
        h.check(time.monotonic() - t < bound, "status took %.3f s" % (time.monotonic() - t))
        time.sleep(0.2)
    c.delay = 0.0

    # down: the backfill succeeds the same, the events counted failed
    c.close()
    rc, out, err = d.ctl("backfill", "fct", "--from", DAYS[2], "--to", DAYS[3],
                         "--no-downstream", "--wait")
    h.eq(rc, 0, "a backfill with the collector down (%r %r)" % (out, err))
    until(lambda: metric(port, "failed") >= 4, "4 events failed")
    h.check(re.search(r"openlineage: cannot deliver run events to %s" % re.escape(c.url),
                      open(d.log).read()), "the failure logged")
    h.eq(len(re.findall("openlineage: cannot deliver", open(d.log).read())), 1,
         "logged once for the streak")
    d.stop()


def test_file_transport():
    d = daemon("ol-file", "{file: lineage.jsonl}")
    seed(d, DAYS, {})
    d.ok("backfill", "fct", "--from", DAYS[0], "--to", DAYS[1], "--no-downstream", "--wait")
    d.stop()
    with open(os.path.join(d.dir, "lineage.jsonl")) as f:
        lines = f.read().splitlines()
    runs = runs_of([json.loads(x) for x in lines])
    h.eq(sorted([e["eventType"] for e in v] for v in runs.values()),
         [["START", "COMPLETE"]] * 2, "two runs' events, a line each")
    h.eq({v[0]["job"]["namespace"] for v in runs.values()}, {"backfilld"}, "the default namespace")


def test_bad_config():
    """openlineage without url: or file:, or with a URL that is not
    HTTP: one line with the position, exit 2."""
    import subprocess
    for ol, pos, words in (
            ("{namespace: x}", ":3:14: ", "openlineage needs one of url:"),
            ("{url: ftp://h/x}", ":3:15: ", "openlineage url must start with http://"),
            ("{file: a, bogus: 1}", ":3:24: ", "unknown key \"bogus\"")):
        d = h.Daemon(jobs=JOBS, warehouses={"dw": WAREHOUSE}, name="ol-bad",
                     settings={"openlineage": ol}, start=False)
        p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                           capture_output=True, text=True, timeout=30)
        h.eq(p.returncode, 2, "exit status for %s (%r)" % (ol, p.stderr))
        h.check(pos in p.stderr and words in p.stderr and p.stderr.count("\n") == 1,
                "%s: %r" % (ol, p.stderr))
        d.close()


if __name__ == "__main__":
    h.main([test_backfill_events, test_retry_down_slow, test_file_transport, test_bad_config])
