#!/usr/bin/env python3
"""The alerting rules of the package (issue 45; docs/operations.md,
"Alerting rules"): config/prometheus/backfilld.rules.yml, installed as
/usr/share/backfilld/prometheus/backfilld.rules.yml.

  - `promtool check rules` on the shipped file, `promtool test rules` on
    tests/prometheus/backfilld.rules.test.yml (each alert, its `for:`,
    the labels with and without honor_labels);
  - real daemons driven into each condition, scraped on GET /metrics
    (http_listen) the way Prometheus does (honor_labels: true: the
    sample's labels, `instance`, `job` where the sample has none, and
    `up`, 1 when the scrape answered, else 0), the scrapes turned into
    promtool input series (a minute apart), and promtool asserting which
    alerts fire, with which labels and summaries, and that no other does:
      * a failed partition (retries 0): BackfilldPartitionsFailed;
      * a job paused past its deadline: BackfilldPartitionsLate;
      * a gap above max_catchup: BackfilldCatchupRefused;
      * the daemon stopped: BackfilldNodeDown;
      * a backfill stopped over its budget (the run's measured warehouse
        time made 2 h by the test clock, test_budget.py's way):
        BackfilldBudgetStop;
      * the state store's filesystem full: BackfilldStateStoreNotWritable;
      * an hourly job with no success past an hour and its deadline:
        BackfilldNoSuccess;
      * a daemon that ran a backfill and nothing went wrong: no alert.

Exit 77 (skipped) when promtool is not installed (Debian: prometheus),
unless BACKFILLD_REQUIRE_PROMTOOL=1 (CI), which makes that a failure."""
import json
import os
import re
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request

import harness as h
import test_budget as tb
import test_metrics as tm
import test_schedule as ts

SRC = os.environ.get("SOURCE_ROOT",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RULES = os.path.join(SRC, "config", "prometheus", "backfilld.rules.yml")
UNIT = os.path.join(SRC, "tests", "prometheus", "backfilld.rules.test.yml")
ALERTS = ("BackfilldPartitionsLate", "BackfilldPartitionsFailed", "BackfilldCatchupRefused",
          "BackfilldBudgetStop", "BackfilldNodeDown", "BackfilldStateStoreNotWritable",
          "BackfilldNoSuccess")

# The summaries, as the rules render them (the static unit test holds the
# same text): each names the backfillctl command that looks further.
SUMMARY = {
    "BackfilldPartitionsLate": "backfilld job {job}: {value} partition(s) past its deadline;"
                               " look further with backfillctl status {job}",
    "BackfilldPartitionsFailed": "backfilld job {job}: {value} partition(s) failed and not"
                                 " retried for 30m; look further with backfillctl runs"
                                 " --job {job} --state failed",
    "BackfilldCatchupRefused": "backfilld job {job}: catchup refused, a gap above max_catchup;"
                               " look further with backfillctl status {job}",
    "BackfilldBudgetStop": "backfilld job {job}: a backfill request was stopped over its budget"
                           " in the last hour; look further with backfillctl status {job}",
    "BackfilldNodeDown": "backfilld on {instance} does not answer its scrape; look further"
                         " with backfillctl status on another node (its nodes and their"
                         " last_seen)",
    "BackfilldStateStoreNotWritable": "backfilld on {instance}: the state store cannot be"
                                      " written, no run starts; look further with"
                                      " backfillctl status",
    "BackfilldNoSuccess": "backfilld job {job}: no run succeeded for longer than a partition"
                          " and its deadline; look further with backfillctl runs --job {job}",
}
SEVERITY = {"BackfilldPartitionsLate": "critical", "BackfilldPartitionsFailed": "warning",
            "BackfilldCatchupRefused": "warning", "BackfilldBudgetStop": "warning",
            "BackfilldNodeDown": "critical", "BackfilldStateStoreNotWritable": "critical",
            "BackfilldNoSuccess": "warning"}


free_port = h.free_port


def descriptions():
    """{alert: description} from the shipped file (a YAML single-quoted
    string on one line: '' is a quote)."""
    with open(RULES) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"- alert: (\w+)\n(?:.*\n)*?\s+description: '((?:[^']|'')*)'\n", text):
        out[m.group(1)] = m.group(2).replace("''", "'")
    h.eq(sorted(out), sorted(ALERTS), "the alerts of %s" % RULES)
    return out


