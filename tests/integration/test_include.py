#!/usr/bin/env python3
"""Configuration for a hundred jobs (issue 17): `include: [jobs.d/*.yaml]`
with 100 job files loads and reloads; an error in an included file names
that file's line and column; a duplicate job across two files names both;
a reload that renames one job and edits another's SQL reports exactly one
removed, one added and one changed with both code versions, in the log and
in `backfillctl reload` (table and --json), and through SIGHUP in the log;
`reload --dry-run` applies nothing; `jobs --json` lists every job with the
file and line that define it."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import time

import harness as h

MAIN = """state_db: state.db
socket: backfilld.sock
warehouses:
  - name: sales
    sqlite: sales.db
include:
  - jobs.d/*.yaml
  - optional: teams.d/*.yaml
"""

N = 100


def job_text(i, name=None, sql="SELECT :partition"):
    name = name or "job-%03d" % i
    if i % 2 == 0:
        return ("jobs:\n  - name: %s\n    warehouse: sales\n    partition: day\n"
                "    sql: %s\n" % (name, sql))
    return ("jobs:\n  - name: %s\n    partition: day\n"
            "    command: [\"/bin/true\"]\n" % name)


def write_job(d, i, text):
    path = os.path.join(d.dir, "jobs.d", "job-%03d.yaml" % i)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)
    return path


def make_daemon():
    # a clock after the dates it backfills (its jobs have no schedule)
    d = h.Daemon(config=MAIN, warehouses={"sales": None}, name="include",
                 start=False, clock="2026-02-01T00:00:00Z")
    os.mkdir(os.path.join(d.dir, "jobs.d"))
    for i in range(N):
        write_job(d, i, job_text(i))
    d.start()
    return d


def jobs_by_name(d):
    return {j["name"]: j for j in d.json("jobs")["jobs"]}


def log_text(d):
    with open(d.log, errors="replace") as f:
        return f.read()


def wait_log(d, pattern, since, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, log_text(d)[since:])
        if m:
            return m
        time.sleep(0.05)
    h.fail("%s: %r not in the log\n%s" % (what, pattern, d.log_tail()))


def rename_and_edit(d, ren, edit):
    """Rename job `ren` to job-NNNb (pausing it with 3 queued partitions
    first) and edit job `edit`'s SQL; returns (old, new) name and the
    edited job's old code version."""
    old, new = "job-%03d" % ren, "job-%03db" % ren
    d.ok("pause", old)
    d.ok("backfill", old, "--from", "2026-01-01", "--to", "2026-01-03")
    before = jobs_by_name(d)[("job-%03d" % edit)]["code_version"]
    write_job(d, ren, job_text(ren, name=new))
    write_job(d, edit, job_text(edit, sql="SELECT :partition_start"))
    return old, new, before


def test_hundred_files_and_jobs_listing():
    d = make_daemon()
    jobs = d.json("jobs")["jobs"]
    h.eq(len(jobs), N, "jobs listed")
    real = os.path.realpath(d.dir)
    for j in jobs:
        i = int(j["name"][4:])
        h.eq(j["file"], os.path.join(real, "jobs.d", "job-%03d.yaml" % i),
             "file of %s" % j["name"])
        h.eq(j["line"], 2, "line of %s" % j["name"])
        h.eq(j["grain"], "day", "grain of %s" % j["name"])
        if i % 2 == 0:
            h.eq(j["warehouse"], "sales", "warehouse of %s" % j["name"])
            h.eq(j["command"], None, "command of %s" % j["name"])
        else:
            h.eq(j["command"], ["/bin/true"], "command of %s" % j["name"])
        h.check(re.fullmatch(r"[0-9a-f]{16}", j["code_version"]), "code_version %r" % j)
        h.eq(j["paused"], False, "paused")
    out = d.ok("jobs")
    h.check(re.search(r"^job-007 +day +command: /bin/true +- +- +- +no +\S+ +- +[0-9a-f]{16} +jobs\.d/job-007\.yaml:2$",
                      out, re.M), "jobs table row of job-007:\n%s" % out)
    h.check("100 jobs from 101 files" in out, "jobs summary line:\n%s" % out)
    # a reload of the same files: no change, in the output and the log
    since = len(log_text(d))
    out = d.ok("reload")
    h.eq(out, "configuration reloaded: no change\n", "reload without change")
    wait_log(d, r"reload: no change", since, "no-change reload log")
    rep = d.json("reload")
    h.eq(rep["no_change"], True, "no_change")
    h.eq((rep["added"], rep["removed"], rep["changed"]), ([], [], []), "empty report")


def test_errors_in_included_files():
    d = make_daemon()
    # an error in an included file: that file's line and column
    path = write_job(d, 50, job_text(50).replace("partition: day", "partition: dya"))
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload with a bad included file")
    h.check(re.search(r"/jobs\.d/job-050\.yaml:4:16: job \"job-050\": partition must be one of",
                      e), "position in the included file: %r" % e)
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 2, "--check-config exit")
    h.check("job-050.yaml:4:16:" in p.stderr, "--check-config names it: %r" % p.stderr)
    write_job(d, 50, job_text(50))
    # a duplicate job across two files: both places
    write_job(d, 53, job_text(53, name="job-051"))
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload with a duplicate across files")
    h.check(re.search(r"/jobs\.d/job-053\.yaml:2:11: duplicate job name \"job-051\": also defined at "
                      r"\S*/jobs\.d/job-051\.yaml:2;", e), "both places: %r" % e)
    write_job(d, 53, job_text(53))
    # a named file that does not exist; an include cycle
    d.write_config(MAIN + "  - extra.yaml\n")
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload with a missing named file")
    h.check(re.search(r"backfilld\.yaml:9:5: include \"extra\.yaml\": cannot read \S*extra\.yaml: "
                      r"No such file or directory", e), "missing file: %r" % e)
    with open(os.path.join(d.dir, "extra.yaml"), "w") as f:
        f.write("include: [jobs.d/job-000.yaml]\n")
    with open(os.path.join(d.dir, "jobs.d", "job-000.yaml"), "a") as f:
        f.write("include: [../extra.yaml]\n")
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload with an include cycle")
    h.check(re.search(r"include (cycle|\"jobs\.d/job-000\.yaml\": \S+ is already included)", e),
            "cycle: %r" % e)
    write_job(d, 0, job_text(0))
    d.write_config(MAIN)
    # all refused: the 100 jobs still run, and the fixed files reload
    h.eq(len(d.json("jobs")["jobs"]), N, "jobs after refused reloads")
    h.eq(d.ok("reload"), "configuration reloaded: no change\n", "fixed files")


