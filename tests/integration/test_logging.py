#!/usr/bin/env python3
"""Logs (issue 5; backfilld(8) LOGGING): one line per event on stderr,
"<N>" syslog priority prefixes when JOURNAL_STREAM is set (stderr is the
journal), an ISO-8601 timestamp otherwise; key=value fields for job,
partition, run and request so that `journalctl -u backfilld | grep
job=fct_daily_sales` finds a job's lines; `--log-level` and the `log_level`
configuration key (the command line wins; a reload applies a new key).

JOURNAL_STREAM is set to the real device:inode of the log file the daemon's
stderr goes to, as systemd does, so that a daemon that checks it (as
sd_journal_stream_fd's users do) sees the journal."""
import os
import re

import harness as h

JOBS = """
- name: export
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  concurrency: 2
  retries: 0
  command: ["/bin/sh", "-c", "exit 0", "{partition}"]
- name: broken
  partition: day
  start: 2026-02-01
  end: 2026-02-28
  catchup: false
  retries: 0
  command: ["/bin/sh", "-c", "echo boom >&2; exit 3"]
"""

FIRST, LAST = "2026-02-01", "2026-02-03"
JOURNAL_LINE = re.compile(r"^<([0-7])>\S")
ISO_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")
MARK = re.compile(r"^---- start \d+$")   # the harness's own separator lines


