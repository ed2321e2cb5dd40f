#!/usr/bin/env python3
"""Freshness deadlines and hooks (issue 15, docs/configuration.md "Freshness and
hooks"), on the real daemon with the test clock.

Every hook here is `sh -c` with the placeholders as its positional
arguments, appending one line "ARGV|JOB|PARTITION|REQUEST|ERROR" (argv
joined by spaces, then the four BACKFILLD_* variables) to a file; a test
waits for the lines it expects (bounded poll, guard timeout) and, to show
that a hook did not fire again, waits for a later event that the daemon
can only produce after it acted on the clock change (test_schedule.tick).
"""
import os
import re
import time

import harness as h
import test_schedule as ts

GUARD = 20.0
POLL = 0.02

HOOK = ('["sh", "-c", "printf \'%%s\\\\n\' \\"$*|$BACKFILLD_JOB|$BACKFILLD_PARTITION|'
        '$BACKFILLD_REQUEST|$BACKFILLD_ERROR\\" >> {dir}/%s", "hook",'
        ' "{job}", "{partition}", "{request}", "{error}"]')


def hook_lines(d, name):
    path = os.path.join(d.dir, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l for l in f.read().splitlines() if l]


def await_lines(d, name, n, what, guard=GUARD):
    """Wait until file `name` has at least n lines; return them."""
    deadline = time.monotonic() + guard
    while True:
        lines = hook_lines(d, name)
        if len(lines) >= n:
            return lines
        if time.monotonic() > deadline:
            h.fail("%s: %d lines in %s after %.0f s (guard), expected %d\n%s"
                   % (what, len(lines), name, guard, n, d.log_tail()))
        time.sleep(POLL)


def await_log(d, pattern, what):
    deadline = time.monotonic() + GUARD
    while True:
        got = ts.log_lines(d, pattern)
        if got:
            return got
        if time.monotonic() > deadline:
            h.fail("%s: no log line matching %r after %.0f s (guard)\n%s"
                   % (what, pattern, GUARD, d.log_tail()))
        time.sleep(POLL)


def failing_job(name, extra=""):
    return ("- name: %s\n  partition: day\n  start: 2026-03-03\n  retries: 0\n"
            "  command: [\"sh\", \"-c\", \"echo broken >&2; exit 3\"]\n%s"
            % (name, "".join("  %s\n" % l for l in extra.split("\n") if l)))


def test_on_failure_once_with_values():
    """A partition's last attempt fails: on_failure runs once, with its job,
    partition, request and error in argv and in the environment."""
    d = ts.sched_daemon(failing_job("breaks", "on_failure: " + HOOK % "fail.txt"),
                        "2026-03-04T00:30:00Z", "hk-fail")
    reqs = ts.new_requests(d)
    h.eq([(k, j, p) for k, j, p in reqs], [("schedule", "breaks", ["2026-03-03"])],
         "requests at start")
    rq = [r for r in d.runs(include_boot=True) if r["job"] == "breaks"][0]
    lines = await_lines(d, "fail.txt", 1, "on_failure")
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 done",
              "the hook's end in the log")
    h.eq(len(hook_lines(d, "fail.txt")), 1, "on_failure ran once")
    argv, job, part, req, err = lines[0].split("|")
    h.eq(argv.split(" ")[:3], ["breaks", "2026-03-03", str(rq["request"])],
         "argv {job} {partition} {request}")
    h.eq((job, part, req), ("breaks", "2026-03-03", str(rq["request"])),
         "BACKFILLD_JOB, BACKFILLD_PARTITION, BACKFILLD_REQUEST")
    h.check(err == rq["error"] and "3" in err,
            "BACKFILLD_ERROR %r is the run's error %r" % (err, rq["error"]))
    h.check(argv.endswith(rq["error"]), "argv ends with {error}: %r" % argv)
    # the next day fails too: one more line, for that partition only
    ts.tick(d, "2026-03-05T00:30:00Z")
    ts.new_requests(d)
    lines = await_lines(d, "fail.txt", 2, "on_failure of the next day")
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-04 done", "2nd hook")
    h.eq([l.split("|")[2] for l in hook_lines(d, "fail.txt")],
         ["2026-03-03", "2026-03-04"], "on_failure partitions, once each")
    d.stop()


