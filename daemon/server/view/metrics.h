/*
 * metrics.h - the metrics file (docs/operations.md, "Metrics"): the
 * Prometheus text format for node_exporter's textfile collector.
 *
 * With metrics_file set, the daemon writes the file at start, at most
 * every METRICS_EVERY_MS while it runs, and at shutdown: to a temporary
 * file in the same folder, renamed over the file, so the collector never
 * reads half of it.  Counters and histograms count from the daemon's
 * start (Prometheus handles the reset); gauges come from the scheduler's
 * memory (sched_job_view), never from reading the history.  No partition
 * key is ever a label: labels are job, state, hook, result and version.
 * The report page (report_file, report.h) is written on the same beat.
 */
#ifndef BACKFILLD_METRICS_H
#define BACKFILLD_METRICS_H

#include <uv.h>

#include "err.h"
#include "hooks.h"
#include "buf.h"
#include "scheduler.h"

#define METRICS_EVERY_MS 15000

struct metrics;

/* Start the timer (the file is written only while the configuration names
 * one: reloads may set or clear it). */
struct metrics *metrics_new(uv_loop_t *loop, struct sched *s,
			    struct hooks *h);
/* A run ended (sched_on_run's callback; data is the struct metrics). */
void metrics_run_cb(void *data, const struct sched_run_event *ev);
/* The text of the file now. */
void metrics_render(struct metrics *m, struct buf *out);
/* Write the file now (tmp + rename); -1 and err when it cannot. */
int metrics_write(struct metrics *m, struct err *err);
/* Write once more, stop the timer and free after the loop closes it. */
/* Start the run events of openlineage: (olsend.h, olrun.h), when
 * configured, counted in backfilld_lineage_events_total: -1 with err when
 * its transport cannot start. */
int metrics_lineage_open(struct metrics *m, struct err *err);
void metrics_close(struct metrics *m);

#endif