def test_reload_report():
    d = make_daemon()
    real = os.path.realpath(d.dir)

    # 1. dry run: the report, nothing applied
    old, new, v_before = rename_and_edit(d, 1, 2)
    rep = d.json("reload", "--dry-run")
    h.eq(rep["dry_run"], True, "dry_run")
    h.eq(rep["added"], [new], "dry run added")
    h.eq(rep["removed"], [old], "dry run removed")
    h.eq(len(rep["changed"]), 1, "dry run changed")
    c = rep["changed"][0]
    h.eq((c["name"], c["old_code_version"], c["keys"]), ("job-002", v_before, ["sql"]),
         "dry run changed job")
    h.check(c["new_code_version"] != v_before, "a new code version")
    h.eq(rep["cancelled"], 3, "queued partitions that would be cancelled")
    names = d.status()
    h.check(old in names and new not in names, "status after the dry run still has %s" % old)
    h.eq(jobs_by_name(d)["job-002"]["code_version"], v_before, "job-002 unchanged by the dry run")
    out = d.ok("reload", "--dry-run")
    h.check("dry run, nothing applied: jobs 1 added, 1 removed, 1 changed" in out,
            "second dry run still reports the change:\n%s" % out)
    h.check("3 queued partitions of removed jobs would be cancelled" in out, out)

    # 2. applied through backfillctl reload: the table and the log
    since = len(log_text(d))
    out = d.ok("reload")
    v_after = jobs_by_name(d)["job-002"]["code_version"]
    h.check(re.search(r"^added +job +%s *$" % new, out, re.M), "added row:\n%s" % out)
    h.check(re.search(r"^removed +job +%s +" % old, out, re.M), "removed row:\n%s" % out)
    h.check(re.search(r"^changed +job +job-002 +code_version %s -> %s; keys: sql$"
                      % (v_before, v_after), out, re.M), "changed row:\n%s" % out)
    h.eq(len([l for l in out.splitlines() if re.match(r"(added|removed|changed) ", l)]), 3,
         "exactly three rows:\n%s" % out)
    h.check("configuration reloaded: jobs 1 added, 1 removed, 1 changed; warehouses 0 added,"
            " 0 removed, 0 changed; settings 0 changed; 3 queued partitions of removed jobs"
            " cancelled" in out, "summary:\n%s" % out)
    wait_log(d, r"reload: job=%s added" % new, since, "log added")
    wait_log(d, r"reload: job=%s removed" % old, since, "log removed")
    wait_log(d, r"reload: job=job-002 changed old_code_version=%s new_code_version=%s keys=sql"
             % (v_before, v_after), since, "log changed")
    wait_log(d, r"reload: jobs added=1 removed=1 changed=1 .*cancelled=3", since, "log summary")
    h.eq(len(re.findall(r"job=%s partition=\S+ request=\d+ cancelled: the job is no longer"
                        r" configured" % old, log_text(d)[since:])), 3,
         "the removed job's queued partitions are cancelled")
    jobs = jobs_by_name(d)
    h.check(new in jobs and old not in jobs, "jobs after the reload")
    h.eq(jobs[new]["file"], os.path.join(real, "jobs.d", "job-001.yaml"), "file of the renamed job")

    # 3. applied with --json
    old, new, v_before = rename_and_edit(d, 3, 4)
    rep = d.json("reload")
    v_after = jobs_by_name(d)["job-004"]["code_version"]
    h.eq((rep["dry_run"], rep["added"], rep["removed"]), (False, [new], [old]), "json reload")
    h.eq(rep["changed"], [{"name": "job-004", "old_code_version": v_before,
                           "new_code_version": v_after, "keys": ["sql"]}], "json changed")
    h.eq(rep["warehouses"], {"added": [], "removed": [], "changed": []}, "json warehouses")
    h.eq((rep["settings"], rep["cancelled"]), ([], 3), "json settings and cancelled")

    # 4. through SIGHUP: the same report in the log
    old, new, v_before = rename_and_edit(d, 5, 6)
    since = len(log_text(d))
    d.signal(signal.SIGHUP)
    m = wait_log(d, r"reload: jobs added=1 removed=1 changed=1 warehouses added=0 removed=0"
                 r" changed=0 settings=0 cancelled=3", since, "SIGHUP summary")
    v_after = jobs_by_name(d)["job-006"]["code_version"]
    text = log_text(d)[since:]
    for pat in (r"reload: job=%s added" % new, r"reload: job=%s removed" % old,
                r"reload: job=job-006 changed old_code_version=%s new_code_version=%s keys=sql"
                % (v_before, v_after)):
        h.check(re.search(pat, text), "SIGHUP log: %r not in\n%s" % (pat, text))
    h.check(m is not None, "summary")

    # 5. a setting and a warehouse (its file made first: the daemon never
    # creates a warehouse)
    sqlite3.connect(os.path.join(d.dir, "dw.db")).close()
    d.write_config(MAIN.replace("warehouses:\n", "max_catchup: 7\nwarehouses:\n"
                                "  - name: dw\n    sqlite: dw.db\n"))
    rep = d.json("reload")
    h.eq(rep["settings"], ["max_catchup"], "settings changed")
    h.eq(rep["warehouses"]["added"], ["dw"], "warehouse added")
    h.eq(len(rep["changed"]), N, "every job inherits max_catchup")
    h.eq(rep["changed"][0]["keys"], ["max_catchup"], "keys")
    h.eq(rep["changed"][0]["old_code_version"], rep["changed"][0]["new_code_version"],
         "max_catchup does not change the code version")