def test_late_counted_and_on_late_once():
    """deadline 2h: the failed partition of 03-03 (due 03-04 00:00) is not
    late at 01:30, late at 02:30 (status counts it, names it; on_late runs
    once), and on_late does not run again as the clock moves on."""
    d = ts.sched_daemon(failing_job("slow", "deadline: 2h\non_late: " + HOOK % "late.txt"),
                        "2026-03-04T00:30:00Z", "hk-late")
    ts.new_requests(d)
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"], st["failed"]), (0, None, 1),
         "status before the deadline")
    ts.tick(d, "2026-03-04T01:30:00Z")
    h.eq(ts.job_status(d, "slow")["late"], 0, "late at 01:30 (deadline 02:00)")
    ts.tick(d, "2026-03-04T02:30:00Z")
    lines = await_lines(d, "late.txt", 1, "on_late")
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"]), (1, "2026-03-03"), "status after the deadline")
    text = d.ok("status")
    h.check("late slow: 1 partition past the deadline of 7200s, oldest 2026-03-03" in text,
            "status text names the late partition:\n" + text)
    argv, job, part, req, err = lines[0].split("|")
    h.eq((job, part), ("slow", "2026-03-03"), "on_late values")
    h.check(argv.startswith("slow 2026-03-03 "), "on_late argv: %r" % argv)
    h.eq(err, "not landed 7200s after it was due", "on_late's {error} (docs/configuration.md: Ns)")
    h.check(argv.endswith(" not landed 7200s after it was due"), "on_late's {error} in argv")
    # later clock moves: no second on_late for 03-03; 03-04 becomes late once
    ts.tick(d, "2026-03-04T05:30:00Z")
    ts.tick(d, "2026-03-05T00:30:00Z")
    ts.new_requests(d)
    ts.tick(d, "2026-03-05T03:30:00Z")
    await_lines(d, "late.txt", 2, "on_late for 2026-03-04")
    ts.tick(d, "2026-03-05T06:30:00Z")
    h.eq([l.split("|")[2] for l in hook_lines(d, "late.txt")],
         ["2026-03-03", "2026-03-04"], "on_late partitions, once each")
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"]), (2, "2026-03-03"), "two late, oldest named")
    # a restart: the failed partitions are owed still (read back from
    # partition_latest), late at once; on_late runs again for them (the
    # record of hooks run is in memory: at least once, see docs/configuration.md)
    d.stop()
    d.start()
    st = ts.job_status(d, "slow")
    h.eq((st["late"], st["oldest_late"]), (2, "2026-03-03"), "late after a restart")
    await_lines(d, "late.txt", 4, "on_late again after the restart")
    d.stop()


def test_downstream_late_after_inputs_landed():
    """A downstream job's deadline runs from the landing of its input: the
    week of 03-03 (its input landed at 00:30) is late after 01:30."""
    jobs = ("- name: fact\n  partition: day\n  start: 2026-03-03\n  command: [\"true\"]\n"
            "- name: mart\n  partition: week\n  upstream: [fact]\n  retries: 0\n"
            "  command: [\"false\"]\n  deadline: 1h\n  on_late: " + HOOK % "late.txt" + "\n")
    d = ts.sched_daemon(jobs, "2026-03-04T00:30:00Z", "hk-down")
    ts.new_requests(d)
    h.eq(ts.job_status(d, "mart")["late"], 0, "mart late before its deadline")
    ts.tick(d, "2026-03-04T01:45:00Z")
    lines = await_lines(d, "late.txt", 1, "on_late of the week")
    h.eq(lines[0].split("|")[1:3], ["mart", "2026-03-02"], "on_late values")
    st = ts.job_status(d, "mart")
    h.eq((st["late"], st["oldest_late"]), (1, "2026-03-02"), "mart late")
    d.stop()


