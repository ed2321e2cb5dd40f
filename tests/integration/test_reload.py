#!/usr/bin/env python3
"""Reload (issue 2): a broken file is refused with FILE:LINE:COL (exit 2 from
backfillctl reload), the old configuration keeps running; SIGHUP behaves the
same; a valid change is then picked up; a run in flight during a reload
keeps going."""
import http.client
import os
import re
import select
import signal
import socket
import subprocess
import time

import harness as h

HEAD = """state_db: state.db
socket: backfilld.sock
max_concurrency: 2
jobs:
  - name: a
    partition: day
    start: 2026-02-01
    end: 2026-02-28
    catchup: false
    command: ["/bin/true"]
  - name: slow
    partition: day
    start: 2026-02-01
    end: 2026-02-28
    catchup: false
    command: ["/bin/sh", "{dir}/slow.sh"]
"""

JOB_B = """  - name: b
    partition: day
    start: 2026-02-01
    end: 2026-02-28
    catchup: false
    %s: ["/bin/true"]
"""

SLOW = """#!/bin/sh
echo "$$" > "$(dirname "$0")/started.fifo"
read x < "$(dirname "$0")/hold.fifo"
"""


def position(text, needle):
    """1-based line and column of needle in text."""
    for n, line in enumerate(text.split("\n"), 1):
        c = line.find(needle)
        if c >= 0:
            return n, c + 1
    raise AssertionError("%r not in the config" % needle)


