#!/usr/bin/env python3
"""test_mark.py - backfillctl mark (docs/mark.md).

A partition recorded as built without running it: nothing runs for it
(the command writes a line per run and writes none), its runs row is
succeeded with the note "marked succeeded by USER: REASON" (runs, runs
--json, audit, audit --json), map shows it as marked ('m', state
"marked" in --json) and keeps it so after a restart, and its downstream
is rebuilt as after any landing: the weekly partition a failure of it
had blocked in another request is released and runs, and the mark's own
request rebuilds it too; with --no-downstream nothing downstream runs.
A partition late for its deadline is no longer late once marked.
Refused, with one line, exit 2 and nothing changed: an unknown job, a
partition before the job's start or not due yet, a malformed key, no
--reason, an empty one, no --succeeded.  Runs on the state store
BACKFILLD_TEST_STATE names (meson runs it on SQLite and, as
test_mark_postgres, on PostgreSQL); the rights are test_permissions'.
"""
import os
import tempfile
import time

import harness as h

JOBS = """
- name: fact
  partition: day
  start: 2026-01-01
  catchup: false
  retries: 0
  command: ["sh", "-c", "echo fact {partition} >> %(m)s; test {partition} != 2026-02-03"]
- name: owed
  partition: day
  start: 2026-01-01
  catchup: false
  retries: 0
  deadline: 1h
  command: ["false"]
- name: tiny
  partition: day
  start: 2026-01-01
  catchup: false
  max_backfill: 2
  command: ["true"]
- name: weekly
  partition: week
  upstream: [fact]
  command: ["sh", "-c", "echo weekly {partition} >> %(m)s"]
"""


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split("\n")[:-1]