def test_on_refused():
    """Catchup refused (40 days missed, max_catchup 5): on_refused runs once
    with the gap as {partition} and the reason as {error}."""
    job = ("- name: big\n  partition: day\n  start: 2026-01-01\n  max_catchup: 5\n"
           "  command: [\"true\"]\n  on_refused: " + HOOK % "refused.txt" + "\n")
    d = ts.sched_daemon(job, "2026-02-10T00:30:00Z", "hk-refused")
    lines = await_lines(d, "refused.txt", 1, "on_refused")
    await_log(d, r"hook=on_refused job=big partition=2026-01-01\.\.2026-02-09 done", "its end")
    argv, job, part, req, err = lines[0].split("|")
    h.eq((job, part, req), ("big", "2026-01-01..2026-02-09", ""), "on_refused values")
    h.eq(err, "catchup refused: 40 partitions missed, above max_catchup 5", "{error}")
    h.eq(ts.job_status(d, "big")["catchup"], "refused", "status")
    ts.tick(d, "2026-02-11T00:30:00Z")
    h.eq(len(hook_lines(d, "refused.txt")), 1, "on_refused once")
    d.stop()


def test_slow_hook_does_not_delay_status():
    """A hook that takes 5 s: status answers while it runs."""
    hook = ('["sh", "-c", "echo started >> {dir}/slow.txt; sleep 5;'
            ' echo done >> {dir}/slow.txt"]')
    d = ts.sched_daemon(failing_job("breaks", "on_failure: " + hook),
                        "2026-03-04T00:30:00Z", "hk-slow")
    await_lines(d, "slow.txt", 1, "the slow hook's start")
    t0 = time.monotonic()
    d.status()
    took = time.monotonic() - t0
    h.eq(hook_lines(d, "slow.txt"), ["started"], "the hook still runs after status")
    h.check(took < 2.0, "status took %.2f s while the hook ran" % took)
    await_lines(d, "slow.txt", 2, "the slow hook's end")
    d.stop()


def test_hook_timeout_kills():
    """hook_timeout 1s: a hook that hangs is killed and logged, not retried."""
    hook = '["sh", "-c", "echo started >> {dir}/hang.txt; exec sleep 60"]'
    d = ts.sched_daemon(failing_job("breaks", "on_failure: " + hook),
                        "2026-03-04T00:30:00Z", "hk-hang",
                        settings={"max_concurrency": 4, "hook_timeout": "1s",
                                  "metrics_file": "m.prom"})
    await_lines(d, "hang.txt", 1, "the hanging hook's start")
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 failed: killed after"
              r" hook_timeout \(1s\); not retried", "the timeout")
    h.eq(hook_lines(d, "hang.txt"), ["started"], "not retried")
    d.stop()
    h.eq(hook_metric(d, "timeout"), 1, "backfilld_hooks_total result=timeout")


def hook_metric(d, result, name="backfilld_hooks_total"):
    """A hook counter of the metrics file the daemon wrote at its stop."""
    with open(os.path.join(d.dir, "m.prom")) as f:
        text = f.read()
    if name != "backfilld_hooks_total":
        want = name + " "
    else:
        want = 'backfilld_hooks_total{hook="on_failure",result="%s"} ' % result
    got = [l for l in text.splitlines() if l.startswith(want)]
    h.check(len(got) == 1, "one %r line in the metrics file:\n%s" % (want, text))
    return int(got[0].split()[-1])


def test_hook_failures_logged_as_failed():
    """docs/configuration.md: a hook that fails (non-zero exit, signal, cannot start) is
    logged with `hook=... failed` and the reason, and counted failed."""
    cases = [("exit", '["sh", "-c", "exit 7"]', r"failed: exit status 7; not retried"),
             ("signal", '["sh", "-c", "kill -9 $$"]',
              r"failed: killed by signal 9 \(Killed\); not retried"),
             ("nofile", '["{dir}/no-such-hook", "{job}"]',
              r"failed: cannot start {dir}/no-such-hook: no such file or directory;"
              r" not retried")]
    for name, hook, want in cases:
        d = ts.sched_daemon(failing_job("breaks", "on_failure: " + hook),
                            "2026-03-04T00:30:00Z", "hk-" + name,
                            settings={"max_concurrency": 4, "metrics_file": "m.prom"})
        await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 " +
                  want.replace("{dir}", d.dir), name)
        d.stop()
        h.eq(hook_metric(d, "failed"), 1, "%s: backfilld_hooks_total result=failed" % name)


