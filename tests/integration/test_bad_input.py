#!/usr/bin/env python3
"""Bad CLI input (issue 2, "Bad input"): every kind gets exit 2, one line on
stderr saying what was wrong, and changes nothing in the state store or the
warehouse; the daemon keeps serving.  An unreachable daemon is exit 3."""
import os
import re
import subprocess

import harness as h

W0, W1 = h.WINDOW
EVIL = "x'; DROP TABLE raw_sales;--"


def cases(d):
    bad_dates = os.path.join(d.dir, "bad-dates.txt")
    with open(bad_dates, "w") as f:
        f.write("2026-02-08\n2026-02-30\n")
    bf = ["backfill", "fct_daily_sales"]
    return [
        ("impossible date", bf + ["--from", "2026-02-30", "--to", "2026-03-01"]),
        ("impossible to-date", bf + ["--from", W0, "--to", "2026-02-29"]),
        ("month 13", bf + ["--from", "2026-13-01", "--to", "2026-13-02"]),
        ("--from after --to", bf + ["--from", W1, "--to", W0]),
        ("unpadded date", bf + ["--from", "2026-2-8", "--to", W1]),
        ("trailing garbage", bf + ["--from", W0 + "x", "--to", W1]),
        ("empty date", bf + ["--from", "", "--to", W1]),
        ("SQL in a date", bf + ["--from", W0 + "'; DROP TABLE raw_sales;--", "--to", W1]),
        ("hour bounds on a day job", bf + ["--from", "2026-02-08T05", "--to", "2026-02-08T06"]),
        ("unknown job", ["backfill", "nope", "--from", W0, "--to", W1]),
        ("SQL as a job name", ["backfill", EVIL, "--from", W0, "--to", W1]),
        ("empty job name", ["backfill", "", "--from", W0, "--to", W1]),
        ("bad --reprocess", bf + ["--from", W0, "--to", W1, "--reprocess", "sometimes"]),
        ("unknown flag", bf + ["--from", W0, "--to", W1, "--bogus"]),
        ("missing job", ["backfill"]),
        ("missing range", bf),
        ("missing --to", bf + ["--from", W0]),
        ("missing flag value", bf + ["--from"]),
        ("missing dates file", bf + ["--dates-file", os.path.join(d.dir, "nope.txt")]),
        ("bad line in dates file", bf + ["--dates-file", bad_dates]),
        ("rerun without partition", ["rerun", "fct_daily_sales"]),
        ("rerun bad partition", ["rerun", "fct_daily_sales", "2026-13-01"]),
        ("rerun unknown job", ["rerun", "nope", "2026-02-10"]),
        ("rerun SQL job name", ["rerun", EVIL, "2026-02-10"]),
        ("rerun SQL partition", ["rerun", "fct_daily_sales", "2026-02-10' OR '1'='1"]),
        ("unknown command", ["frobnicate"]),
        ("no command", []),
        ("runs negative limit", ["runs", "--limit", "-1"]),
        ("runs non-numeric limit", ["runs", "--limit", "abc"]),
        ("runs unknown state", ["runs", "--state", "exploded"]),
        ("status unknown job", ["status", "nope"]),
        ("pause unknown job", ["pause", "nope"]),
        ("pause SQL job name", ["pause", EVIL]),
        ("resume without job", ["resume"]),
        ("cancel non-numeric", ["cancel", "abc"]),
        ("cancel unknown request", ["cancel", "999999"]),
        ("audit without request", ["audit"]),
        ("audit unknown request", ["audit", "--request", "999999"]),
    ]


