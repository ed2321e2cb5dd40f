#!/usr/bin/env python3
"""The metrics file (issue 15, docs/operations.md "Metrics"): written at
start and at shutdown (tmp file + rename), valid for `promtool check
metrics`, counting the runs; no partition key is ever a label.

Exit 77 (skipped) when promtool is not installed (Debian: prometheus),
unless BACKFILLD_REQUIRE_PROMTOOL=1 (CI), which makes that a failure."""
import os
import re
import shutil
import subprocess
import sys
import time

import harness as h

GUARD = 20.0


def promtool():
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("BACKFILLD_REQUIRE_PROMTOOL") == "1":
            print("promtool is not installed (apt-get install prometheus) and"
                  " BACKFILLD_REQUIRE_PROMTOOL=1")
            sys.exit(1)
        print("SKIP: promtool is not installed (apt-get install prometheus)")
        sys.exit(77)
    return path


JOBS = """
- name: sched
  partition: day
  start: 2025-12-30
  deadline: 2h
  command: ["true"]
- name: daily
  partition: day
  retries: 0
  command: ["sh", "-c", "test {partition} != 2026-01-02"]
- name: weekly
  partition: week
  upstream: [daily]
  command: ["true"]
"""


def await_file(path):
    deadline = time.monotonic() + GUARD
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            h.fail("%s not written within %.0f s (guard)" % (path, GUARD))
        time.sleep(0.02)


def samples(text):
    """{(name, frozenset(labels)): value} of the sample lines."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
        h.check(m is not None, "not a sample line: %r" % line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def check_promtool(tool, path):
    with open(path) as f:
        p = subprocess.run([tool, "check", "metrics"], stdin=f, capture_output=True,
                           text=True, timeout=60)
    h.check(p.returncode == 0, "promtool check metrics %s: exit %d\n%s%s"
            % (path, p.returncode, p.stdout, p.stderr))


def test_metrics_file():
    tool = promtool()
    d = h.Daemon(jobs=JOBS, name="metrics",
                 settings={"metrics_file": "prom/backfilld.prom"})
    path = os.path.join(d.dir, "prom", "backfilld.prom")
    h.check(not os.path.exists(path), "test bug: the folder must not exist yet")
    os.mkdir(os.path.join(d.dir, "prom"))
    d.ok("reload")          # the start's write failed (no folder): logged
    d.stop()                # the shutdown write
    await_file(path)
    check_promtool(tool, path)
    # the scheduled job: 2025-12-30 and 12-31 ran in that first life, on a
    # test clock standing at 2026-01-01T00:00, when 12-31 came due
    with open(path) as f:
        first = samples(f.read())
    h.eq(first[("backfilld_schedule_delay_seconds_count", frozenset({("job", "sched")}))],
         2, "delays observed")
    h.eq(first[("backfilld_schedule_delay_seconds_sum", frozenset({("job", "sched")}))],
         86400, "delays' sum (a day late, then on time)")
    d.start()
    rc, out, err = d.ctl("backfill", "daily", "--from", "2026-01-01", "--to", "2026-01-03",
                         "--wait")
    h.eq(rc, 1, "backfill with a failing partition: exit status")
    d.stop()
    check_promtool(tool, path)
    with open(path) as f:
        text = f.read()
    s = samples(text)

    def v(name, **labels):
        key = (name, frozenset(labels.items()))
        h.check(key in s, "no sample %s%r in\n%s" % (name, labels, text))
        return s[key]

    h.eq(v("backfilld_runs_total", job="daily", state="succeeded"), 2, "daily succeeded runs")
    h.eq(v("backfilld_runs_total", job="daily", state="failed"), 1, "daily failed runs")
    h.eq(v("backfilld_runs_total", job="weekly", state="succeeded"), 0, "weekly runs")
    h.eq(v("backfilld_run_duration_seconds_count", job="daily"), 3, "duration count")
    h.eq(v("backfilld_run_duration_seconds_bucket", job="daily", le="+Inf"), 3, "+Inf bucket")
    h.eq(v("backfilld_partitions", job="daily", state="failed"), 1, "failed partitions")
    h.eq(v("backfilld_partitions", job="weekly", state="blocked"), 1,
         "the week blocked by the failed day")
    h.eq(v("backfilld_catchup_refused", job="daily"), 0, "catchup refused")
    h.eq(v("backfilld_schedule_delay_seconds_count", job="daily"), 0, "no delay for backfills")
    h.eq(v("backfilld_watermark_timestamp_seconds", job="sched"), 1767139200,
         "watermark 2025-12-31 as Unix time")
    h.eq(v("backfilld_hooks_total", hook="on_failure", result="ok"), 0, "hooks")
    h.eq(v("backfilld_hooks_dropped_total"), 0, "hooks dropped")
    h.eq(v("backfilld_state_store_writable"), 1, "the state store writable")
    h.eq(v("backfilld_last_success_timestamp_seconds", job="daily"), 1767225600,
         "daily's last success at the test clock's 2026-01-01T00:00Z")
    h.check(("backfilld_last_success_timestamp_seconds", frozenset({("job", "weekly")}))
            not in s, "a last success of weekly, which never succeeded")
    h.eq(v("backfilld_deadline_seconds", job="sched"), 7200, "sched's deadline")
    h.eq(v("backfilld_partition_seconds", job="sched"), 86400, "sched's partition")
    h.check(("backfilld_deadline_seconds", frozenset({("job", "daily")})) not in s,
            "a deadline series for daily, which has none")
    h.check(any(k[0] == "backfilld_build_info" and v_ == 1 for k, v_ in s.items()),
            "build_info")
    for name in ("backfilld_runs_total", "backfilld_run_duration_seconds",
                 "backfilld_schedule_delay_seconds", "backfilld_partitions",
                 "backfilld_watermark_timestamp_seconds", "backfilld_catchup_refused",
                 "backfilld_hooks_total", "backfilld_hooks_dropped_total",
                 "backfilld_build_info", "backfilld_state_store_writable",
                 "backfilld_last_success_timestamp_seconds", "backfilld_deadline_seconds",
                 "backfilld_partition_seconds"):
        h.check("# HELP %s " % name in text and "# TYPE %s " % name in text,
                "HELP and TYPE of %s" % name)
    h.check(not re.search(r"20\d\d-\d\d-\d\d", text), "a partition key in the metrics:\n" + text)
    leftovers = [n for n in os.listdir(os.path.dirname(path)) if n != "backfilld.prom"]
    h.eq(leftovers, [], "temporary files left in the folder")


if __name__ == "__main__":
    h.main([test_metrics_file])
