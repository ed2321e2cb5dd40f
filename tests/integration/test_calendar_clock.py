#!/usr/bin/env python3
"""The schedule in a job's own zone (issue 42; docs/configuration.md,
timezone): a Berlin daily job is due at Berlin midnight, 22:00Z in
summer and 23:00Z in winter, not at UTC midnight; its catchup counts
Berlin days; a command gets the local bounds and the UTC ones.

Time is the suite's test clock file (harness set_clock; test_schedule's
tick() waits until the daemon has acted on it), so no libfaketime is
needed."""
import harness as h
import test_schedule as ts

RAN_UTC = ('["sh", "-c", "echo {partition} {partition_start} {partition_end}'
           ' {partition_start_utc}/{partition_end_utc} >> {dir}/ran.txt"]')


def berlin_job(start):
    return ("- name: berlin\n  partition: day\n  timezone: Europe/Berlin\n"
            "  start: %s\n  catchup: true\n  max_catchup: 14\n  concurrency: 1\n"
            "  retries: 0\n  command: %s\n" % (start, RAN_UTC))


def ran(d):
    try:
        with open(d.dir + "/ran.txt") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def due_at_berlin_midnight(name, start, clock, before, at, day, due, bounds):
    d = ts.sched_daemon(berlin_job(start), clock, name)
    caught = [r for r in ts.new_requests(d) if r[1] == "berlin"]
    h.eq(caught, [("catchup", "berlin", h.days(start, ts.sub_days(day, 1)))],
         "the Berlin days closed at %s, caught up" % clock)
    h.eq(ts.job_status(d, "berlin")["next_due"], due, "next due: Berlin midnight")
    ts.tick(d, before)                  # UTC's own day has long closed... not Berlin's
    h.eq([r for r in ts.new_requests(d) if r[1] == "berlin"], [],
         "requests at %s, before Berlin midnight" % before)
    ts.tick(d, at)
    h.eq([r for r in ts.new_requests(d) if r[1] == "berlin"],
         [("schedule", "berlin", [day])], "requests at %s, Berlin midnight" % at)
    h.eq(ran(d)[-1], bounds, "the command's local and UTC bounds")
    d.stop()


def test_due_at_berlin_midnight_summer():
    """CEST: 2024-07-14 closes at 2024-07-14T22:00Z."""
    due_at_berlin_midnight("calsummer", "2024-07-12", "2024-07-14T20:30:00Z",
                           "2024-07-14T21:59:00Z", "2024-07-14T22:00:00Z", "2024-07-14",
                           "2024-07-14T22:00:00.000Z",
                           "2024-07-14 2024-07-14 2024-07-15 "
                           "2024-07-13 22:00:00/2024-07-14 22:00:00")


def test_due_at_berlin_midnight_winter():
    """CET: 2024-01-14 closes at 2024-01-14T23:00Z (at 22:30Z it is not due)."""
    due_at_berlin_midnight("calwinter", "2024-01-12", "2024-01-14T21:30:00Z",
                           "2024-01-14T22:30:00Z", "2024-01-14T23:00:00Z", "2024-01-14",
                           "2024-01-14T23:00:00.000Z",
                           "2024-01-14 2024-01-14 2024-01-15 "
                           "2024-01-13 23:00:00/2024-01-14 23:00:00")


def test_skipped_day_not_materialised():
    """Pacific/Apia skipped 2011-12-30 (from -10:00 to +14:00): its catchup
    over the change builds the days that happened, and no empty one."""
    clock = "2012-01-01T12:00:00Z"   # Apia's 2012-01-01 closed at 10:00Z
    job = berlin_job("2011-12-28").replace("Europe/Berlin", "Pacific/Apia")
    d = ts.sched_daemon(job, clock, "calapia")
    h.eq([r for r in ts.new_requests(d) if r[1] == "berlin"],
         [("catchup", "berlin", ["2011-12-28", "2011-12-29", "2011-12-31", "2012-01-01"])],
         "Apia's days across the day it skipped")
    h.eq(ran(d)[2], "2011-12-31 2011-12-31 2012-01-01 "
         "2011-12-30 10:00:00/2011-12-31 10:00:00", "the first day after the change")
    d.stop()


if __name__ == "__main__":
    h.main([test_due_at_berlin_midnight_summer, test_due_at_berlin_midnight_winter,
            test_skipped_day_not_materialised])
