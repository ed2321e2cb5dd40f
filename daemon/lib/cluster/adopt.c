/*
 * adopt.c - matching the runs left running with the work in flight at a
 * takeover (adopt.h states the rules).
 */
#include "adopt.h"

#include <string.h>

enum adopt_action
adopt_orphan(enum adopt_work state)
{
	switch (state) {
	case ADOPT_OFFERED:
		return ADOPT_WITHDRAW;
	case ADOPT_CLAIMED:
		return ADOPT_STOP;
	case ADOPT_DONE:
		break;
	}
	return ADOPT_DROP;
}

/* Is key one of row's keys? */
static bool
adopt_has_key(const struct adopt_row *row, const char *key)
{
	for (size_t k = 0; k < row->nkeys; k++)
		if (strcmp(row->keys[k], key) == 0)
			return true;
	return false;
}

void
adopt_match(const struct adopt_run *runs, size_t nruns,
	    const struct adopt_row *rows, size_t nrows, long *owner,
	    enum adopt_action *action)
{
	/* the first runs row of each run: the work row's own id (ADOPT-1) */
	for (size_t i = 0; i < nruns; i++)
		owner[i] = -1;
	for (size_t k = 0; k < nrows; k++) {
		action[k] = adopt_orphan(rows[k].state);
		for (size_t i = 0; i < nruns; i++) {
			if (runs[i].id != rows[k].id ||
			    strcmp(runs[i].job, rows[k].job) != 0 ||
			    !runs[i].job_known)
				continue;
			owner[i] = (long)k;
			action[k] = ADOPT_KEEP;
			break;
		}
	}
	/* the others: by job and key, to a run adopted (ADOPT-1, ADOPT-2) */
	for (size_t i = 0; i < nruns; i++) {
		if (owner[i] >= 0 || !runs[i].job_known)
			continue;
		for (size_t k = 0; k < nrows; k++)
			if (action[k] == ADOPT_KEEP &&
			    strcmp(runs[i].job, rows[k].job) == 0 &&
			    adopt_has_key(&rows[k], runs[i].key)) {
				owner[i] = (long)k;
				break;
			}
	}
}
