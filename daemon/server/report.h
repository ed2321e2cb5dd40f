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
#include "scheduler.h"

#define REPORT_MAP_MAX 3660   /* newest partitions drawn per job */
#define REPORT_FAILURES 50    /* newest failed runs listed */
#define REPORT_RECENT 20      /* newest requests in the audit */

/* The page. */
void report_render(struct sched *s, struct buf *out);
/* Write the page to path (tmp + rename); -1 with err. */
int report_write(struct sched *s, const char *path, struct err *err);

#endif
