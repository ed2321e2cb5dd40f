#!/usr/bin/env python3
"""README.md's "The lesson, in commands", run as written: its two shell
blocks, in one bash, in a scratch copy of the tree's layout (build/,
config/), waiting for the socket between them as a person typing does.
The plan shown is the README's sample, the backfill's request is the one
the README audits, every day of the window and what it feeds succeeds,
the audit shows 2026-02-08's revenue repaired, nothing is left stale and
the daemon exits 0 on the block's `kill %1`.  Skipped (77) without the
sqlite3 shell."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness as h


def lesson_blocks():
    """The sh blocks and the sample output block of the lesson section."""
    with open(os.path.join(h.SOURCE_ROOT, "README.md")) as f:
        readme = f.read()
    sec = readme.split("## The lesson, in commands\n", 1)
    h.check(len(sec) == 2, "README.md has no section 'The lesson, in commands'")
    sec = sec[1].split("\n## ", 1)[0]
    sh, sample, block, kind = [], [], None, None
    for line in sec.splitlines(keepends=True):
        if block is None and line.startswith("```"):
            block, kind = "", line[3:].strip()
        elif block is not None and line.startswith("```"):
            (sh if kind == "sh" else sample).append(block)
            block = None
        elif block is not None:
            block += line
    h.eq(len(sh), 2, "shell blocks of the lesson")
    h.eq(len(sample), 1, "sample output blocks of the lesson")
    return sh, sample[0]


def test_readme_lesson():
    backfilld, backfillctl = h.binaries()
    (first, second), sample = lesson_blocks()
    tmp = tempfile.mkdtemp(prefix="bfd-lesson-")
    os.makedirs(os.path.join(tmp, "build", "daemon"))
    for prog in (backfilld, backfillctl):
        os.symlink(prog, os.path.join(tmp, "build", "daemon", os.path.basename(prog)))
    os.symlink(os.path.join(h.SOURCE_ROOT, "config"), os.path.join(tmp, "config"))
    # between the blocks: the socket answers (bounded), as it has by the
    # time a person types the next line
    wait = ('for i in $(seq 200); do ctl status >/dev/null 2>&1 && break; '
            'sleep 0.05; done\n')
    first_lines = first.splitlines()
    start = [i for i, l in enumerate(first_lines) if "backfilld --config" in l]
    h.eq(len(start), 1, "the lesson starts the daemon once")
    script = "\n".join(first_lines[:start[0] + 1]) + "\n" + wait + \
        "\n".join(first_lines[start[0] + 1:]) + "\n" + \
        "echo '=== second block'\n" + second + "wait %1; echo \"daemon exit $?\"\n"
    try:
        p = subprocess.run(["bash", "-e", "-c", script], cwd=tmp,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        h.fail("the lesson did not finish within 120 s (kept %s)" % tmp)
    print(p.stdout[-6000:])
    h.eq(p.returncode, 0, "the lesson's exit status (stderr: %s; kept %s)"
         % (p.stderr[-2000:], tmp))
    plan, rest = p.stdout.split("=== second block\n", 1)
    for line in sample.splitlines():
        if line == "...":
            continue
        h.check(line in plan.splitlines(),
                "README's sample line %r is not in the plan printed:\n%s" % (line, plan))
    m = re.search(r"ctl audit --request (\d+)", second)
    h.check(m, "the lesson audits no request")
    req = m.group(1)
    h.check(re.search(r"^request %s: 8 succeeded, 0 failed, 0 blocked, 0 cancelled of 8"
                      % req, rest, re.M),
            "the backfill is not request %s with 8 partitions succeeded:\n%s" % (req, rest))
    h.check(re.search(r"^fct_daily_sales\s+2026-02-08\s.*revenue 834\.07 -> 715\.12 "
                      r"\(-14\.3%\)\s+4/4 passed\s+pass", rest, re.M),
            "the audit does not show 2026-02-08 repaired as README says:\n%s" % rest)
    h.check(re.search(r"^request %s \(fct_daily_sales\): 8 partitions \(3 downstream\): "
                      r"8 passed" % req, rest, re.M), "the audit's summary line")
    h.check(re.search(r"^nothing is stale: every downstream partition", rest, re.M),
            "README says nothing is left stale:\n%s" % rest)
    h.check(re.search(r"^legend: .*s succeeded", rest, re.M), "the map has no legend")
    h.check(rest.rstrip().endswith("daemon exit 0"), "the daemon exits 0 on kill %1")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    if not shutil.which("sqlite3"):
        print("SKIP: the lesson needs the sqlite3 shell (apt-get install sqlite3)")
        sys.exit(h.SKIP)
    h.main([test_readme_lesson])
