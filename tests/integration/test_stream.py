#!/usr/bin/env python3
"""Streamed answers and per-client bounds (issue 11, parts 3 and 4).

A state store holding N_RUNS runs (written straight into state.db while the
daemon is stopped) is listed by `runs --json` as one array holding every
run, by `runs --jsonl` as the same objects one per line, and by the table
output with aligned columns; filters and --limit still apply; queued items
come first.  A reader that closes early (`| head -c 100`) costs the daemon
nothing lasting: it answers `status` and its memory (VmRSS) stays bounded
after 20 such readers.  A raw client that pipelines 300 `runs` requests and
never reads does not grow the daemon's memory past a bound, nor stop it from
answering others.  A request above the request size limit is refused.  The
connection cap refuses the 65th client (exit 3, one line), and closing the
others restores service.  An idle connection is closed by the daemon
(BACKFILLD_TEST_IDLE_TIMEOUT_MS shortens the timeout for the test).  Under
a low limit of open files, idle clients leave the daemon its reserve of
descriptors: an operator's backfill --wait still succeeds, and it is
logged.

The time guards below are failure guards, never timing targets."""
import json
import os
import re
import select
import socket
import subprocess
import time

import harness as h

N_RUNS = 60000          # above the ~50,000 that no longer fit one frame
IDLE_MS = 1500          # the shortened idle timeout of the daemon under test
GUARD = 10.0            # s: failure guard for one answer
RSS_GROWTH_MAX = 32 * 1024  # KiB

JOBS = """
- name: daily
  partition: day
  start: 2000-01-01
  catchup: false
  command: ["/bin/true"]
- name: hourly
  partition: hour
  start: 2000-01-01
  catchup: false
  command: ["/bin/true"]
- name: held
  partition: day
  start: 2026-01-01
  catchup: false
  command: ["/bin/true"]
"""

T0 = 946684800000  # 2000-01-01T00:00:00Z in ms


def fill(d):
    """Write N_RUNS runs of two requests into the stopped daemon's store."""
    stmts = ["INSERT INTO requests (id, job, kind, created_at, finished_at)"
             " VALUES (1001, 'daily', 'backfill', %d, %d);" % (T0, T0),
             "INSERT INTO requests (id, job, kind, created_at, finished_at)"
             " VALUES (1002, 'hourly', 'backfill', %d, %d);" % (T0, T0)]
    manifest, runs = [], []
    for i in range(N_RUNS):
        mid = 100000 + i
        if i % 2:
            req, job = 1002, "hourly"
            key = "h%06d" % i
        else:
            req, job = 1001, "daily"
            key = "d%06d" % i
        state = "failed" if i % 7 == 0 else "succeeded"
        error = None
        if state == "failed":
            error = 'boom "%d" caf\u00e9 \\ tab\there' % i
        manifest.append((mid, req, job, key, i, state, 1, T0, T0))
        runs.append((mid, req, job, key, 1, state, T0 + i, T0 + i + 5,
                     error, i % 100, "v1"))
    # a few thousand rows a statement: both stores take them alike
    for i in range(0, N_RUNS, 2000):
        stmts.append("INSERT INTO manifest (id, request_id, job, partition_key, seq,"
                     " state, attempts, created_at, updated_at) VALUES "
                     + ", ".join("(%s)" % ", ".join(h.sql_literal(v) for v in row)
                                 for row in manifest[i:i + 2000]) + ";")
        stmts.append("INSERT INTO runs (manifest_id, request_id, job, partition_key,"
                     " attempt, state, started_at, finished_at, error,"
                     " rows_changed, code_version) VALUES "
                     + ", ".join("(%s)" % ", ".join(h.sql_literal(v) for v in row)
                                 for row in runs[i:i + 2000]) + ";")
    # each run is its partition's newest (what the daemon records), so
    # keep_runs pruning leaves them all
    # (not the newest due partitions the schedule ran at the first
    # start: catchup: false runs those, and recorded them already)
    stmts.append("INSERT INTO partition_latest (job, partition_key, run_id, state)"
                 " SELECT job, partition_key, id, state FROM runs"
                 " WHERE request_id IN (1001, 1002);")
    d.state_write("\n".join(stmts))


