#!/usr/bin/env python3
"""valgrind shows no leak over start, reload and stop (issue 5, Tests).

The real daemon runs under valgrind's memcheck (--leak-check=full,
--errors-for-leak-kinds=definite, --error-exitcode=99), with the harness's
NOTIFY_SOCKET readiness.  It runs a small backfill of the sales example
(SQL job, downstream weekly mart, a command job), reloads with SIGHUP (a
changed configuration swapped in while a run is in flight), reloads to a
broken file (refused, the old configuration kept), reloads once more
through backfillctl, and stops with SIGTERM.  The daemon must exit 0 (so
memcheck found no error, no definite leak included) and the valgrind log
must show no "definitely lost" bytes.

Skips (77) when valgrind is not installed or when the daemon is built with
a sanitizer (ASan/UBSan/TSan/MSan do not run under valgrind)."""
import os
import re
import shutil
import signal
import subprocess

import harness as h

SLOW = 120.0   # guard for READY=1 and for each wait under valgrind

CMD_JOB = """
- name: export_daily
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  upstream: [fct_daily_sales]
  command: ["/bin/sh", "{dir}/export.sh", "{partition}"]
"""

EXPORT_SH = r"""#!/bin/sh
# Holds the first partition until the test releases it (a run in flight
# across a reload), then appends the partition to exported.txt.
dir="$(dirname "$0")"
if [ "$1" = "2026-02-02" ]; then
    while [ ! -e "$dir/release" ]; do sleep 0.05; done
fi
echo "$1" >> "$dir/exported.txt"
"""

EXTRA_JOB = """
- name: extra
  partition: day
  start: 2026-01-26
  end: 2026-02-22
  catchup: false
  command: ["/bin/true"]
"""


def sanitizer_in(path):
    """The sanitizer the binary was built with, or None (ldd and symbols)."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    m = re.search(r"lib(asan|ubsan|tsan|msan|lsan|hwasan)\b", out)
    if m:
        return m.group(1)
    with open(path, "rb") as f:
        data = f.read()
    for sym, name in ((b"__asan_init", "asan"), (b"__tsan_init", "tsan"),
                      (b"__msan_init", "msan"), (b"__ubsan_handle_", "ubsan"),
                      (b"__hwasan_init", "hwasan")):
        if sym in data:
            return name
    return None


def preflight():
    d, _ = h.binaries()
    vg = shutil.which("valgrind")
    if vg is None:
        print("SKIP: valgrind is not installed")
        raise SystemExit(h.SKIP)
    san = sanitizer_in(d)
    if san:
        print("SKIP: %s is built with a sanitizer (%s); valgrind cannot run it" % (d, san))
        raise SystemExit(h.SKIP)
    r = subprocess.run([vg, "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        print("SKIP: valgrind does not run here: %s" % r.stderr.strip())
        raise SystemExit(h.SKIP)


def wait_reload(d, what):
    """After a SIGHUP or reload: RELOADING=1, then READY=1 (both events)."""
    d.wait_notification("RELOADING=1", SLOW, what="RELOADING=1 (%s)" % what)
    d.wait_notification("READY=1", SLOW, what="READY=1 after %s" % what)


def test_no_leak_over_start_reload_stop():
    jobs = h.fact_job(2) + h.WEEKLY_JOB + CMD_JOB
    d = h.Daemon(jobs=jobs, warehouses={"sales": h.sales_seed()},
                 settings={"max_concurrency": 3, "shutdown_grace": "60s"},
                 name="valgrind", start=False)
    with open(os.path.join(d.dir, "export.sh"), "w") as f:
        f.write(EXPORT_SH)
    vglog = os.path.join(d.dir, "valgrind.log")
    d.start(wrapper=["valgrind", "--leak-check=full", "--show-leak-kinds=definite",
                     "--errors-for-leak-kinds=definite", "--error-exitcode=99",
                     "--track-fds=no", "--trace-children=no", "--num-callers=30",
                     "--log-file=" + vglog],
            ready_timeout=SLOW)

    # A small backfill: SQL runs with checks, the weekly mart downstream and
    # the command job downstream (held on 2026-02-02 until released).
    req = d.enqueue("backfill", "fct_daily_sales", "--from", "2026-02-02", "--to", "2026-02-04")

    # SIGHUP with a changed configuration (one job more) while runs are in
    # flight or queued: swapped in, old configuration released later.
    d.write_config(d.config_text.rstrip("\n") + "\n" + "\n".join(
        "  " + l for l in EXTRA_JOB.strip("\n").split("\n")) + "\n")
    d.signal(signal.SIGHUP)
    wait_reload(d, "SIGHUP with a new job")
    h.check("extra" in d.status(), "the reload did not add job extra: %r" % list(d.status()))

    # A reload to a broken file: refused, the old configuration kept.
    good = d.config_text
    d.write_config(good + "max_concurrency: [broken\n")
    d.signal(signal.SIGHUP)
    wait_reload(d, "SIGHUP with a broken file")
    d.assert_alive("after a reload to a broken file")
    h.check("extra" in d.status(), "the refused reload dropped the running configuration")
    with open(d.log, errors="replace") as f:
        h.check("reload refused" in f.read(), "no 'reload refused' log line:\n" + d.log_tail())

    # Back to the good file, reloaded through the socket.
    d.write_config(good)
    d.ok("reload")

    open(os.path.join(d.dir, "release"), "w").close()
    resp = d.wait_request(req, timeout=SLOW)
    h.eq(resp.get("status"), "0", "wait for the backfill under valgrind: %r" % (resp,))
    h.assert_fact_repaired(d, "2026-02-02", "2026-02-04")
    with open(os.path.join(d.dir, "exported.txt")) as f:
        h.eq(sorted(l.strip() for l in f), ["2026-02-02", "2026-02-03", "2026-02-04"],
             "partitions exported by the command job")
    d.backfill("extra", "2026-02-01", "2026-02-02")

    rc = d.stop(expect_rc=None)
    with open(vglog, errors="replace") as f:
        log = f.read()
    tail = "\n".join(log.splitlines()[-60:])
    h.check(rc != 99, "valgrind reported errors (exit 99):\n%s" % tail)
    h.eq(rc, 0, "backfilld exit status under valgrind after SIGTERM")
    lost = re.findall(r"definitely lost: ([\d,]+) bytes", log)
    h.check(all(n.replace(",", "") == "0" for n in lost),
            "valgrind: definitely lost %r bytes:\n%s" % (lost, tail))
    h.check(not re.search(r"are definitely lost in loss record", log),
            "valgrind reports definitely lost blocks:\n%s" % tail)
    m = re.search(r"ERROR SUMMARY: (\d+) errors", log)
    h.check(m is not None, "no ERROR SUMMARY in the valgrind log:\n%s" % tail)
    h.eq(m.group(1), "0", "valgrind ERROR SUMMARY errors")
    print("  valgrind: %s" % "; ".join(
        l.split("== ", 1)[-1].strip() for l in log.splitlines()
        if "in use at exit" in l or "definitely lost:" in l or "ERROR SUMMARY" in l
        or "no leaks are possible" in l))


if __name__ == "__main__":
    preflight()
    h.main([test_no_leak_over_start_reload_stop])