def thousand_failures(name, hook, settings):
    """A daemon that backfills 1,000 days of a job that fails, with `hook`
    as its on_failure; returns the daemon, once every run ended."""
    job = ("- name: breaks\n  partition: day\n  retries: 0\n"
           "  command: [\"false\"]\n  on_failure: %s\n" % hook)
    base = {"max_concurrency": 4, "max_backfill": 1000, "metrics_file": "m.prom"}
    base.update(settings)
    d = h.Daemon(jobs=job, settings=base, name=name)
    req = d.enqueue("backfill", "breaks", "--from", "2023-01-01", "--to", "2025-09-26")
    d.wait_request(req, timeout=300)
    return d


def test_thousand_failures_bounded():
    """1,000 partitions fail at once: their on_failure hooks (each sleeps a
    little) never run more than hook_concurrency at once, and none is lost:
    all 1,000 run (the queue, hook_queue, holds them)."""
    # each hook counts itself in and out under a lock, recording the count
    # it saw on entry
    hook = ('["sh", "-c", "exec 9>>{dir}/lock; flock 9; n=$(cat {dir}/n 2>/dev/null'
            ' || echo 0); n=$((n+1)); echo $n > {dir}/n; echo $n >> {dir}/seen;'
            ' flock -u 9; sleep 0.05; flock 9; n=$(cat {dir}/n); echo $((n-1)) > {dir}/n;'
            ' echo {partition} >> {dir}/ran; flock -u 9"]')
    d = thousand_failures("hk-1000", hook, {"hook_concurrency": 5})
    ran = await_lines(d, "ran", 1000, "1,000 on_failure hooks", guard=240)
    h.eq(len(set(ran)), 1000, "each partition's hook ran once")
    seen = [int(x) for x in hook_lines(d, "seen")]
    h.check(max(seen) <= 5, "at most hook_concurrency 5 hooks alive at once, saw %d" % max(seen))
    h.check(max(seen) >= 2, "hooks ran side by side (saw at most %d)" % max(seen))
    h.eq(ts.log_lines(d, r"hook=on_failure .* dropped"), [], "no hook dropped")
    # the last hooks wrote their line and may not have exited yet: the
    # daemon counts a hook when it has seen it end
    deadline = time.monotonic() + GUARD
    while len(ts.log_lines(d, r"hook=on_failure job=\S+ partition=\S+ done")) < 1000:
        h.check(time.monotonic() < deadline, "1,000 hooks ended in the log:\n%s"
                % d.log_tail())
        time.sleep(POLL)
    d.stop()
    h.eq(hook_metric(d, None, "backfilld_hooks_dropped_total"), 0, "none dropped")
    h.eq(hook_metric(d, "ok"), 1000, "backfilld_hooks_total result=ok")