def test_mark():
    mdir = tempfile.mkdtemp(prefix="bfd-markout-")
    m = os.path.join(mdir, "ran.txt")
    d = h.Daemon(jobs=JOBS % {"m": m}, name="mark", clock="2026-03-01T00:00:00Z")
    d.settle()  # the schedule's own run of 2026-02-28
    req = d.enqueue("backfill", "fact", "--from", "2026-02-02", "--to", "2026-02-04")
    resp = d.wait_request(req)
    h.eq(resp.get("failed"), "1", "the backfill: 2026-02-03 failed: %r" % resp)
    h.check("weekly 2026-02-02" not in lines(m), "weekly blocked: %r" % lines(m))
    before = lines(m)

    rc, out, err = d.ctl("mark", "fact", "2026-02-03", "--succeeded", "--reason",
                         "repaired by hand")
    h.eq(rc, 0, "mark: exit\n" + out + err)
    h.check(out.startswith("request ") and "1 partition of fact marked succeeded by root" in out,
            "mark's line: %r" % out)
    mreq = out.split()[1].rstrip(":")
    h.eq(d.wait_request(mreq).get("failed"), "0", "the mark's request")
    d.wait_request(req)
    after = lines(m)
    h.eq([l for l in after[len(before):] if l == "fact 2026-02-03"], [],
         "nothing ran for the marked partition")
    h.check("weekly 2026-02-02" in after[len(before):], "the downstream ran: %r" % after)

    runs = d.json("runs", "--job", "fact")
    marked = [r for r in runs if r["partition"] == "2026-02-03" and r["request"] == int(mreq)]
    h.eq(len(marked), 1, "one runs row for the mark: %r" % runs)
    h.eq(marked[0]["state"], "succeeded", "the mark's state")
    h.eq(marked[0]["error"], "marked succeeded by root: repaired by hand", "the mark's note")
    h.eq(marked[0]["marked_by"], "root", "runs --json marked_by")
    h.check(all(r["marked_by"] is None for r in runs if r["request"] != int(mreq)),
            "marked_by of runs that ran: %r" % runs)
    text = d.ok("runs", "--job", "fact")
    h.check("marked succeeded by root: repaired by hand" in text, text)
    # the earlier request's weekly partition is released by the landing
    h.check(any(r["job"] == "weekly" and r["request"] == int(req) and r["state"] == "succeeded"
                for r in d.json("runs", "--job", "weekly")), "request %s's weekly" % req)

    audit = d.json("audit", "--request", mreq)
    part = [p for p in audit["partitions"] if p["job"] == "fact"]
    h.eq(len(part), 1, "audit: the marked partition: %r" % audit)
    h.check(part[0]["passed"] and "marked succeeded by root" in (part[0]["error"] or ""),
            "audit --json: %r" % part[0])
    h.check("marked succeeded by root: repaired by hand" in d.ok("audit", "--request", mreq),
            "audit text")

    mp = d.json("map", "fact", "--from", "2026-02-02", "--to", "2026-02-04")
    h.eq([(r["from"], r["state"]) for r in mp["ranges"]],
         [("2026-02-02", "succeeded"), ("2026-02-03", "marked"), ("2026-02-04", "succeeded")],
         "map --json")
    text = d.ok("map", "fact", "--from", "2026-02-02", "--to", "2026-02-04")
    h.check("m marked 1" in text, "map's legend: %r" % text)

    # --no-downstream: the weekly partition is not rebuilt
    n0 = len(lines(m))
    rc, out, err = d.ctl("mark", "fact", "2026-02-10", "--succeeded", "--reason", "copied",
                         "--no-downstream")
    h.eq(rc, 0, "mark --no-downstream\n" + err)
    h.check("--no-downstream" in out, out)
    rc, wout, _ = d.ctl("wait", out.split()[1].rstrip(":"))
    h.eq(rc, 0, "wait on a mark without downstream")
    h.eq(lines(m)[n0:], [], "nothing ran with --no-downstream")

    # several partitions at once, given twice: counted once each
    rc, out, err = d.ctl("mark", "fact", "2026-02-17", "2026-02-16", "2026-02-17",
                         "--succeeded", "--reason", "both", "--no-downstream")
    h.eq(rc, 0, "mark two\n" + err)
    h.check("2 partitions of fact" in out, out)

    # refusals: one line, exit 2, nothing changed
    state = d.state_dump()
    for args, want in (
            (("nope", "2026-02-03"), 'unknown job "nope"'),
            (("fact", "2025-12-01"), "has no partition 2025-12-01: it starts at 2026-01-01"),
            (("fact", "2099-01-01"), "not due yet"),
            (("fact", "2026-13-01"), "2026-13-01"),
            (("fact", "2026-02-03", "2026-02-04x"), "2026-02-04x"),
            (("tiny", "2026-02-01", "2026-02-02", "2026-02-03"),
             "more than 2 partitions of tiny (its max_backfill)"),
    ):
        rc, out, err = d.ctl("mark", *args, "--succeeded", "--reason", "r")
        e = h.one_line_error(rc, out, err, 2, "mark %r" % (args,))
        h.check(want in e, "mark %r: %r" % (args, e))
    for extra, want in ((("--succeeded",), "missing --reason"),
                        (("--reason", "r"), "missing --succeeded"),
                        (("--succeeded", "--reason", "  "), "--reason is empty")):
        rc, out, err = d.ctl("mark", "fact", "2026-02-05", *extra)
        e = h.one_line_error(rc, out, err, 2, "mark %r" % (extra,))
        h.check(want in e, "mark %r: %r" % (extra, e))
    h.eq(d.state_dump(), state, "the store after the refusals")

    # a partition late for its deadline is no longer owed once marked
    d.set_clock("2026-03-01T02:00:00Z")
    deadline = time.monotonic() + 30
    while d.status("owed")["owed"]["late"] != 1:
        h.check(time.monotonic() < deadline, "owed 2026-02-28 never late: %r"
                % d.status("owed"))
        time.sleep(0.05)
    d.ok("mark", "owed", "2026-02-28", "--succeeded", "--reason", "loaded by hand")
    h.eq(d.status("owed")["owed"]["late"], 0, "late after the mark")

    # the marks are the store's: a restart keeps them on the map
    d.restart()
    mp = d.json("map", "fact", "--from", "2026-02-16", "--to", "2026-02-17")
    h.eq([(r["from"], r["to"], r["state"]) for r in mp["ranges"]],
         [("2026-02-16", "2026-02-17", "marked")], "map after a restart")
    # a later real run of the partition is no longer a mark
    d.wait_request(d.enqueue("rerun", "fact", "2026-02-16"))
    mp = d.json("map", "fact", "--from", "2026-02-16", "--to", "2026-02-16")
    h.eq(mp["ranges"][0]["state"], "succeeded", "a run after the mark")
    d.stop()