def count(d, sql, params=()):
    return d.state_rows(sql, params)[0][0]


def rss_kib(d):
    with open("/proc/%d/status" % d.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    h.fail("no VmRSS for the daemon")


def runs_head(d):
    """runs --json | head -c 100: backfillctl's exit status, stderr, stdout."""
    r, w = os.pipe()
    err_path = os.path.join(d.dir, "head.err")
    with open(err_path, "w") as err:
        ctl = subprocess.Popen([d.backfillctl, "--socket", d.sock, "runs", "--json"],
                               stdout=w, stderr=err, env=d.env())
    os.close(w)
    got = b""
    with os.fdopen(r, "rb") as rf:
        got = rf.read(100)
    # the reader is gone: backfillctl's next write fails with EPIPE
    try:
        rc = ctl.wait(timeout=GUARD)
    except subprocess.TimeoutExpired:
        ctl.kill()
        h.fail("backfillctl runs --json | head -c 100: backfillctl did not exit"
               " within %.0f s of its reader closing" % GUARD)
    with open(err_path) as f:
        return rc, f.read(), got


def sanitized(d):
    """True when the daemon runs with AddressSanitizer, whose quarantine
    keeps freed memory resident: VmRSS bounds say nothing then."""
    with open("/proc/%d/maps" % d.proc.pid) as f:
        return "libasan" in f.read()


def rss_bounded(d, grown, what):
    if sanitized(d):
        print("  (AddressSanitizer: VmRSS growth %d KiB %s not checked)" % (grown, what))
        return
    h.check(grown < RSS_GROWTH_MAX, "VmRSS grew by %d KiB %s" % (grown, what))


def status_within(d, guard, what):
    t0 = time.monotonic()
    rc, out, err = d.ctl("status", "--json", timeout=guard + 30)
    took = time.monotonic() - t0
    h.eq(rc, 0, "status %s (stderr %r)" % (what, err))
    h.check(took < guard, "status %s took %.1f s (guard %.0f s)" % (what, took, guard))


def test_stream_runs():
    d = h.Daemon(jobs=JOBS, name="stream", settings={"max_backfill": 30000},
                 env={"BACKFILLD_TEST_IDLE_TIMEOUT_MS": str(IDLE_MS)})
    d.stop()
    fill(d)
    d.start()
    # queued items, held by a paused job: they come first, without an id
    d.ok("pause", "held")
    d.enqueue("backfill", "held", "--from", "2026-01-01", "--to", "2026-01-03")
    total = count(d, "SELECT count(*) FROM runs")
    queued = count(d, "SELECT count(*) FROM manifest WHERE state IN ('queued', 'blocked')")
    h.eq(queued, 3, "queued items of the paused job")

    t0 = time.monotonic()
    out = d.ok("runs", "--json", timeout=120)
    took = time.monotonic() - t0
    rs = json.loads(out)
    h.check(isinstance(rs, list), "runs --json is one array")
    h.eq(len(rs), total + queued, "runs --json objects (every run and queued item)")
    print("  runs --json: %d objects, %d bytes in %.2f s (%.0f rows/s)"
          % (len(rs), len(out), took, len(rs) / took))
    h.eq([r["id"] for r in rs[:3]], [None, None, None], "queued items first")
    ids = [r["id"] for r in rs[3:]]
    h.eq(ids, sorted(ids, reverse=True), "runs newest first")
    h.eq(len(set(ids)), total, "distinct run ids")
    keys = {"id", "request", "job", "partition", "attempt", "state", "started_at",
            "finished_at", "error", "rows_changed", "code_version", "warnings",
            "marked_by", "shards"}
    for r in (rs[0], rs[5], rs[-1]):
        h.eq(set(r), keys, "fields of a runs --json object")
    h.check(all(r["shards"] is None for r in rs), "shards of a job on no cluster's shards: null")
    failed = [r for r in rs if r["state"] == "failed"]
    h.check(failed and failed[0]["error"].startswith('boom "') and "caf\u00e9" in failed[0]["error"],
            "an error text survives JSON: %r" % (failed[:1],))

    lines = d.ok("runs", "--jsonl", timeout=120).splitlines()
    h.eq(len(lines), len(rs), "runs --jsonl lines")
    h.eq([json.loads(l) for l in lines], rs, "runs --jsonl objects")

    # filters and --limit over the stream
    h.eq(len(json.loads(d.ok("runs", "--json", "--limit", "1234"))), 1234, "--limit 1234")
    h.eq(json.loads(d.ok("runs", "--json", "--limit", "5")), rs[:5], "--limit 5")
    got = json.loads(d.ok("runs", "--json", "--job", "hourly", "--state", "failed"))
    h.eq(len(got), count(d, "SELECT count(*) FROM runs WHERE job = 'hourly' AND state = 'failed'"),
         "runs --job hourly --state failed")
    h.check(all(r["job"] == "hourly" and r["state"] == "failed" for r in got), "filters hold")
    got = json.loads(d.ok("runs", "--json", "--request", "1001", "--limit", "700"))
    h.eq(len(got), 700, "runs --request 1001 --limit 700")
    h.check(all(r["request"] == 1001 for r in got), "request filter holds")
    got = json.loads(d.ok("runs", "--json", "--state", "queued"))
    h.eq(len(got), 3, "runs --state queued")
    rc, o, e = d.ctl("runs", "--json", "--request", "999999")
    h.check(rc == 2 and o == "" and "no request 999999" in e,
            "runs of no such request: exit %d, %r, %r" % (rc, o, e))

    # the table streams too, its columns aligned across pages
    table = d.ok("runs", timeout=120).splitlines()
    h.eq(len(table), 1 + total + queued, "table lines")
    col = table[0].index("REQUEST")
    h.check(all(l[col - 2:col] == "  " and l[col] != " " for l in table[1:]),
            "the REQUEST column starts at the same place on every line")
    col = table[0].index("STATE")
    h.check(all(l[col - 2:col] == "  " for l in table[1:]), "STATE column aligned")

    # readers that go away early
    rc, err, got = runs_head(d)
    h.eq((rc, err), (0, ""), "backfillctl runs --json | head -c 100: exit and stderr")
    h.eq(got, out.encode()[:100], "the first 100 bytes")
    before = rss_kib(d)
    for _ in range(20):
        rc, err, _ = runs_head(d)
        h.eq((rc, err), (0, ""), "runs --json | head -c 100")
    status_within(d, GUARD, "after 20 early closes")
    after = rss_kib(d)
    print("  VmRSS %d KiB before, %d KiB after 20 early closes" % (before, after))
    rss_bounded(d, after - before, "over 20 early closes")
    d.assert_alive("after the early closes")
    # the same output as before: nothing left over from the closed streams
    h.eq(d.ok("runs", "--json", "--limit", "5"), d.ok("runs", "--json", "--limit", "5"),
         "runs after early closes")

    # a client that pipelines 300 runs and never reads
    base = rss_kib(d)
    s = d.connect(GUARD)
    s.setblocking(False)
    req = h.frame({"cmd": "runs", "json": "1"})
    pending = req * 300
    t_end = time.monotonic() + GUARD
    while pending and time.monotonic() < t_end:
        try:
            n = s.send(pending)
            pending = pending[n:]
        except BlockingIOError:
            break  # the daemon stopped reading: that is the point
    status_within(d, 5.0, "while a client does not read 300 pipelined runs")
    grown = rss_kib(d) - base
    print("  VmRSS growth with 300 unread pipelined runs: %d KiB" % grown)
    rss_bounded(d, grown, "under a client that does not read")
    s.close()
    status_within(d, GUARD, "after the client that did not read went away")
    d.assert_alive("after the client that did not read")

    # pipelined requests read in turn are answered in order
    s = d.connect(GUARD)
    try:
        s.sendall(h.frame({"cmd": "runs", "json": "1", "limit": "2"})
                  + h.frame({"cmd": "status"}))
        data = b""
        while True:
            t, body = h.read_frame(s, raw=True)
            if t == h.PROTO_DATA:
                data += h.data_out(body)
                continue
            h.eq(t, h.PROTO_RESPONSE, "frame after DATA")
            break
        h.eq(json.loads(data), rs[:2], "first of two pipelined answers")
        t, f = h.read_frame(s)
        h.eq((t, f.get("status")), (h.PROTO_RESPONSE, "0"), "second pipelined answer")
    finally:
        s.close()

    # an answer that is not a stream but is large (a dry-run plan of
    # 21,192 partitions, 678 KB) comes as DATA frames, then the RESPONSE
    s = d.connect(GUARD)
    try:
        s.sendall(h.frame({"cmd": "backfill", "job": "hourly", "from": "2000-01-01",
                           "to": "2002-06-01", "dry_run": "1"}))
        data, ndata = b"", 0
        while True:
            t, body = h.read_frame(s, raw=True)
            if t != h.PROTO_DATA:
                break
            data += h.data_out(body)
            ndata += 1
        f = h.parse_body(body)
        h.eq((t, f.get("status")), (h.PROTO_RESPONSE, "0"), "end of a large dry run")
        h.check(ndata >= 2, "a 678 KB answer comes in %d DATA frames" % ndata)
        text = data.decode() + f.get("out", "")
        h.eq(text, d.ok("backfill", "hourly", "--from", "2000-01-01", "--to",
                        "2002-06-01", "--dry-run"), "the plan through backfillctl")
        last = text.rstrip().split("\n")[-2:]
        h.check(last[0].endswith("21192 partitions: 21192 of hourly, 0 downstream")
                and last[1].startswith("estimate: "),
                "the whole plan (its count, then its estimate): %r" % text[-160:])
    finally:
        s.close()

    # a request above the request size limit
    s = d.connect(GUARD)
    try:
        big = h.frame({"cmd": "status", "pad": "x" * (1024 * 1024)})
        try:
            s.sendall(big)
        except (BrokenPipeError, ConnectionResetError):
            pass
        fr = h.read_frame(s)
        h.check(fr is not None and fr[1].get("status") == "2"
                and "limit" in fr[1].get("err", ""),
                "an oversized request is refused with a message: %r" % (fr,))
    finally:
        s.close()
    status_within(d, GUARD, "after an oversized request")
    d.stop()


def test_connection_cap_and_idle():
    d = h.Daemon(jobs=JOBS, name="cap",
                 env={"BACKFILLD_TEST_IDLE_TIMEOUT_MS": str(IDLE_MS)})
    # a connection that waits for a request is not idle
    d.ok("pause", "held")
    req = d.enqueue("backfill", "held", "--from", "2026-01-01", "--to", "2026-01-01")
    w = d.connect(GUARD)
    w.sendall(h.frame({"cmd": "wait", "request": req}))
    t, f = h.read_frame(w)
    h.eq(t, h.PROTO_PROGRESS, "a waiting client's first frame")
    # an idle connection is closed by the daemon: read sees EOF
    s = d.connect(timeout=IDLE_MS / 1000.0 + GUARD)
    t0 = time.monotonic()
    try:
        h.eq(s.recv(100), b"", "what an idle connection reads")
    except socket.timeout:
        h.fail("an idle connection was not closed within %.1f s" % (IDLE_MS / 1000.0 + GUARD))
    finally:
        s.close()
    took = time.monotonic() - t0
    h.check(took >= IDLE_MS / 1000.0 * 0.9, "closed after %.2f s, before the"
            " idle timeout of %d ms" % (took, IDLE_MS))
    # the waiting one, connected before it, is still open: cancelling its
    # request ends its wait with the final RESPONSE
    r, _, _ = select.select([w], [], [], 0)
    h.eq(r, [], "the waiting connection after the idle one was closed (EOF?)")
    d.ok("cancel", str(req))
    while True:
        fr = h.read_frame(w)
        h.check(fr is not None, "the waiting connection was closed")
        if fr[0] == h.PROTO_RESPONSE:
            break
    h.eq(fr[1].get("finished"), "1", "the wait's final answer")
    w.close()
    # a connection in the middle of a request is idle as well
    s = d.connect(timeout=IDLE_MS / 1000.0 + GUARD)
    s.sendall(h.frame({"cmd": "status"})[:7])
    h.eq(s.recv(100), b"", "a half-sent request's connection after the timeout")
    s.close()

    # the connection cap: 64 served, the next one refused (exit 3)
    held = []
    try:
        # keep them busy enough not to be idle: each one waits for a request
        req = d.enqueue("backfill", "held", "--from", "2026-01-01", "--to", "2026-01-01")
        for _ in range(64):
            c = d.connect(GUARD)
            c.sendall(h.frame({"cmd": "wait", "request": req}))
            held.append(c)
        for c in held:  # every one of them is served: its first PROGRESS
            t, f = h.read_frame(c)
            h.eq(t, h.PROTO_PROGRESS, "a waiting client's first frame")
        rc, out, err = d.ctl("status")
        h.eq(rc, 3, "backfillctl with 64 clients connected: exit (stderr %r)" % err)
        h.eq(out, "", "stdout of a refused backfillctl")
        lines = err.splitlines()
        h.eq(len(lines), 1, "one line on stderr: %r" % err)
        h.check(lines[0].startswith("backfillctl: too many connections to backfilld (64)")
                and "close idle clients" in lines[0], "the refusal: %r" % lines[0])
        h.check(d.alive(), "the daemon lives with 64 clients")
    finally:
        for c in held:
            c.close()
    # closing them restores service (the daemon sees the closes in turn)
    t_end = time.monotonic() + GUARD
    while True:
        rc, out, err = d.ctl("status")
        if rc == 0 or time.monotonic() > t_end:
            break
    h.eq(rc, 0, "status once the 64 clients closed (stderr %r)" % err)
    with open(d.log) as f:
        log = f.read()
    h.check("refused 1 connection" in log, "the refusal is logged")
    d.stop()


def test_a_thousand_idle_clients():
    """Idle connections never lock operators out: over the cap, a new
    connection takes the place of the one idle the longest, so status
    answers and runs go on with a thousand idle clients connected."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    d = h.Daemon(jobs=JOBS, name="idle1000")
    idle = []
    t0 = time.monotonic()
    try:
        for _ in range(1000):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(d.sock)   # blocking: waits while the backlog is full
            idle.append(c)
        status_within(d, GUARD, "with a thousand idle clients")
        rc, out, err = d.ctl("backfill", "daily", "--from", "2026-01-01",
                             "--to", "2026-01-03", "--wait")
        h.eq(rc, 0, "a backfill with a thousand idle clients (stderr %r)" % err)
        # the oldest idle ones were closed by the daemon (EOF), the newest
        # are still connected: never more than the cap at once
        closed = 0
        for c in idle[:100]:
            c.settimeout(GUARD)
            if c.recv(1) == b"":
                closed += 1
        h.eq(closed, 100, "the oldest idle connections closed to make room")
        # at least 936 evictions (1000 idle clients, 64 slots), logged at
        # most once per 10 s with their count, never a line each
        elapsed = time.monotonic() - t0
        with open(d.log) as f:
            lines = [l for l in f if "idle connection(s) to serve new ones" in l]
        counts = [int(re.search(r"closed (\d+) idle", l).group(1)) for l in lines]
        h.check(lines, "the evictions are logged")
        h.eq(counts[0], 1, "the first eviction is logged at once")
        h.check(len(lines) <= 2 + elapsed / 10,
                "%d eviction lines in %.1f s: not rate-limited" % (len(lines), elapsed))
        h.check(sum(counts) <= 1000 + 10, "eviction counts %r" % counts)
        h.check(d.alive(), "the daemon lives")
    finally:
        for c in idle:
            c.close()
    d.stop()


def test_descriptor_reserve():
    """Under a limit of open files too low for the connection cap (48,
    the daemon holding about 16 of its own), idle clients take no more
    than leaves the daemon's reserve: a backfill --wait behind forty idle
    connections succeeds, the idle ones are closed to make room, and the
    spell is logged once."""
    d = h.Daemon(jobs=JOBS, name="fdreserve", settings={"max_concurrency": 2}, start=False)
    d.start(wrapper=["/bin/sh", "-c", 'ulimit -n 48 && exec "$0" "$@"'])
    h.eq(open("/proc/%d/limits" % d.proc.pid).read().count("Max open files            48"),
         1, "the daemon's limit of open files")
    idle = []
    try:
        for _ in range(40):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(d.sock)
            idle.append(c)
        rc, out, err = d.ctl("backfill", "daily", "--from", "2026-01-01",
                             "--to", "2026-01-03", "--wait")
        h.eq(rc, 0, "a backfill --wait behind 40 idle clients (stderr %r)" % err)
        st = d.json("status")
        h.check(isinstance(st, dict), "status after it: %r" % (st,))
        with open(d.log) as f:
            log = f.read()
        lines = [l for l in log.splitlines() if "descriptors free, below the" in l]
        h.eq(len(lines), 1, "lines saying the descriptors ran short: %r" % lines)
        h.check("closing idle connections" in lines[0], "what it does: %r" % lines[0])
        closed = 0
        for c in idle[:10]:
            c.settimeout(GUARD)
            if c.recv(1) == b"":
                closed += 1
        h.eq(closed, 10, "the oldest idle connections closed to make room")
        h.check(d.alive(), "the daemon lives")
    finally:
        for c in idle:
            c.close()
    # busy connections (each waits for a request) are never closed: once
    # they leave too few descriptors, a new one is refused (status 3)
    d.ok("pause", "held")
    req = d.enqueue("backfill", "held", "--from", "2026-01-01", "--to", "2026-01-01")
    with open(d.log) as f:
        mark = len(f.read())
    busy, refusal = [], None
    try:
        for _ in range(40):
            c = d.connect(GUARD)
            try:
                c.sendall(h.frame({"cmd": "wait", "request": req}))
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused at once: the refusal is there to read
            t, f = h.read_frame(c)
            if t == h.PROTO_RESPONSE:
                refusal = f
                c.close()
                break
            h.eq(t, h.PROTO_PROGRESS, "a waiting client's first frame")
            busy.append(c)
        h.check(refusal is not None, "40 waiting clients under a limit of 48: none refused")
        h.eq(refusal.get("status"), "3", "the refused connection's status: %r" % (refusal,))
        h.check("too few descriptors free" in refusal.get("err", ""),
                "the refusal says why: %r" % (refusal,))
        print("  %d waiting clients served, the next refused" % len(busy))
        rc, out, err = d.ctl("wait", str(req))
        h.eq(rc, 3, "backfillctl wait while refused (stderr %r)" % err)
        h.check("too few descriptors free" in err, "what backfillctl says: %r" % err)
    finally:
        for c in busy:
            c.close()
    # once they are gone, the next connection ends the spell, with counts
    end = time.monotonic() + GUARD
    while True:
        rc, out, err = d.ctl("status")
        with open(d.log) as f:
            log = f.read()[mark:]
        m = re.search(r"descriptors free again \(the reserve is \d+\): (\d+) connection\(s\)"
                      r" refused and (\d+) idle one\(s\) closed", log)
        if rc == 0 and m:
            break
        h.check(time.monotonic() < end, "no line ending the spell (status rc %d):\n%s"
                % (rc, d.log_tail()))
        time.sleep(0.05)
    h.check(int(m.group(1)) >= 1, "the counts of the spell: %r" % (m.group(0),))
    h.eq(len(re.findall("descriptors free, below the", log)), 1,
         "lines saying the descriptors ran short again")
    d.stop()


if __name__ == "__main__":
    h.main([test_stream_runs, test_connection_cap_and_idle, test_a_thousand_idle_clients,
            test_descriptor_reserve])
