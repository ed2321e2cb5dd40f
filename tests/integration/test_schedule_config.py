#!/usr/bin/env python3
"""The schedule's bad input (issue 4, "Bad input"): `start` after `end`, a
`ready_after` that is not a duration, `max_catchup` of 0 or negative.
`backfilld --check-config --config F` exits 2 with one error line
FILE:LINE:COLUMN: message, pointing at the offending value; the daemon
itself (`backfilld --config F`) refuses to start with exit 2."""
import os
import re
import subprocess

import harness as h

HEAD = """state_db: state.db
socket: backfilld.sock
"""

JOB = """jobs:
  - name: j
    partition: %(grain)s
    start: %(start)s
%(extra)s    command: ["true"]
"""

# (what, grain, start, extra lines (indented 4), the offending text)
CASES = [
    ("start after end", "day", "2026-03-10", "    end: 2026-03-01\n", "2026-03-01"),
    ("start after end (hours of one day)", "hour", "2026-03-01T10",
     "    end: 2026-03-01T09\n", "2026-03-01T09"),
    ("end inside start's month but before start's day", "month", "2026-03-15",
     "    end: 2026-03-01\n", "2026-03-01"),
    ("ready_after a word", "day", "2026-03-01", "    ready_after: soon\n", "soon"),
    ("ready_after without a unit", "day", "2026-03-01", "    ready_after: 90\n", "90"),
    ("ready_after an unknown unit", "day", "2026-03-01", "    ready_after: 1w\n", "1w"),
    ("ready_after negative", "day", "2026-03-01", "    ready_after: -2h\n", "-2h"),
    ("ready_after empty", "day", "2026-03-01", "    ready_after: \"\"\n", '""'),
    ("ready_after a list", "day", "2026-03-01", "    ready_after: [2h]\n", "[2h]"),
    ("job max_catchup 0", "day", "2026-03-01", "    max_catchup: 0\n", "0"),
    ("job max_catchup negative", "day", "2026-03-01", "    max_catchup: -5\n", "-5"),
    ("job max_catchup not a number", "day", "2026-03-01", "    max_catchup: lots\n", "lots"),
]

TOP_CASES = [
    ("top-level max_catchup 0", "max_catchup: 0\n", "0"),
    ("top-level max_catchup negative", "max_catchup: -1\n", "-1"),
]


def position(text, line_needle, needle):
    """1-based line and column of needle on the line holding line_needle."""
    for n, line in enumerate(text.split("\n"), 1):
        if line_needle in line:
            return n, line.index(needle, line.index(":") + 1) + 1
    raise AssertionError("%r not in the config" % line_needle)


def check_rejected(what, text, line, col, problems):
    d = h.Daemon(config=text, name="schcfg", start=False, clock="2026-03-05T00:00:00Z")
    try:
        p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                           capture_output=True, text=True, timeout=30, cwd=d.dir)
        err = p.stderr.strip("\n")
        want = "backfilld.yaml:%d:%d: " % (line, col)
        ok = (p.returncode == 2 and want in err and "\n" not in err)
        # the daemon itself must not start on it either
        q = subprocess.run([d.backfilld, "--config", d.conf], capture_output=True,
                           text=True, timeout=30, cwd=d.dir, env=d.env())
        ok = ok and q.returncode == 2 and not os.path.exists(d.sock)
        if ok:
            print("  ok: %-48s -> %s" % (what, err))
        else:
            problems.append("%s: --check-config exit %d (want 2), stderr %r (want one line"
                            " naming %s); backfilld --config exit %d (want 2)"
                            % (what, p.returncode, p.stderr, want, q.returncode))
            print("  bad: %s" % problems[-1])
    except subprocess.TimeoutExpired:
        problems.append("%s: the daemon started on it (still running after 30 s)" % what)
    finally:
        d.close()


def test_bad_schedule_config():
    problems = []
    for what, grain, start, extra, bad in CASES:
        text = HEAD + JOB % {"grain": grain, "start": start, "extra": extra}
        key = extra.strip().split(":")[0] + ":"
        line, col = position(text, "    " + key, bad)
        check_rejected(what, text, line, col, problems)
    for what, top, bad in TOP_CASES:
        text = HEAD + top + JOB % {"grain": "day", "start": "2026-03-01", "extra": ""}
        line, col = position(text, top.split(":")[0] + ":", bad)
        check_rejected(what, text, line, col, problems)
    h.check(not problems, "%d bad configurations mishandled:\n%s"
            % (len(problems), "\n".join(problems)))


def test_good_schedule_config():
    """The same keys with good values pass (so the cases above fail for
    the reason they test)."""
    text = HEAD + "max_catchup: 1\n" + JOB % {
        "grain": "day", "start": "2026-03-01",
        "extra": "    end: 2026-03-01\n    ready_after: 90m\n    max_catchup: 1\n"}
    d = h.Daemon(config=text, name="schcfg-ok", start=False)
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30, cwd=d.dir)
    h.eq((p.returncode, p.stderr), (0, ""), "--check-config on a good schedule (exit, stderr)")
    d.close()


if __name__ == "__main__":
    h.main([test_bad_schedule_config, test_good_schedule_config])
