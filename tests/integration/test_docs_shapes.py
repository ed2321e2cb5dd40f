#!/usr/bin/env python3
"""docs/dependency-shapes.md as written: its first yaml block is a whole
configuration and each later one adds jobs to its jobs: list; each is
accepted by `backfilld --check-config`, the block marked `yaml refused` is
refused with the exact line the page shows after it, and every test the
page names exists (its file, and its function in that file)."""
import os
import re
import sqlite3
import subprocess

import harness as h

PAGE = os.path.join(h.SOURCE_ROOT, "docs", "dependency-shapes.md")


def blocks():
    """[(info string, text)] of the page's fenced blocks, in order."""
    out, block, info = [], None, None
    with open(PAGE) as f:
        for line in f:
            if block is None and line.startswith("```"):
                block, info = "", line[3:].strip()
            elif block is not None and line.startswith("```"):
                out.append((info, block))
                block = None
            elif block is not None:
                block += line
    h.check(block is None, "an unclosed block in %s" % PAGE)
    return out


def check_config(text):
    """backfilld --check-config of text as backfilld.yaml in a folder of
    its own (its SQLite warehouse created empty): (rc, stdout, stderr)."""
    backfilld, _ = h.binaries()
    folder = h.suite_mkdtemp("docshapes")
    os.makedirs(os.path.join(folder, "state"), exist_ok=True)
    sqlite3.connect(os.path.join(folder, "state", "sales.db")).close()
    conf = os.path.join(folder, "backfilld.yaml")
    with open(conf, "w") as f:
        f.write(text)
    p = subprocess.run([backfilld, "--check-config", "--config", conf],
                       capture_output=True, text=True, timeout=30, cwd=folder)
    return p.returncode, p.stdout, p.stderr


def test_yaml_blocks():
    bs = blocks()
    yaml = [t for i, t in bs if i == "yaml"]
    h.check(len(yaml) >= 7, "the page's yaml blocks: %d" % len(yaml))
    base = yaml[0]
    h.check(re.search(r"(?m)^jobs:\n", base) and base.endswith("\n"),
            "the first block is a whole file ending in its jobs: list")
    names = set()
    for i, extra in enumerate([""] + yaml[1:]):
        h.check(extra == "" or extra.startswith("  - name: "),
                "block %d adds jobs to the list: %r" % (i, extra[:40]))
        rc, out, err = check_config(base + extra)
        h.eq((rc, err), (0, ""), "--check-config of block %d (%s)"
             % (i, extra.split("\n", 1)[0].strip() or "the file"))
        h.check("configuration OK" in out, "block %d: %r" % (i, out))
        names |= set(re.findall(r"(?m)^  - name: (\S+)$", extra))
    # the shapes of the page, each in a block
    for job in ("mart_weekly_sales", "mart_rolling_7d", "revenue_to_date", "fx_monthly",
                "fct_revenue_eur", "store_lifetime", "mart_store_daily"):
        h.check(job in names, "no block defines %s" % job)


def test_refused_block():
    bs = blocks()
    base = [t for i, t in bs if i == "yaml"][0]
    k = [n for n, (i, _) in enumerate(bs) if i == "yaml refused"]
    h.eq(len(k), 1, "blocks marked refused")
    info, message = bs[k[0] + 1]
    h.eq(info, "", "the block after the refused one (its message)")
    rc, out, err = check_config(base + bs[k[0]][1])
    e = h.one_line_error(rc, out, err, 2, "--check-config of the refused block")
    want = message.strip()
    h.check(want.startswith("backfilld.yaml:") and
            (e == want or e.endswith("/" + want)),
            "the refusal:\n  %r\nthe page says:\n  %r" % (e, want))


def test_named_tests_exist():
    """Each test the page names: tests/integration/FILE.py or
    tests/unit/FILE.c, and each test_NAME after a file's name is a
    function of that file."""
    with open(PAGE) as f:
        text = re.sub(r"\s+", " ", f.read())
    files = re.findall(r"(?:tests/(?:integration|unit)/)?(test_\w+\.(?:py|c))", text)
    h.check(files, "the page names no test")
    current = None
    for m in re.finditer(r"(?:tests/(integration|unit)/)?(test_\w+)(\.py|\.c)?", text):
        folder, name, ext = m.groups()
        if ext:
            folder = folder or ("unit" if ext == ".c" else "integration")
            path = os.path.join(h.SOURCE_ROOT, "tests", folder, name + ext)
            h.check(os.path.exists(path), "the page names %s, which does not exist" % path)
            current = open(path).read()
        else:
            h.check(current is not None, "%s named before any file" % name)
            h.check(re.search(r"(?m)^(def %s\(|START_TEST\(%s\))" % (name, name), current),
                    "the page names %s, not a test of the file named before it" % name)


if __name__ == "__main__":
    h.main([test_yaml_blocks, test_refused_block, test_named_tests_exist])
