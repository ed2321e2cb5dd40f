#!/usr/bin/env python3
"""OpenLineage run events (issue 45; docs/operations.md, "Lineage events
(OpenLineage)") from a PostgreSQL and a ClickHouse warehouse, end to end:
the lesson's backfill of a week of fct_daily_sales with its downstream
marts, the events received by the collector of test_openlineage.py.
Every run one START and one COMPLETE with one runId, each event valid
against the spec's JSON schemas (olschema.py); the tables named as the
OpenLineage naming convention names them: PostgreSQL `postgres://HOST:PORT`
and `DB.SCHEMA.TABLE` (the throwaway cluster is reached through its Unix
socket: `localhost`), ClickHouse `clickhouse://HOST:PORT` and `DB.TABLE`
(the database of the URL's ?database=); the partition's interval as
nominalTime; the downstream runs parented to the request.  The servers are
the throwaway ones of test_postgres.py and test_clickhouse.py (skipped with
77 when one cannot be started)."""
import os

import harness as h
import test_clickhouse as tc
import test_openlineage as tol
import test_postgres as tp

WEEK = ("--from", "2026-02-02", "--to", "2026-02-08")   # Monday .. Sunday


def jobs_of(path):
    with open(os.path.join(h.SOURCE_ROOT, path)) as f:
        text = f.read()
    return text[text.index("jobs:\n") + len("jobs:\n"):]


def lineage_of_backfill(d, c):
    """Backfill the week; the events, checked: {job: [(START, end)...]}."""
    d.ok("backfill", "fct_daily_sales", *WEEK, "--wait")
    runs = [r for r in d.runs() if r["state"] == "succeeded"]
    h.check(len(runs) >= 8, "7 days and their downstream: %r" % runs)
    evs = c.until(lambda e: len(e) >= 2 * len(runs), "%d runs' START and COMPLETE" % len(runs))
    by_run = tol.runs_of(evs)
    h.eq(len(by_run), len(runs), "one runId per run")
    rq = d.runs()[0]["request"]
    out = {}
    for rid, pair in by_run.items():
        h.eq([e["eventType"] for e in pair], ["START", "COMPLETE"], "run %s's events" % rid)
        h.eq(pair[0]["run"]["facets"]["backfilld_partition"]["request"], rq, "the request")
        out.setdefault(pair[0]["job"]["name"], []).append(pair)
    h.eq(len(out["fct_daily_sales"]), 7, "7 days")
    days = sorted(p[1]["run"]["facets"]["nominalTime"]["nominalStartTime"]
                  for p in out["fct_daily_sales"])
    h.eq(days, ["2026-02-%02dT00:00:00.000Z" % n for n in range(2, 9)], "the days' starts")
    for p in out["fct_daily_sales"]:
        h.check("parent" not in p[1]["run"]["facets"], "the request's own job has no parent")
    (wk,) = out["mart_weekly_sales"]
    nt = wk[1]["run"]["facets"]["nominalTime"]
    h.eq((nt["nominalStartTime"], nt["nominalEndTime"]),
         ("2026-02-02T00:00:00.000Z", "2026-02-09T00:00:00.000Z"), "the week's instants")
    parent = wk[1]["run"]["facets"]["parent"]
    h.eq(parent["job"], {"namespace": "etl-test", "name": "fct_daily_sales"},
         "the week parented to the request's job")
    h.check(parent["run"]["runId"] not in by_run, "the parent is the request, no run: %r" % parent)
    h.eq(wk[0]["run"]["facets"]["parent"], parent, "START and COMPLETE name the one parent")
    return out


def test_postgres():
    c = tp.cluster()
    c.fresh_db()
    col = tol.Collector()
    d = tp.pg_daemon(jobs_of("config/postgres/example-postgres.yaml"), tp.pg_warehouse("sales"),
                     {"max_concurrency": 4,
                      "openlineage": "{url: %s, namespace: etl-test}" % col.url}, name="olpg")
    out = lineage_of_backfill(d, col)
    ns = "postgres://localhost:%d" % tp.PORT
    day = out["fct_daily_sales"][0][1]
    h.eq(day["inputs"], [{"namespace": ns, "name": "etl.public.raw_sales"}], "the day's inputs")
    h.eq(day["outputs"], [{"namespace": ns, "name": "etl.public.fct_daily_sales"}],
         "the day's outputs")
    wk = out["mart_weekly_sales"][0][1]
    h.eq(wk["inputs"], [{"namespace": ns, "name": "etl.public.fct_daily_sales"}],
         "the week's inputs")
    h.eq(wk["outputs"], [{"namespace": ns, "name": "etl.public.mart_weekly_sales"}],
         "the week's outputs")
    d.stop()
    col.close()


def test_clickhouse():
    db = tc.fresh_db()
    col = tol.Collector()
    conf = tc.ch_config(db, tc.example_jobs(),
                        settings="openlineage: {url: %s, namespace: etl-test}" % col.url)
    d = h.Daemon(config=conf, name="olch")
    out = lineage_of_backfill(d, col)
    ns = "clickhouse://127.0.0.1:%d" % tc.SRV.http
    day = out["fct_daily_sales"][0][1]
    h.eq(day["inputs"], [{"namespace": ns, "name": "%s.raw_sales" % db}], "the day's inputs")
    h.eq(day["outputs"], [{"namespace": ns, "name": "%s.fct_daily_sales" % db}],
         "the day's outputs")
    wk = out["mart_weekly_sales"][0][1]
    h.eq(wk["inputs"], [{"namespace": ns, "name": "%s.fct_daily_sales" % db}],
         "the week's inputs")
    h.eq(wk["outputs"], [{"namespace": ns, "name": "%s.mart_weekly_sales" % db}],
         "the week's outputs")
    d.stop()
    col.close()


def main():
    h.binaries()
    try:
        tc.SRV = tc.Server()
        tp.cluster()
        h.main([test_postgres, test_clickhouse])
    finally:
        if tp.CLUSTER is not None:
            tp.CLUSTER.close()
        if tc.SRV is not None:
            tc.SRV.close()


if __name__ == "__main__":
    main()