def test_broken_then_valid_reload():
    d = h.Daemon(config=HEAD, name="reload", start=False)
    with open(os.path.join(d.dir, "slow.sh"), "w") as f:
        f.write(SLOW)
    os.mkfifo(os.path.join(d.dir, "started.fifo"))
    os.mkfifo(os.path.join(d.dir, "hold.fifo"))
    d.start()

    # A run in flight across the reloads.
    fd = os.open(os.path.join(d.dir, "started.fifo"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        slow_req = d.enqueue("backfill", "slow", "--from", "2026-02-03", "--to", "2026-02-03")
        with d.draining():
            r, _, _ = select.select([fd], [], [], 60)
        h.check(r, "the slow run did not start within 60 s (guard)\n" + d.log_tail())
        os.read(fd, 100)
    finally:
        os.close(fd)

    # 1. Broken: an unknown key (a typo of `command`).
    broken = (HEAD + JOB_B % "comand").replace("{dir}", d.dir)
    d.write_config(broken)
    line, col = position(broken, "comand:")
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload of a file with an unknown key")
    h.check(re.search(r"backfilld\.yaml:%d:%d: " % (line, col), e),
            "reload error %r does not name backfilld.yaml:%d:%d:" % (e, line, col))
    h.check("command" in e.replace("comand", ""),
            "reload error %r does not suggest `command`" % e)
    rc, out, err = d.ctl("backfill", "b", "--from", "2026-02-01", "--to", "2026-02-01")
    h.one_line_error(rc, out, err, 2, "backfill of job b after the refused reload")
    d.backfill("a", "2026-02-01", "2026-02-02")   # the old configuration still runs

    # --check-config agrees.
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 2, "backfilld --check-config on the broken file (stderr %r)" % p.stderr)
    h.check(re.search(r"backfilld\.yaml:%d:%d: " % (line, col), p.stderr),
            "--check-config error %r does not name :%d:%d:" % (p.stderr, line, col))

    # 2. Broken, through SIGHUP: a job concurrency above max_concurrency.
    broken2 = (HEAD + JOB_B % "command" + "    concurrency: 5\n").replace("{dir}", d.dir)
    d.write_config(broken2)
    d.signal(signal.SIGHUP)
    rc, out, err = d.ctl("reload")  # the same file again, through the socket
    e = h.one_line_error(rc, out, err, 2, "reload of a job with concurrency 5 > max_concurrency 2")
    line2, _ = position(broken2, "concurrency: 5")
    h.check(re.search(r"backfilld\.yaml:%d:\d+: " % line2, e),
            "reload error %r does not name line %d" % (e, line2))
    d.assert_alive("after SIGHUP with a broken file")
    rc, out, err = d.ctl("backfill", "b", "--from", "2026-02-01", "--to", "2026-02-01")
    h.one_line_error(rc, out, err, 2, "backfill of job b after two refused reloads")

    # 3. Syntax error.
    broken3 = (HEAD + "  - name: [unclosed\n").replace("{dir}", d.dir)
    d.write_config(broken3)
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload of a file with a YAML syntax error")
    h.check(re.search(r"backfilld\.yaml:\d+:\d+: ", e), "syntax error %r has no position" % e)

    # 4. Valid: job b appears.
    d.write_config((HEAD + JOB_B % "command").replace("{dir}", d.dir))
    rc, out, err = d.ctl("reload")
    h.eq(rc, 0, "reload of a valid file (stderr %r)" % err)
    d.backfill("b", "2026-02-01", "2026-02-03")
    runs_b = h.by_job(d.runs(), "b", "succeeded")
    h.eq(sorted(r["partition"] for r in runs_b), h.days("2026-02-01", "2026-02-03"),
         "runs of job b after the valid reload")
    h.check("b" in d.status(), "status lacks job b after the reload")

    # The slow run started before the reloads is still in flight; release it.
    slow = h.by_job(d.runs(), "slow")
    h.eq([r["state"] for r in slow], ["running"], "the slow run during the reloads")
    wfd = os.open(os.path.join(d.dir, "hold.fifo"), os.O_WRONLY)
    os.write(wfd, b"go\n")
    os.close(wfd)
    resp = d.wait_request(slow_req)
    h.eq(resp.get("status"), "0", "the slow run's request after the reloads: %r" % resp)
    slow = h.by_job(d.runs(), "slow")
    h.eq([(r["state"], r["attempt"]) for r in slow], [("succeeded", 1)],
         "the slow run finished once, unaffected by the reloads")
    d.stop()


def test_reload_dropping_a_job_with_queued_work():
    """Queued partitions of a job removed by a reload can never run: they
    are cancelled, with their downstream, so their request finishes and a
    waiting client returns."""
    jobs = """
- name: gone
  partition: day
  command: ["true"]
- name: gone_weekly
  partition: week
  upstream: [gone]
  command: ["true"]
- name: stays
  partition: day
  command: ["true"]
"""
    d = h.Daemon(jobs=jobs, name="orphans")
    d.ok("pause", "gone")
    rc, out, err = d.ctl("backfill", "gone", "--from", "2026-02-02", "--to", "2026-02-04")
    h.eq(rc, 0, "backfill of a paused job (%r %r)" % (out, err))
    req = int(out.split()[1].rstrip(":"))
    st = d.status()
    h.eq((st["gone"]["queued"], st["gone_weekly"]["queued"]), (3, 1),
         "queued: three days and their week")
    d.write_config(d.render("""
- name: stays
  partition: day
  command: ["true"]
""", {}))
    since = len(log_text(d))
    out = d.ok("reload")
    h.check(re.search(r"^removed +job +gone +its 3 queued partitions cancelled$", out, re.M),
            "the removed job's row counts what was cancelled:\n%s" % out)
    # said loudly: a warning per removed job with queued work
    wait_log(d, r"warning: reload: job=gone removed: its 3 queued partitions are cancelled",
             since, "warning for the removed job")
    wait_log(d, r"warning: reload: job=gone_weekly removed: its 1 queued partition is cancelled",
             since, "warning for its removed downstream")
    wait_log(d, r"reload: jobs added=0 removed=2 .* cancelled=4\n", since,
             "the summary counts them all, as the request does")
    resp = d.wait_request(req)
    # cancelled partitions are work not done: the wait's status is 1 (issue 16)
    h.eq((resp.get("status"), resp.get("cancelled"), resp.get("total")), ("1", "4", "4"),
         "the request after its job was removed: %r" % resp)
    h.eq([r["state"] for r in d.runs("--request", str(req))], ["cancelled"] * 4,
         "the removed job's partitions are listed cancelled, none queued or blocked")
    d.ok("backfill", "stays", "--from", "2026-02-02", "--to", "2026-02-02", "--wait")
    d.stop()


def log_text(d):
    with open(d.log, errors="replace") as f:
        return f.read()


def wait_log(d, pattern, since, what, timeout=30):
    """The log (from byte since) matches pattern within timeout (a guard:
    the line is written before the reply or the reload ends)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, log_text(d)[since:])
        if m:
            return m
        time.sleep(0.05)
    h.fail("%s: %r not in the log\n%s" % (what, pattern, d.log_tail()))


CHANGED = """
- name: a
  partition: day
  max_backfill: %d
  command: ["/bin/echo", "%s"]
"""


def test_changed_report_judged_by_the_file():
    """reload --dry-run proposes `backfill --changed` by the file's
    max_backfill, not the running one's; every reload (SIGHUP included)
    logs the report of what older code versions built."""
    d = h.Daemon(jobs=CHANGED % (40, "v1"), name="changed")
    d.backfill("a", "2025-12-01", "2025-12-10")
    # 40 -> 3 with new code: 10 partitions are above the file's bound
    d.write_config(d.render(CHANGED % (3, "v2"), {}))
    out = d.ok("reload", "--dry-run")
    h.check(re.search(r"^a: 10 partitions built by older code versions; rebuild them:"
                      r" backfillctl backfill a --changed --from D --to D \(they are above its"
                      r" max_backfill: split them\)$", out, re.M),
            "the dry run judges by the file's max_backfill 3:\n%s" % out)
    rep = d.json("reload", "--dry-run")
    h.eq([(r["job"], r["partitions"], r["above_max_backfill"]) for r in rep["rebuild"]],
         [("a", 10, True)], "--json: above the file's max_backfill")
    # 3 -> 40 (running 40, file 40 but run with 3 first): applied, then back
    d.write_config(d.render(CHANGED % (3, "v1"), {}))
    d.ok("reload")
    d.write_config(d.render(CHANGED % (40, "v2"), {}))
    rep = d.json("reload", "--dry-run")
    h.eq([(r["job"], r["partitions"], r["above_max_backfill"]) for r in rep["rebuild"]],
         [("a", 10, False)], "--json: within the file's max_backfill 40 (running 3)")
    # applied through SIGHUP: the report is in the log
    since = len(log_text(d))
    d.signal(signal.SIGHUP)
    wait_log(d, r"reload: a: 10 partitions built by older code versions; rebuild them:"
             r" backfillctl backfill a --changed\n", since, "the --changed report on SIGHUP")
    d.stop()


free_port = h.free_port


def healthz(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/healthz")
    st = c.getresponse().status
    c.close()
    return st


def test_http_listen_that_cannot_bind():
    """A reload whose http_listen cannot be bound is refused whole: exit 2,
    one line naming the address, nothing else applied, the endpoint where
    it was; through SIGHUP the same, in the log."""
    port = free_port()
    jobs = """
- name: a
  partition: day
  command: ["true"]
"""
    d = h.Daemon(jobs=jobs, name="rebind", settings={"http_listen": "127.0.0.1:%d" % port})
    h.eq(healthz(port), 200, "the endpoint at start")
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    busy = blocker.getsockname()[1]
    d.write_config(d.render(jobs + """
- name: b
  partition: day
  command: ["true"]
""", {"http_listen": "127.0.0.1:%d" % busy, "max_catchup": 7}))
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload to an address in use")
    h.check(re.search(r"backfilld\.yaml: cannot listen on http_listen 127\.0\.0\.1:%d: .*;"
                      r" nothing was reloaded and the endpoint stays on 127\.0\.0\.1:%d$"
                      % (busy, port), e), "the refusal names the address: %r" % e)
    h.eq(healthz(port), 200, "the endpoint stays")
    h.eq(sorted(j["name"] for j in d.json("jobs")["jobs"]), ["a"], "job b was not added")
    since = len(log_text(d))
    d.signal(signal.SIGHUP)
    wait_log(d, r"reload refused, keeping the running configuration: .*cannot listen on"
             r" http_listen 127\.0\.0\.1:%d" % busy, since, "SIGHUP refused")
    h.eq(healthz(port), 200, "the endpoint stays after SIGHUP")
    blocker.close()
    d.ok("reload")
    h.eq(healthz(busy), 200, "moved once the address is free")
    h.eq(sorted(j["name"] for j in d.json("jobs")["jobs"]), ["a", "b"], "job b added")
    d.stop()


def test_check_config_warehouse_not_sqlite():
    """--check-config reads a sqlite: warehouse's file (never writing it)
    and refuses one that is not an SQLite database, at its path's
    position; the start refuses it the same way."""
    d = h.Daemon(jobs="""
- name: a
  warehouse: sales
  partition: day
  sql: SELECT 1
""", warehouses={"sales": None}, name="notdb", start=False)
    csv = b"day,amount\n2026-01-01,3\n"
    with open(d.warehouses["sales"], "wb") as f:
        f.write(csv)
    line, col = position(d.config_text, "sales.db")
    for args in (["--check-config"], []):
        p = subprocess.run([d.backfilld] + args + ["--config", d.conf], capture_output=True,
                           text=True, env=d.env(), timeout=60)
        h.eq(p.returncode, 2, "%s of a warehouse that is not SQLite (stderr %r)" % (args, p.stderr))
        h.check(re.search(r"backfilld\.yaml:%d:%d: warehouse \"sales\": sqlite file \S+sales\.db:"
                          r" it is not an SQLite database \(24 bytes that do not start with"
                          r" SQLite's header\); correct the path$" % (line, col),
                          p.stderr.strip()), "%s names the file: %r" % (args, p.stderr))
    with open(d.warehouses["sales"], "rb") as f:
        h.eq(f.read(), csv, "the file is left as it was")


if __name__ == "__main__":
    h.main([test_broken_then_valid_reload, test_reload_dropping_a_job_with_queued_work,
            test_changed_report_judged_by_the_file, test_http_listen_that_cannot_bind,
            test_check_config_warehouse_not_sqlite])
