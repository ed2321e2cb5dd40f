/*
 * runresult.h - how a run ended on another node, as the one line a worker
 * records and the planner reads back (docs/several-hosts.md): fields
 * "key=value" separated by spaces; unknown keys are skipped, so a newer
 * worker's line reads on an older planner.
 */
#ifndef BACKFILLD_RUNRESULT_H
#define BACKFILLD_RUNRESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct runresult {
	bool timed_out;
	bool not_started;     /* nothing ran: queued again, not counted */
	int64_t rows_changed; /* -1: not known (a command) */
	/* an earlier attempt had committed it: nothing ran (wh_commits.h);
	 * written only when set */
	bool committed_before;
};

#define RUNRESULT_MAX 96

/* Write r as one line into buf (RUNRESULT_MAX bytes). */
void runresult_format(const struct runresult *r, char *buf, size_t len);
/* Read a line; NULL or a malformed field leaves the defaults (not timed
 * out, started, rows_changed -1, not committed before).  Returns 0, or -1
 * when a field was malformed. */
int runresult_parse(const char *line, struct runresult *r);

#endif