def promtool_run(tool, *args):
    p = subprocess.run([tool] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


class Scraper:
    """Scrapes of one daemon's GET /metrics, each standing for `n` minutes."""

    def __init__(self, port, epoch=0):
        self.port = port
        # the daemon's clock at minute 0 of the scrapes: its
        # *_timestamp_seconds are shifted by it onto promtool's time,
        # whose minute 0 is the Unix epoch (time() in the rules)
        self.epoch = epoch
        self.instance = "127.0.0.1:%d" % port
        self.scrapes = []     # [(samples or None, n)]

    def scrape(self, n):
        try:
            with urllib.request.urlopen("http://%s/metrics" % self.instance, timeout=5) as r:
                got = tm.samples(r.read().decode())
        except (urllib.error.URLError, ConnectionError, OSError):
            got = None
        self.scrapes.append((got, n))
        return got

    def minutes(self):
        return sum(n for _, n in self.scrapes)

    def series(self):
        """promtool input_series: every series scraped, `_` where a scrape
        lacked it (the daemon down), and `up`."""
        keys = set()
        for got, _ in self.scrapes:
            keys |= set(got or {})
        out = []
        for name, labels in sorted(keys, key=lambda k: (k[0], sorted(k[1]))):
            lab = dict(labels)
            lab["instance"] = self.instance
            lab.setdefault("job", "backfilld")
            vals = []
            for got, n in self.scrapes:
                v = (got or {}).get((name, labels))
                if v is not None and name.endswith("_timestamp_seconds"):
                    v -= self.epoch
                vals += ["_" if v is None else "%.17g" % v] * n
            text = ",".join('%s="%s"' % (k, lab[k]) for k in sorted(lab))
            out.append({"series": "%s{%s}" % (name, text), "values": " ".join(vals)})
        up = []
        for got, n in self.scrapes:
            up += ["0" if got is None else "1"] * n
        out.append({"series": 'up{instance="%s",job="backfilld"}' % self.instance,
                    "values": " ".join(up)})
        return out


def expect(alert, instance, job=None, value=None, **labels):
    """One exp_alerts item."""
    lab = {"severity": SEVERITY[alert], "instance": instance}
    lab["job"] = job if job is not None else "backfilld"
    lab.update(labels)
    summary = SUMMARY[alert].format(job=job, value=value, instance=instance)
    return {"exp_labels": lab,
            "exp_annotations": {"summary": summary, "description": DESCRIPTION[alert]}}


def assert_alerts(tool, scraper, at, want, what):
    """promtool: at minute `at` of the scrapes' series, each alert of
    ALERTS fires exactly as want[alert] (a list of exp_alerts; none
    where absent)."""
    test = {"rule_files": [RULES], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": scraper.series(),
                       "alert_rule_test": [
                           {"eval_time": "%dm" % at, "alertname": a,
                            "exp_alerts": want.get(a, [])} for a in ALERTS]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="alerts-",
                                     delete=False) as f:
        json.dump(test, f, indent=1)
    try:
        rc, out = promtool_run(tool, "test", "rules", f.name)
    finally:
        os.unlink(f.name)
    h.check(rc == 0, "%s: promtool test rules, exit %d:\n%s" % (what, rc, out))


# ---------------------------------------------------------------- tests

def test_shipped_file():
    tool = tm.promtool()
    rc, out = promtool_run(tool, "check", "rules", RULES)
    h.check(rc == 0 and "SUCCESS: 7 rules found" in out,
            "promtool check rules, exit %d:\n%s" % (rc, out))
    rc, out = promtool_run(tool, "test", "rules", UNIT)
    h.check(rc == 0, "promtool test rules %s, exit %d:\n%s" % (UNIT, rc, out))


JOBS = (ts.cmd_job("fine", "day", "2026-03-03", "deadline: 6h")
        + "- name: broken\n  partition: day\n  start: 2026-03-03\n  retries: 0\n"
          "  command: [\"sh\", \"-c\", \"echo broken >&2; exit 3\"]\n"
        + "- name: slow\n  partition: day\n  start: 2026-03-03\n  deadline: 1h\n"
          "  command: [\"sh\", \"-c\", \"until [ -e {dir}/go ]; do sleep 0.05; done\"]\n"
        + ts.cmd_job("gappy", "day", "2026-01-01", "max_catchup: 5"))


def test_failed_late_refused_down():
    """One daemon at 2026-03-03T23:30 (nothing due yet; gappy's 61 days
    since its start already refused); the clock moves to 04T01:30:
    fine's 03-03 succeeds, broken's fails, slow's runs until the test
    lets it end (the file `go`), past its deadline of 1 h (due at
    04T00:00); then the daemon stops."""
    tool = tm.promtool()
    port = free_port()
    d = ts.sched_daemon(JOBS, "2026-03-03T23:30:00Z", "alerts",
                        settings={"max_concurrency": 4, "http_listen": port})
    ts.tick(d, "2026-03-04T01:30:00Z")
    for r in d.runs(include_boot=True):
        if r["job"] != "slow":
            d.wait_request(r["request"])
    tb.until(lambda: d.status("slow")["slow"]["late"] == 1, "slow's partition late")
    st = d.status()
    h.eq((st["fine"]["late"], st["fine"]["failed"], st["broken"]["failed"], st["slow"]["late"],
          st["gappy"]["catchup"]), (0, 0, 1, 1, "refused"), "the state the test drove to")

    s = Scraper(port)
    h.check(s.scrape(60) is not None, "GET /metrics on %s" % s.instance)
    open(os.path.join(d.dir, "go"), "w").close()
    for r in d.runs():
        d.wait_request(r["request"])
    d.stop()
    h.check(s.scrape(10) is None, "GET /metrics answered after the stop")
    i = s.instance
    # 59 minutes in: each condition's alert, past its `for:`, on its job
    # alone; the daemon answers
    assert_alerts(tool, s, 59, {
        "BackfilldPartitionsFailed": [expect("BackfilldPartitionsFailed", i, "broken", 1,
                                             state="failed")],
        "BackfilldPartitionsLate": [expect("BackfilldPartitionsLate", i, "slow", 1,
                                           state="late")],
        "BackfilldCatchupRefused": [expect("BackfilldCatchupRefused", i, "gappy")],
    }, "the daemon with a failed, a late partition and a refused catchup")
    # 9 minutes after the stop: the node is down (and its series gone)
    assert_alerts(tool, s, 69, {"BackfilldNodeDown": [expect("BackfilldNodeDown", i)]},
                  "the daemon stopped")


def test_budget_stop_and_healthy():
    """A daemon that ran a backfill (no failure, nothing late): no alert
    for an hour of its scrapes; then a request with --budget 1h whose
    first run measures 2 h is stopped: BackfilldBudgetStop on its job,
    and nothing else."""
    tool = tm.promtool()
    port = free_port()
    w = tb.SqliteWh()
    d = w.daemon("alerts-budget", settings={"max_concurrency": 4, "http_listen": port})
    rc, out, err = d.ctl("backfill", "fct", "--from", "2025-02-01", "--to", "2025-02-03",
                         "--wait")
    h.eq(rc, 0, "a backfill within its budget (%r %r)" % (out, err))
    s = Scraper(port)
    h.check(s.scrape(60) is not None, "GET /metrics on %s" % s.instance)
    assert_alerts(tool, s, 59, {}, "a healthy daemon")

    rq = tb.slow_run(w, tb.T0, 2, ("backfill", "fct", "--from", "2025-03-01", "--to",
                                   "2025-03-03", "--budget", "1h"))
    h.eq(len(d.json("status")["over_budget"]), 1, "the request %d stopped over budget" % rq)
    h.check(s.scrape(30) is not None, "GET /metrics after the stop")
    assert_alerts(tool, s, 60, {
        "BackfilldBudgetStop": [expect("BackfilldBudgetStop", s.instance, "fct")]},
        "the request stopped over its budget")


def test_no_success():
    """An hourly job with a deadline of 1h succeeds once (its last success
    the test clock's 2026-03-04T01:00), then nothing succeeds: promtool
    time 0 is that instant; BackfilldNoSuccess fires past an hour and its
    deadline (after 120 minutes) on that job alone, not before."""
    tool = tm.promtool()
    port = free_port()
    d = ts.sched_daemon(ts.cmd_job("hourly", "hour", "2026-03-04T00", "deadline: 1h"),
                        "2026-03-04T00:30:00Z", "alerts-success",
                        settings={"max_concurrency": 4, "http_listen": port})
    ts.tick(d, "2026-03-04T01:00:00Z")
    for r in d.runs(include_boot=True):
        d.wait_request(r["request"])
    d.ok("pause", "hourly")
    s = Scraper(port, epoch=int(ts.parse_clock("2026-03-04T01:00:00Z").timestamp()))
    got = s.scrape(130)
    h.check(got is not None, "GET /metrics on %s" % s.instance)
    h.eq(got.get(("backfilld_last_success_timestamp_seconds",
                  frozenset({("job", "hourly")}))), s.epoch, "hourly's last success")
    d.stop()
    assert_alerts(tool, s, 119, {}, "an hour and its deadline not yet passed")
    assert_alerts(tool, s, 125, {
        "BackfilldNoSuccess": [expect("BackfilldNoSuccess", s.instance, "hourly")]},
        "no success for more than an hour and its deadline")


def test_store_not_writable():
    """The state store's filesystem fills up (a tmpfs: root only, else
    skipped): backfilld_state_store_writable is 0 and
    BackfilldStateStoreNotWritable fires after its minute."""
    h.sqlite_state_only("the state store's filesystem fills up")
    from test_full_store import mount_tmpfs, fill
    tool = tm.promtool()
    port = free_port()
    config = ("state_db: {dir}/st/state.db\nsocket: backfilld.sock\n"
              "http_listen: 127.0.0.1:%d\nmax_backfill: 100000\n"
              "warehouses:\n  - {name: wh, sqlite: wh.db}\n"
              "jobs:\n  - name: h\n    warehouse: wh\n    partition: hour\n"
              "    sql: INSERT OR REPLACE INTO t (k, pad) VALUES (:partition, zeroblob(100))\n"
              % port)
    d = h.Daemon(config=config, warehouses={"wh": "CREATE TABLE t (k TEXT PRIMARY KEY, pad BLOB);"},
                 name="alerts-store", env={"BACKFILLD_TEST_STORE_RETRY_MS": "60000"},
                 start=False)
    st_dir = os.path.join(d.dir, "st")
    ok, why = mount_tmpfs(st_dir, "40M")
    if not ok:
        print("SKIP part: cannot mount a tmpfs (%s); run as root" % why)
        d.close()
        return
    d.state_db = os.path.join(st_dir, "state.db")
    try:
        d.start()
        s = Scraper(port)
        h.eq(s.scrape(10)[("backfilld_state_store_writable", frozenset())], 1,
             "the store writable at first")
        d.enqueue("backfill", "h", "--from", "2026-01-01", "--to", "2026-03-01")
        fill(st_dir)
        tb.until(lambda: tm.samples(urllib.request.urlopen(
            "http://%s/metrics" % s.instance, timeout=5).read().decode()).get(
                ("backfilld_state_store_writable", frozenset())) == 0,
            "backfilld_state_store_writable 0")
        h.check(s.scrape(10) is not None, "GET /metrics with the store full")
        assert_alerts(tool, s, 10, {}, "the store just failed")
        assert_alerts(tool, s, 12, {"BackfilldStateStoreNotWritable": [
            expect("BackfilldStateStoreNotWritable", s.instance)]}, "the store not writable")
        os.unlink(os.path.join(st_dir, "filler"))
        d.stop()
    finally:
        if d.alive():
            d.kill9()
        subprocess.run(["umount", "-l", st_dir], capture_output=True)


DESCRIPTION = {}

if __name__ == "__main__":
    tm.promtool()   # exit 77 without it (1 under BACKFILLD_REQUIRE_PROMTOOL=1)
    DESCRIPTION.update(descriptions())
    h.main([test_shipped_file, test_failed_late_refused_down, test_budget_stop_and_healthy,
            test_no_success, test_store_not_writable])