def test_include_typo():
    """`include: [job.d/*.yaml]` (for jobs.d) is an error naming the pattern
    at --check-config, on `reload` and on SIGHUP: nothing changes, the
    queued work stays.  Written `optional:` it may match nothing, but a
    reload that would then remove every job with queued work is refused
    too."""
    d = make_daemon()
    d.ok("pause", "job-001")
    d.ok("backfill", "job-001", "--from", "2025-12-01", "--to", "2025-12-03")
    h.eq(d.status()["job-001"]["queued"], 3, "queued before the typo")
    typo = MAIN.replace("  - jobs.d/*.yaml\n", "  - job.d/*.yaml\n")
    d.write_config(typo)
    want = (r"backfilld\.yaml:7:5: include \"job\.d/\*\.yaml\": the pattern matches no file"
            r" \(it looks in %s\); correct it, or write it \"- optional: PATTERN\" if it may"
            r" match nothing$" % re.escape(os.path.realpath(d.dir)))
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    h.eq((p.returncode, p.stdout), (2, ""), "--check-config of the typo (stderr %r)" % p.stderr)
    h.check(re.search(want, p.stderr.strip()) and p.stderr.count("\n") == 1,
            "--check-config names the pattern, one line: %r" % p.stderr)
    rc, out, err = d.ctl("reload")
    e = h.one_line_error(rc, out, err, 2, "reload of the typo")
    h.check(re.search(want, e), "reload names the pattern: %r" % e)
    since = len(log_text(d))
    d.signal(signal.SIGHUP)
    wait_log(d, r"reload refused, keeping the running configuration: .*job\.d/\*\.yaml",
             since, "SIGHUP of the typo")
    h.eq(len(d.json("jobs")["jobs"]), N, "every job is still there")
    h.eq(d.status()["job-001"]["queued"], 3, "the queued work stays")

    # optional: allowed to match nothing; every job would go with queued
    # work: refused, nothing changed
    d.write_config(MAIN.replace("  - jobs.d/*.yaml\n", "  - optional: job.d/*.yaml\n"))
    p = subprocess.run([d.backfilld, "--check-config", "--config", d.conf],
                       capture_output=True, text=True, timeout=30)
    h.eq(p.returncode, 0, "--check-config of an optional pattern (stderr %r)" % p.stderr)
    h.check("configuration OK: 0 jobs" in p.stdout, p.stdout)
    rc, out, err = d.ctl("reload", "--dry-run")
    e = h.one_line_error(rc, out, err, 2, "dry run removing every job")
    h.check(re.search(r"backfilld\.yaml defines no job: this reload would remove all 100 jobs"
                      r" and cancel their 3 queued partitions; nothing was reloaded", e), e)
    rc, out, err = d.ctl("reload")
    e2 = h.one_line_error(rc, out, err, 2, "reload removing every job")
    h.eq(e2, e, "the reload says what its dry run says")
    h.eq(len(d.json("jobs")["jobs"]), N, "every job is still there")
    h.eq(d.status()["job-001"]["queued"], 3, "the queued work stays")
    # once nothing is queued, an empty configuration is the operator's word
    req = [r for r in d.runs("--job", "job-001")][0]["request"]
    d.ok("cancel", str(req))
    out = d.ok("reload")
    h.check("jobs 0 added, 100 removed" in out, out)
    h.eq(d.json("jobs")["jobs"], [], "no job after the accepted reload")
    d.stop()


if __name__ == "__main__":
    h.main([test_hundred_files_and_jobs_listing, test_errors_in_included_files,
            test_reload_report, test_include_typo])
