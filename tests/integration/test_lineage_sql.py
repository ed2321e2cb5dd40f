#!/usr/bin/env python3
"""Lineage from the SQL (issue 41; docs/configuration.md, "Lineage from the
SQL"): a job whose SQL reads a table another job writes, without that job
in its upstream, is refused by --check-config and on reload at the
position of the read, with one line that says what to do; reads_ignored
accepts it; a start with such a file runs and warns; `backfillctl jobs`
shows what each job reads and writes, as inferred."""
import re
import signal
import subprocess
import time

import harness as h

WAREHOUSE = "CREATE TABLE fct (dt TEXT, v INTEGER); CREATE TABLE mart (dt TEXT, v INTEGER);"

FCT = """
- name: fct
  partition: day
  start: 2026-01-01
  warehouse: wh
  table: fct
  partition_column: dt
  sql: |
    DELETE FROM fct WHERE dt = :partition;
    INSERT INTO fct (dt, v) SELECT :partition, 1;
"""

MART = """
- name: mart
  partition: day
  start: 2026-01-01
  warehouse: wh
  table: mart
  partition_column: dt
%s  sql: |
    DELETE FROM mart WHERE dt = :partition;
    INSERT INTO mart (dt, v) SELECT :partition, SUM(v) FROM fct WHERE dt = :partition;
"""

DECLARED = FCT + MART % "  upstream: [fct]\n"
UNDECLARED = FCT + MART % ""
IGNORED = FCT + MART % "  reads_ignored: [fct]\n"


def config(d, jobs):
    """The daemon's configuration with `jobs` instead of its own."""
    return d.render(jobs, {}).replace("{dir}", d.dir)


def check_config(d):
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def refusal(d):
    """The refusal as the file now written must say it: the read's line and
    column (FROM fct in mart's INSERT), and the DESIGN's words."""
    lines = d.config_text.split("\n")
    row = next(i for i, l in enumerate(lines) if "SUM(v) FROM fct" in l)
    col = lines[row].index("FROM fct") + len("FROM ") + 1
    return ("backfilld.yaml:%d:%d: job \"mart\" reads fct, which job \"fct\" writes, but"
            " does not list it in upstream: a backfill of fct would leave mart stale; add"
            " it to upstream, or to reads_ignored: [fct] if mart reads it as a lookup that"
            " must not trigger rebuilds" % (row + 1, col))


def wait_log(d, pattern, what, timeout=30):
    """The daemon's log says `pattern` (a refused SIGHUP has no other
    trace); the timeout is a failure guard."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(pattern, open(d.log).read()):
            return
        time.sleep(0.05)
    h.fail("%s: %r not in the log\n%s" % (what, pattern, d.log_tail()))


def by_name(d):
    return {j["name"]: j for j in d.json("jobs")["jobs"]}


def test_undeclared_read_refused():
    d = h.Daemon(jobs=DECLARED, warehouses={"wh": WAREHOUSE}, name="lineage")
    jobs = by_name(d)
    h.eq((jobs["mart"]["reads"], jobs["mart"]["writes"]), (["fct"], ["mart"]),
         "mart's inferred reads and writes")
    h.eq((jobs["fct"]["reads"], jobs["fct"]["writes"]), ([], ["fct"]),
         "fct's inferred reads and writes")
    table = d.ok("jobs").splitlines()
    head = table[0].split()
    h.check("READS" in head and "WRITES" in head, "jobs' columns: %r" % table[0])
    mart = next(l.split() for l in table if l.startswith("mart "))
    h.eq((mart[head.index("READS")], mart[head.index("WRITES")]), ("fct", "mart"),
         "mart's row of jobs")
    before = d.json("jobs")

    # the upstream entry dropped: --check-config refuses, one line
    d.write_config(config(d, UNDECLARED))
    want = refusal(d)
    rc, out, err = check_config(d)
    h.eq((rc, out), (2, ""), "--check-config of an undeclared read (stderr %r)" % err)
    h.check(err.count("\n") == 1 and err.strip().endswith(want),
            "--check-config's line:\n  %r\nwanted it to end with\n  %r" % (err, want))
    # reload: the same line, nothing changed
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload of an undeclared read")
    h.check(e.endswith(want), "reload's line: %r" % e)
    h.eq(d.json("jobs"), before, "jobs after the refused reload")
    # SIGHUP: refused too, logged
    d.signal(signal.SIGHUP)
    wait_log(d, r"reload refused.*job \"mart\" reads fct", "the SIGHUP's refusal")
    h.eq(d.json("jobs"), before, "jobs after the refused SIGHUP")

    # reads_ignored: a lookup, accepted; mart no longer lists fct upstream
    d.write_config(config(d, IGNORED))
    rc, out, err = check_config(d)
    h.eq(rc, 0, "--check-config with reads_ignored (stderr %r)" % err)
    d.ok("reload")
    h.eq(by_name(d)["mart"]["upstream"], [], "mart's upstream after the reload")
    d.stop()


def test_reads_ignored_must_be_read():
    d = h.Daemon(jobs=FCT + MART % "  upstream: [fct]\n  reads_ignored: [dim]\n",
                 warehouses={"wh": WAREHOUSE}, name="lineage-ignored", start=False)
    rc, out, err = check_config(d)
    h.eq((rc, out), (2, ""), "--check-config of reads_ignored naming no read")
    h.check('job "mart": reads_ignored names "dim", which its SQL does not read; remove it'
            in err and err.count("\n") == 1, err)


def test_start_warns():
    """A file with an undeclared read (written before this check existed)
    does not stop the host at start: it runs and says so."""
    d = h.Daemon(jobs=UNDECLARED, warehouses={"wh": WAREHOUSE}, name="lineage-start")
    log = open(d.log).read()
    h.check(re.search(r"warning: .*job \"mart\" reads fct, which job \"fct\" writes.*;"
                      r" --check-config and reload refuse this configuration until it is"
                      r" fixed\n", log),
            "the start's warning (docs/operations.md, the package's upgrade):\n%s" % log)
    h.eq(sorted(by_name(d)), ["fct", "mart"], "both jobs loaded")
    # it runs as it did before the check existed: a backfill of fct runs,
    # and (mart not listing it) rebuilds nothing of mart
    d.backfill("fct", "2026-01-05", "2026-01-05")
    h.eq([(r["job"], r["state"]) for r in d.runs()], [("fct", "succeeded")],
         "a backfill under the start's configuration")
    # and a reload of the same file is refused until it is fixed
    rc, out, err = d.ctl("reload")
    h.check(h.one_line_error(rc, out, err, 2, "reload after the start").endswith(refusal(d)),
            "the reload's refusal: %r" % err)
    d.stop()


if __name__ == "__main__":
    h.main([test_undeclared_read_refused, test_reads_ignored_must_be_read, test_start_warns])
