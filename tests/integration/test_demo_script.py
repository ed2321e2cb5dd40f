#!/usr/bin/env python3
"""tools/demo.sh, the README's demo, runs to the end on the built binaries:
the fact table is shown wrong, then repaired, exactly the weeks of the
deploy window rebuilt, the audit shown is the backfill's own request, a
second backfill changes nothing, and the daemon stops with status 0.  Skipped (77) without the sqlite3 shell it needs."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness as h


def sample(line):
    """A regex for a sample line of docs/install.md: its durations vary."""
    pat = re.escape(line)
    pat = re.sub(r"in\\ \d+\\ ms", r"in\\ \\d+\\ ms", pat)
    return re.sub(r"in\\ \d+\\.\d+s", r"in\\ \\d+\\.\\ds", pat)


def check_install_md(backfill, log_path):
    """docs/install.md's sample output of the example's backfill (step 7) and
    its log lines (step 8) are what the demo, the same configuration,
    printed and logged."""
    with open(os.path.join(h.SOURCE_ROOT, "docs", "install.md")) as f:
        doc = f.read()
    with open(log_path) as f:
        log = f.read()
    block = doc.split("$ backfillctl backfill fct_daily_sales --from 2026-02-08"
                      " --to 2026-02-12 --wait\n", 1)[1].split("```", 1)[0]
    lines = block.strip("\n").split("\n")
    h.eq(len(lines), 2, "install.md: lines of the backfill's sample output")
    for line in lines:
        h.check(re.search("^" + sample(line) + "$", backfill, re.M),
                "install.md's %r is not what the demo printed:\n%s" % (line, backfill))
    m = re.search(r"it logs `(catchup is off:[^`]*)`", doc)
    h.check(m, "install.md no longer quotes the catchup line")
    h.check(" ".join(m.group(1).split()) in log,
            "install.md's %r is not in the demo's log" % m.group(1))
    journal = re.findall(r"^\.\.\. backfilld\[1234\]: (.*)$", doc, re.M)
    h.check(journal, "install.md has no journal sample")
    for line in journal:
        h.check(re.search(r": " + sample(line), log),
                "install.md's journal line %r is not in the demo's log" % line)


def test_demo_script():
    backfilld, _ = h.binaries()
    build = os.path.dirname(os.path.dirname(backfilld))
    tmp = tempfile.mkdtemp(prefix="bfd-demosh-")
    demo = os.path.join(tmp, "demo")
    try:
        p = subprocess.run(["bash", os.path.join(h.SOURCE_ROOT, "tools", "demo.sh"),
                            "--build", build, "--dir", demo],
                           capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        h.fail("tools/demo.sh did not finish within 240 s (kept %s)" % tmp)
    print(p.stdout[-4000:])
    h.eq(p.returncode, 0, "tools/demo.sh exit status (stderr: %s; kept %s)"
         % (p.stderr[-2000:], tmp))
    out = p.stdout
    for needle in ("excludes refunds", "fact rows outside the window that changed: 0",
                   "unchanged.", "backfilld exited 0"):
        h.check(needle in out, "the demo output lacks %r" % needle)
    before, after = out.split("== The plan", 1)
    h.check(before.count("WRONG") == 8,
            "before: expected 5 wrong days, 2 wrong weeks and 1 wrong month, "
            "found %d WRONG" % before.count("WRONG"))
    h.check("WRONG" not in after.split("== After: exactly")[0].split("== After: the fact")[1],
            "after the backfill the fact table still has WRONG days")
    # The audit shown is the backfill's: the request id its --wait printed,
    # in the heading and in the audit's summary line, with a row for each
    # day of the window (not the scheduled run of 2026-02-22).
    backfill = after.split("== The backfill:", 1)[1].split("\n== ", 1)[0]
    m = re.search(r"^request (\d+): queued", backfill, re.M)
    h.check(m, "the backfill printed no request id:\n%s" % backfill)
    req = m.group(1)
    m = re.search(r"^== The audit of that request: backfillctl audit --request (\d+)$", out, re.M)
    h.check(m, "the demo output has no audit heading")
    h.eq(m.group(1), req, "the request of the audit heading (the backfill's)")
    audit = out.split(m.group(0), 1)[1].split("\n== ", 1)[0]
    h.check(re.search(r"^request %s \(fct_daily_sales\): \d+ partitions" % req,
                      audit, re.M),
            "the audit shown is not the backfill's request %s:\n%s" % (req, audit))
    for day in h.days(*h.WINDOW):
        h.check(re.search(r"^fct_daily_sales\s+%s\s" % day, audit, re.M),
                "the audit shown has no row for %s:\n%s" % (day, audit))
    check_install_md(backfill, os.path.join(demo, "backfilld.log"))
    rebuilt = [l for l in after.splitlines() if "rebuilt" in l and "2026-" in l]
    h.eq(sorted(l.split()[1] for l in rebuilt), ["2026-02-01", "2026-02-02", "2026-02-09"],
         "rows shown as rebuilt (the two weeks and February)")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    if not shutil.which("sqlite3"):
        print("SKIP: tools/demo.sh needs the sqlite3 shell (apt-get install sqlite3)")
        sys.exit(h.SKIP)
    h.main([test_demo_script])
