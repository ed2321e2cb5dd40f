#!/usr/bin/env python3
"""tools/demo.sh, the README's demo, runs to the end on the built binaries:
the fact table is shown wrong, then repaired, exactly the weeks of the
deploy window rebuilt, a second backfill changes nothing, and the daemon
stops with status 0.  Skipped (77) without the sqlite3 shell it needs."""
import os
import shutil
import subprocess
import sys
import tempfile

import harness as h


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
    rebuilt = [l for l in after.splitlines() if "rebuilt" in l and "2026-" in l]
    h.eq(sorted(l.split()[1] for l in rebuilt), ["2026-02-01", "2026-02-02", "2026-02-09"],
         "rows shown as rebuilt (the two weeks and February)")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    if not shutil.which("sqlite3"):
        print("SKIP: tools/demo.sh needs the sqlite3 shell (apt-get install sqlite3)")
        sys.exit(h.SKIP)
    h.main([test_demo_script])