JOBS2 = """
- name: d
  partition: day
  start: 2026-01-01
  catchup: true
  max_catchup: 100
  retries: 0
  command: ["sh", "-c", "echo d {partition} >> %(m)s; echo built > %(out)s/{partition}; test ! -e %(out)s/fail-{partition}"]
- name: gated
  partition: day
  start: 2026-01-01
  catchup: false
  concurrency: 1
  command: ["sh", "-c", "while test ! -e %(out)s/gate; do sleep 0.02; done; echo gated {partition} >> %(m)s"]
- name: gweekly
  partition: week
  upstream: [gated]
  command: ["sh", "-c", "echo gweekly {partition} >> %(m)s"]
- name: dweekly
  partition: week
  upstream: [d]
  command: ["sh", "-c", "echo dweekly {partition} >> %(m)s"]
"""


def wait_for(what, cond, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        h.check(time.monotonic() < deadline, what)
        time.sleep(0.02)


def test_mark_is_the_operators_word():
    """A mark stands: the catchup after a resume does not run the marked
    partition (the data restored by hand stays), --reprocess missing and
    failed leave it, an explicit backfill rebuilds it; a running
    partition cannot be marked; a queued one leaves its queue and never
    runs; --no-downstream releases nothing (a blocked downstream partition
    of another request stays blocked; a queued partition's request
    cancels it and what waits only on it).  And the item-11 cases: runs
    --request of an unknown request, --built-by that is not a version, a
    --reason above the limit, wait agreeing with audit on a partition
    that failed and was then marked."""
    mdir = tempfile.mkdtemp(prefix="bfd-markword-")
    m = os.path.join(mdir, "ran.txt")
    out = os.path.join(mdir, "out")
    os.mkdir(out)
    open(os.path.join(out, "gate"), "w").close()
    d = h.Daemon(jobs=JOBS2 % {"m": m, "out": out}, name="markword",
                 clock="2026-03-01T00:00:00Z")

    # pause, the clock moves on, a day restored by hand and marked, resume
    d.ok("pause", "d")
    d.set_clock("2026-03-04T00:00:00Z")
    with open(os.path.join(out, "2026-03-02"), "w") as f:
        f.write("restored\n")
    d.ok("mark", "d", "2026-03-02", "--succeeded", "--reason", "restored from backup",
         "--no-downstream")
    n0 = len(lines(m))
    d.ok("resume", "d")
    wait_for("the catchup after resume: %r" % lines(m),
             lambda: "d 2026-03-03" in lines(m) and "d 2026-03-01" in lines(m))
    for r in d.json("runs", "--job", "d"):
        if r["state"] in ("queued", "running"):
            d.wait_request(r["request"])
    h.check("d 2026-03-02" not in lines(m)[n0:], "the catchup ran the marked day: %r" % lines(m))
    with open(os.path.join(out, "2026-03-02")) as f:
        h.eq(f.read(), "restored\n", "the restored data")

    # --reprocess missing and failed leave a marked partition; backfill builds it
    open(os.path.join(out, "fail-2026-02-10"), "w").close()
    r = d.enqueue("rerun", "d", "2026-02-10")
    h.eq(d.wait_request(r).get("failed"), "1", "2026-02-10 failed")
    os.unlink(os.path.join(out, "fail-2026-02-10"))
    d.ok("mark", "d", "2026-02-10", "2026-02-11", "--succeeded", "--reason", "loaded",
         "--no-downstream")
    for how in ("missing", "failed"):
        rc, o, e = d.ctl("backfill", "d", "--from", "2026-02-10", "--to", "2026-02-11",
                         "--reprocess", how)
        h.eq(rc, 0, "--reprocess %s: %s" % (how, e))
        h.check(o.startswith("nothing to run"), "--reprocess %s queued: %r" % (how, o))
    n0 = len(lines(m))
    d.wait_request(d.enqueue("backfill", "d", "--from", "2026-03-02", "--to", "2026-03-02",
                             "--no-downstream"))
    h.eq(lines(m)[n0:], ["d 2026-03-02"], "an explicit backfill rebuilds the marked day")

    # wait and audit agree on a partition that failed, then was marked
    open(os.path.join(out, "fail-2026-02-17"), "w").close()
    r = d.enqueue("backfill", "d", "--from", "2026-02-16", "--to", "2026-02-17")
    h.eq(d.wait_request(r).get("failed"), "1", "2026-02-17 failed")
    d.wait_request(d.enqueue("mark", "d", "2026-02-17", "--succeeded", "--reason", "fixed"))
    rc, o, e = d.ctl("wait", str(r))
    h.eq(rc, 0, "wait after the mark: " + o + e)
    h.check("2 succeeded, 1 landed later by another request (their run here failed" in o,
            "wait's line: %r" % o)
    audit = d.ok("audit", "--request", str(r))
    h.check("FAIL (landed later by request" in audit and "2 passed, 1 failed" in audit,
            "audit: %r" % audit)

    # a running partition is refused; a queued one leaves its queue
    os.unlink(os.path.join(out, "gate"))
    r = d.enqueue("backfill", "gated", "--from", "2026-02-02", "--to", "2026-02-04")
    wait_for("gated 2026-02-02 running", lambda: any(
        x["partition"] == "2026-02-02" and x["state"] == "running"
        for x in d.json("runs", "--request", str(r))))
    state = d.state_dump()
    rc, o, e = d.ctl("mark", "gated", "2026-02-02", "--succeeded", "--reason", "r")
    e = h.one_line_error(rc, o, e, 2, "mark of a running partition")
    h.check("gated 2026-02-02 is running (request %d): wait for it to end (backfillctl wait %d)"
            % (r, r) in e, e)
    h.eq(d.state_dump(), state, "the store after the refusal")
    d.ok("mark", "gated", "2026-02-04", "--succeeded", "--reason", "copied")
    d.ok("mark", "gated", "2026-02-03", "--succeeded", "--reason", "copied", "--no-downstream")
    open(os.path.join(out, "gate"), "w").close()
    resp = d.wait_request(r)
    h.eq((resp.get("succeeded"), resp.get("cancelled"), resp.get("failed")), ("2", "2", "0"),
         "request %d: 02 ran, 04 landed by the mark, 03 and its week cancelled: %r" % (r, resp))
    ran = lines(m)
    h.check("gated 2026-02-02" in ran, ran)
    h.check("gated 2026-02-03" not in ran and "gated 2026-02-04" not in ran,
            "a marked queued partition ran: %r" % ran)
    # request r's week waited on 03, which a --no-downstream mark took
    # out: cancelled with it (the week ran once, by 04's mark's request)
    h.eq([x["state"] for x in d.json("runs", "--request", str(r), "--job", "gweekly")],
         ["cancelled"], "request %d's week" % r)
    h.eq(ran.count("gweekly 2026-02-02"), 1, "the week's runs: %r" % ran)
    text = d.ok("runs", "--request", str(r))
    h.check("cancelled: marked succeeded by request" in text, text)

    # --no-downstream: another request's blocked downstream stays blocked
    open(os.path.join(out, "fail-2026-01-14"), "w").close()
    weeks = lines(m).count("dweekly 2026-01-12")  # the catchup's
    r = d.enqueue("backfill", "d", "--from", "2026-01-13", "--to", "2026-01-14")
    d.wait_request(r)
    h.eq(lines(m).count("dweekly 2026-01-12"), weeks, "dweekly ran with a failed input")
    d.wait_request(d.enqueue("mark", "d", "2026-01-14", "--succeeded", "--reason", "x",
                             "--no-downstream"))
    h.eq([x["state"] for x in d.json("runs", "--request", str(r), "--job", "dweekly")],
         ["blocked"], "request %d's week after a --no-downstream mark" % r)
    h.eq(lines(m).count("dweekly 2026-01-12"), weeks, "the week ran because of the mark")

    # item 11: one line, exit 2, nothing changed
    state = d.state_dump()
    for args, want in (
            (("runs", "--request", "999"), "no request 999: see 'backfillctl runs'"),
            (("backfill", "d", "--built-by", "xyz"), "--built-by takes a code version: its 16 hex"),
            (("mark", "d", "2026-01-20", "--succeeded", "--reason", "x" * 1001),
             "--reason is 1001 bytes, above the 1000 a mark keeps"),
    ):
        rc, o, e = d.ctl(*args)
        e = h.one_line_error(rc, o, e, 2, " ".join(args)[:80])
        h.check(want in e, "%s: %r" % (" ".join(args)[:80], e))
    h.eq(d.state_dump(), state, "the store after the refusals")
    reason = "r" * 1000
    mreq = d.enqueue("mark", "d", "2026-01-20", "--succeeded", "--reason", reason)
    got = [x for x in d.json("runs", "--request", str(mreq)) if x["job"] == "d"]
    h.eq(got[0]["error"], "marked succeeded by root: " + reason, "a 1000-byte reason whole")
    d.stop()


if __name__ == "__main__":
    h.main([test_mark, test_mark_is_the_operators_word])