def journal_env(d):
    """JOURNAL_STREAM=DEV:INODE of the file the daemon's stderr is."""
    if not os.path.exists(d.log):
        open(d.log, "a").close()
    st = os.stat(d.log)
    return {"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)}


def make(name, settings=None, journal=False, args=(), config=None):
    d = h.Daemon(jobs=JOBS, settings=settings or {"max_concurrency": 2}, name=name,
                 start=False, config=config)
    if journal:
        d.extra_env.update(journal_env(d))
    d.start(args=args)
    return d


def log_lines(d):
    with open(d.log, errors="replace") as f:
        return [l.rstrip("\n") for l in f if not MARK.match(l.rstrip("\n"))]


def work(d):
    """A backfill that succeeds and a run that fails."""
    d.backfill("export", FIRST, LAST)
    rc, out, err = d.ctl("rerun", "broken", FIRST, "--wait")
    h.eq(rc, 1, "rerun of the failing job --wait (stderr %r)" % err)


def field(line, key):
    m = re.search(r"(?:^|[ >])%s=(\S+)" % re.escape(key), line)
    return m.group(1) if m else None


def test_journal_prefixes_and_fields():
    d = make("log-journal", journal=True)
    work(d)
    d.ok("reload")
    runs = d.runs()
    d.stop()
    lines = log_lines(d)
    h.check(lines, "the daemon logged nothing")
    bad = [l for l in lines if not JOURNAL_LINE.match(l)]
    h.eq(bad, [], "stderr lines without a <N> priority prefix (JOURNAL_STREAM set)")
    stamped = [l for l in lines if ISO_LINE.match(l[3:])]
    h.eq(stamped, [], "journal lines that carry their own timestamp (journald adds one)")

    # Lines about runs: job=, partition= and run= fields, greppable.
    for r in runs:
        mine = [l for l in lines if field(l, "run") == str(r["id"])]
        h.check(mine, "no log line carries run=%s (%s %s)\n%s"
                % (r["id"], r["job"], r["partition"], "\n".join(lines)))
        for l in mine:
            h.eq((field(l, "job"), field(l, "partition")), (r["job"], r["partition"]),
                 "job= and partition= of the line %r (run %s)" % (l, r["id"]))
    for p in h.days(FIRST, LAST):
        grep = [l for l in lines if "job=export" in l.split() or l[3:].startswith("job=export ")]
        h.check(any(field(l, "partition") == p for l in grep),
                "`grep job=export` finds no line for partition %s" % p)
    h.check(any(field(l, "request") is not None for l in lines),
            "no line carries a request= field:\n" + "\n".join(lines))

    # Priorities: a failed run is an error (<3>), run starts are info (<6>).
    failed = [l for l in lines if field(l, "job") == "broken" and "fail" in l]
    h.check(failed, "no log line about the failed run of job broken:\n" + "\n".join(lines))
    h.check(any(l.startswith("<3>") for l in failed),
            "the failed run is not logged at priority 3 (err): %r" % failed)
    started = [l for l in lines if field(l, "job") == "export" and "started" in l]
    h.check(started and all(l.startswith("<6>") for l in started),
            "run starts are not logged at priority 6 (info): %r" % started)
    h.check(not any(l.startswith("<7>") for l in lines),
            "debug lines at the default level: %r" % [l for l in lines if l.startswith("<7>")])


def test_journal_startup_error_has_priority():
    """A configuration error at start-up is an error line in the journal too."""
    d = h.Daemon(jobs=JOBS, name="log-badconf", start=False)
    d.write_config(d.config_text + "no_such_key: 1\n")
    env = d.env()
    env.update(journal_env(d))
    import subprocess
    with open(d.log, "a") as logf:
        rc = subprocess.run([d.backfilld, "--config", d.conf], stdin=subprocess.DEVNULL,
                            stdout=logf, stderr=logf, env=env, cwd=d.dir, timeout=30).returncode
    h.eq(rc, 2, "backfilld exit status on a broken configuration")
    lines = log_lines(d)
    h.check(lines, "no error logged for the broken configuration")
    bad = [l for l in lines if not JOURNAL_LINE.match(l)]
    h.eq(bad, [], "stderr lines without a <N> prefix (JOURNAL_STREAM set) at a failed start")
    h.check(any(l.startswith("<3>") and "no_such_key" in l for l in lines),
            "the configuration error is not logged at priority 3 with the key: %r" % lines)


def test_plain_timestamps():
    d = make("log-plain")
    work(d)
    d.stop()
    lines = log_lines(d)
    h.check(lines, "the daemon logged nothing")
    bad = [l for l in lines if not ISO_LINE.match(l)]
    h.eq(bad, [], "stderr lines without an ISO-8601 timestamp (JOURNAL_STREAM unset)")
    h.eq([l for l in lines if JOURNAL_LINE.match(l)], [], "<N> prefixes without JOURNAL_STREAM")
    h.check(any(field(l, "job") == "export" and field(l, "run") for l in lines),
            "no job=export ... run=N line:\n" + "\n".join(lines))


def assert_quiet(d, what):
    lines = log_lines(d)
    started = [l for l in lines if "started" in l and field(l, "run")]
    h.eq(started, [], "run 'started' info lines with %s" % what)
    info = [l for l in lines if " info: " in l or " debug: " in l or " notice: " in l]
    h.eq(info, [], "info, notice or debug lines with %s" % what)
    h.check(any(field(l, "job") == "broken" and " error: " in l for l in lines),
            "the failed run (an error) is not logged with %s:\n%s" % (what, "\n".join(lines)))
    return lines


def test_log_level_option():
    d = make("log-opt", args=("--log-level", "warning"))
    work(d)
    h.eq([r["state"] for r in d.runs("--job", "export")], ["succeeded"] * 3,
         "export runs (the backfill succeeded)")
    d.stop()
    assert_quiet(d, "--log-level warning")


def test_log_level_key():
    d = make("log-key", settings={"max_concurrency": 2, "log_level": "warning"})
    work(d)
    d.stop()
    assert_quiet(d, "log_level: warning")


def test_log_level_option_beats_key():
    d = make("log-both", settings={"max_concurrency": 2, "log_level": "debug"},
             args=("--log-level", "warning"))
    work(d)
    d.stop()
    assert_quiet(d, "log_level: debug and --log-level warning")


def test_log_level_key_reload():
    """A reload applies a changed log_level."""
    d = make("log-reload", settings={"max_concurrency": 2, "log_level": "warning"})
    d.backfill("export", FIRST, FIRST)
    h.eq([l for l in log_lines(d) if "started" in l], [], "'started' lines at warning")
    d.write_config(d.config_text.replace("log_level: warning", "log_level: info"))
    d.ok("reload")
    d.backfill("export", LAST, LAST)
    lines = log_lines(d)
    h.check(any("started" in l and field(l, "partition") == LAST for l in lines),
            "no 'started' line for %s after a reload to log_level: info:\n%s"
            % (LAST, "\n".join(lines)))
    h.check(not any("started" in l and field(l, "partition") == FIRST for l in lines),
            "a 'started' line for %s, which ran at log_level: warning" % FIRST)
    d.stop()


if __name__ == "__main__":
    h.main([test_journal_prefixes_and_fields, test_journal_startup_error_has_priority,
            test_plain_timestamps, test_log_level_option, test_log_level_key,
            test_log_level_option_beats_key, test_log_level_key_reload])
