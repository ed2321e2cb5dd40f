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
          "BackfilldBudgetStop", "BackfilldNodeDown")

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
}
SEVERITY = {"BackfilldPartitionsLate": "critical", "BackfilldPartitionsFailed": "warning",
            "BackfilldCatchupRefused": "warning", "BackfilldBudgetStop": "warning",
            "BackfilldNodeDown": "critical"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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

    def __init__(self, port):
        self.port = port
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
    h.check(rc == 0 and "SUCCESS: 5 rules found" in out,
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


DESCRIPTION = {}

if __name__ == "__main__":
    tm.promtool()   # exit 77 without it (1 under BACKFILLD_REQUIRE_PROMTOOL=1)
    DESCRIPTION.update(descriptions())
    h.main([test_shipped_file, test_failed_late_refused_down, test_budget_stop_and_healthy])