def test_bad_cli_input_changes_nothing():
    d = h.sales_daemon(name="badinput")
    # one good request first, so that the state store is not trivially empty
    d.backfill("fct_daily_sales", "2026-02-01", "2026-02-02")
    state0 = d.state_dump()
    wh0 = d.wh_dump()
    problems = []
    for what, args in cases(d):
        rc, out, err = d.ctl(*args)
        try:
            h.one_line_error(rc, out, err, 2, "%s (backfillctl %s)" % (what, " ".join(args)))
            d.assert_alive("after %s" % what)
            h.eq(d.state_dump(), state0, "state store after %s" % what)
            h.eq(d.wh_dump(), wh0, "warehouse after %s" % what)
        except h.TestFailure as e:
            problems.append(str(e))
            print("  bad: %s" % str(e).split("\n")[0])
            state0 = d.state_dump()
            wh0 = d.wh_dump()
            if not d.alive():
                break
        else:
            print("  ok: %-28s -> %s" % (what, err.strip()))
    h.check(not problems, "%d of the bad inputs were mishandled:\n%s"
            % (len(problems), "\n".join(problems)))
    # A filter naming no job: refused, or an empty answer; nothing changes.
    rc, out, err = d.ctl("runs", "--job", EVIL, "--json")
    if rc == 2:
        h.one_line_error(rc, out, err, 2, "runs --job EVIL")
    else:
        h.eq((rc, h.json.loads(out)), (0, []), "runs --job EVIL --json")
    h.eq(d.wh_dump(), wh0, "warehouse after runs --job EVIL")
    # The daemon still serves.
    h.check("fct_daily_sales" in d.status(), "status after the bad inputs")
    d.stop()


def test_unreachable_daemon_is_exit_3():
    d = h.sales_daemon(name="unreach")
    rc, out, err = d.ctl("status", socket_path=os.path.join(d.dir, "nope.sock"))
    h.one_line_error(rc, out, err, 3, "status on a socket nobody serves")
    d.stop()
    rc, out, err = d.ctl("status")
    h.one_line_error(rc, out, err, 3, "status after the daemon stopped")
    rc, out, err = d.ctl("backfill", "fct_daily_sales", "--from", W0, "--to", W1)
    h.one_line_error(rc, out, err, 3, "backfill after the daemon stopped")


def ctl_config(d, conf, *args):
    """backfillctl --config CONF ARGS (no --socket); (rc, stdout, stderr)."""
    p = subprocess.run([d.backfillctl, "--config", conf] + list(args), capture_output=True,
                       text=True, timeout=h.CTL_TIMEOUT, env=d.env(), cwd="/")
    return p.returncode, p.stdout, p.stderr


def test_config_needs_only_its_socket():
    """backfillctl --config FILE reads only FILE's socket: (relative to
    FILE's folder): it reaches the daemon while FILE is one the daemon would
    refuse, or not YAML at all (then with one warning naming the YAML
    error's position); an unreadable FILE or a socket: that is no path is
    exit 2."""
    d = h.sales_daemon(name="ctlconf")
    conf = os.path.join(d.dir, "edited.yaml")
    with open(d.conf) as f:
        good = f.read()
    h.check("socket: backfilld.sock\n" in good, "the config names its socket relatively")
    cases = [
        ("the daemon's own", good, ""),
        ("one the daemon refuses", good + "bogus_key: 1\n", ""),
        ("a job without a command", good + "  - name: broken\n    partition: day\n", ""),
        ("not YAML before socket:", "jobs: [a\n" + good, "invalid YAML"),
    ]
    for what, text, warn in cases:
        with open(conf, "w") as f:
            f.write(text)
        rc, out, err = ctl_config(d, conf, "status", "--json")
        h.eq(rc, 0, "%s: status through --config (stderr %r)" % (what, err))
        h.check("fct_daily_sales" in out, "%s: the daemon answered: %r" % (what, out))
        if warn:
            lines = err.splitlines()
            h.eq(len(lines), 1, "%s: one warning line: %r" % (what, err))
            h.check(re.match(r"backfillctl: warning: %s:\d+:\d+: invalid YAML: .*; read its"
                             r" socket: line alone$" % re.escape(conf), lines[0]),
                    "%s: the warning names the position: %r" % (what, err))
        else:
            h.eq(err, "", "%s: no warning" % what)
    with open(conf, "w") as f:
        f.write("socket: [a, b]\n")
    rc, out, err = ctl_config(d, conf, "status")
    h.one_line_error(rc, out, err, 2, "socket: a sequence")
    h.check("%s:1:9: socket must be a socket path, got a sequence" % conf in err, err)
    rc, out, err = ctl_config(d, os.path.join(d.dir, "missing.yaml"), "status")
    h.one_line_error(rc, out, err, 2, "a missing --config file")
    d.stop()


if __name__ == "__main__":
    h.main([test_bad_cli_input_changes_nothing, test_unreachable_daemon_is_exit_3,
            test_config_needs_only_its_socket])
