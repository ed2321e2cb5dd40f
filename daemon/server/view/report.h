/*
 * report.h - the report page (docs/commands.md, "The report page"): one
 * self-contained HTML file (inline CSS, no external asset, no script)
 * with each job's partition map (cells carrying data-job, data-partition
 * and data-state, as `map --json` would state them), the requests in
 * memory with their progress, the audit of the newest requests (from the
 * store: kind, reason, times, how their partitions ended), the newest
 * failures with their errors, and the late and stale partitions.
 *
 * Written by `backfillctl report --html FILE` (the daemon renders, the
 * client writes) and, with report_file, by the daemon beside the metrics
 * file: at start, every 15 s and at shutdown, through a temporary file
 * renamed in the same folder.
 */
#ifndef BACKFILLD_REPORT_H
#define BACKFILLD_REPORT_H

#include "err.h"
#include "buf.h"
#include "calendar.h"
#include "config.h"
#include "scheduler.h"

#define REPORT_MAP_MAX 3660   /* partitions drawn on a job's page */
#define REPORT_PAGE_JOBS 20   /* jobs on a page of jobs */
#define REPORT_FAILURES 50    /* newest failed runs listed */
#define REPORT_RECENT 20      /* newest requests in the audit */
#define REPORT_ROWS 100       /* rows of the requests, late, stale and
				 warehouses tables */
#define REPORT_INPUTS 10      /* newer inputs named per stale partition */
#define REPORT_TEXT_MAX 512   /* bytes of an error, reason or name shown */
#define REPORT_PAGE_MAX (2 * 1024 * 1024) /* bytes of a page, at most */

/*
 * What a page shows (the query of /report, docs/http.md):
 *  - job "" : a page of jobs, REPORT_PAGE_JOBS of them (page, from 1, in
 *    the order of the configuration): their rows of the jobs table and
 *    each one's map over its newest partitions (a week of hours, 13
 *    weeks of days, 53 weeks, 36 months), with the warehouses, the
 *    requests, the audit, failures, warnings, late and stale partitions
 *    of every job (each table bounded);
 *  - job NAME: that job alone: its row, its map from..to (or the newest
 *    REPORT_MAP_MAX of its default range, or up to to), at most
 *    REPORT_MAP_MAX partitions with links to the older and newer ones,
 *    and its requests, failures, warnings, late and stale partitions.
 * links: served over HTTP, so links to the other pages are drawn (a
 * file says where they are instead).  Every part is bounded, so a page
 * stays below REPORT_PAGE_MAX whatever the number of jobs or runs.
 */
struct report_query {
	char job[65];           /* a job name: at most 64 bytes */
	char from[CAL_KEY_MAX], to[CAL_KEY_MAX];
	int64_t page;
	bool links;
};

/* The first page of jobs, without links (report_file, backfillctl
 * report). */
void report_query_init(struct report_query *q);
/* The query of /report ("job=a&from=2026-01-01"): 0, or -1 with err (a
 * parameter it does not take, an unknown job, a bad key, a page that is
 * not a number from 1), one line saying what is wrong. */
int report_query_parse(const struct config *cfg, const char *query,
		       struct report_query *q, struct err *err);
/* The page q asks for: 0, or -1 with err (no such job, a page beyond the
 * last). */
int report_render_query(struct sched *s, const struct report_query *q,
			struct buf *out, struct err *err);
/* The first page of jobs. */
void report_render(struct sched *s, struct buf *out);
/* Write the first page of jobs to path (tmp + rename); -1 with err. */
int report_write(struct sched *s, const char *path, struct err *err);

#endif