def test_full_queue_drops_counted_logged_once():
    """hook_concurrency 1, hook_queue 2, ten failures while the first hook
    waits: two wait, seven are dropped, counted in the metrics and logged
    once; the waiting ones run once the first ends."""
    hook = ('["sh", "-c", "echo {partition} >> {dir}/ran;'
            ' while [ ! -e {dir}/go ]; do sleep 0.02; done"]')
    job = ("- name: breaks\n  partition: day\n  retries: 0\n"
           "  command: [\"false\"]\n  on_failure: %s\n" % hook)
    d = h.Daemon(jobs=job, name="hk-drop", settings={
        "max_concurrency": 4, "metrics_file": "m.prom", "hook_concurrency": 1,
        "hook_queue": 2})
    req = d.enqueue("backfill", "breaks", "--from", "2025-01-01", "--to", "2025-01-10")
    d.wait_request(req)
    await_lines(d, "ran", 1, "the first hook")
    drops = await_log(d, r"hook=on_failure job=breaks partition=\S+ dropped: 1 hooks running"
                      r" \(hook_concurrency\) and 2 queued \(hook_queue\)", "the drop")
    h.eq(len(ts.log_lines(d, r" dropped: ")), 1, "the drops logged once")
    h.eq(len(hook_lines(d, "ran")), 1, "one hook runs, the others wait")
    with open(os.path.join(d.dir, "go"), "w"):
        pass
    ran = await_lines(d, "ran", 3, "the queued hooks")
    await_log(d, r"hook=on_failure job=breaks partition=%s done" % ran[2], "the last hook's end")
    d.stop()
    h.eq(len(hook_lines(d, "ran")), 3, "three hooks ran")
    h.eq(hook_metric(d, None, "backfilld_hooks_dropped_total"), 7, "seven dropped")
    h.eq(hook_metric(d, "ok"), 3, "three ok")


def test_queued_hook_timeout_from_its_start():
    """hook_concurrency 1, hook_timeout 2s, three hooks of 1.2 s each: the
    second and third wait in the queue longer than 2 s before they start,
    and still end well (their hook_timeout counts from their start)."""
    hook = '["sh", "-c", "sleep 1.2; echo {partition} >> {dir}/ran"]'
    job = ("- name: breaks\n  partition: day\n  retries: 0\n"
           "  command: [\"false\"]\n  on_failure: %s\n" % hook)
    d = h.Daemon(jobs=job, name="hk-qtime", settings={
        "max_concurrency": 4, "metrics_file": "m.prom", "hook_concurrency": 1,
        "hook_timeout": "2s"})
    req = d.enqueue("backfill", "breaks", "--from", "2025-01-01", "--to", "2025-01-03")
    d.wait_request(req)
    await_lines(d, "ran", 3, "three hooks, one after the other")
    for day in ("2025-01-01", "2025-01-02", "2025-01-03"):
        await_log(d, r"hook=on_failure job=breaks partition=%s done" % day, "hook of " + day)
    d.stop()
    h.eq((hook_metric(d, "ok"), hook_metric(d, "timeout")), (3, 0), "three ok, none timed out")


def test_endless_output_bounded():
    """A hook printing without end (`yes`) until its hook_timeout: the log
    takes at most 16 KiB of its output and says how many bytes it left out."""
    d = ts.sched_daemon(failing_job("breaks", 'on_failure: ["yes"]'),
                        "2026-03-04T00:30:00Z", "hk-yes",
                        settings={"max_concurrency": 4, "hook_timeout": "2s"})
    await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 failed: killed after"
              r" hook_timeout", "the timeout")
    more = await_log(d, r"hook=on_failure job=breaks partition=2026-03-03 output: (\d+) bytes"
                     r" more not logged \(a hook's output is logged up to 16384 bytes\)",
                     "the count of what was left out")
    d.stop()
    with open(d.log, "rb") as f:
        log = f.read()
    out = [l for l in log.split(b"\n") if b"hook=on_failure" in l and b" output: y" in l]
    size = sum(len(l) + 1 for l in out)
    h.check(0 < size <= 16384, "the hook's output took %d bytes of log (at most 16384)" % size)
    h.check(len(log) < 16384 + 16384, "the whole log is %d bytes" % len(log))
    left = int(re.search(r"output: (\d+) bytes more", more[0]).group(1))
    h.check(left > 100000, "bytes left out: %d" % left)


if __name__ == "__main__":
    h.main([
        test_on_failure_once_with_values,
        test_late_counted_and_on_late_once,
        test_downstream_late_after_inputs_landed,
        test_on_refused,
        test_slow_hook_does_not_delay_status,
        test_hook_timeout_kills,
        test_hook_failures_logged_as_failed,
        test_full_queue_drops_counted_logged_once,
        test_queued_hook_timeout_from_its_start,
        test_endless_output_bounded,
        test_thousand_failures_bounded,
    ])
