/*
 * lineage.c - the one downstream rule (see lineage.h).
 */
#include "lineage.h"

bool
lineage_feeds(const struct config *cfg, int up, int down)
{
	return lineage_lookback(cfg, up, down) >= 0;
}

int
lineage_lookback(const struct config *cfg, int up, int down)
{
	const struct job_def *dj = &cfg->jobs[down];

	if (up == down)
		return dj->self_lookback > 0 ? dj->self_lookback : -1;
	for (size_t u = 0; u < dj->nupstream; u++)
		if (dj->upstream_idx[u] == up)
			return job_lookback(dj, u);
	return -1;
}

struct part_range
lineage_range(const struct config *cfg, int up, part_t p, int down)
{
	const struct job_def *dj = &cfg->jobs[down];
	struct part_range r = { 0, -1 };
	int lookback = lineage_lookback(cfg, up, down);

	if (lookback < 0)
		return r;
	if (up == down) {
		/* a job in its own upstream: P reads P-N..P-1, never P */
		r.first = p + 1;
		r.last = p + lookback;
	} else {
		r = cal_window_readers(job_cal(&cfg->jobs[up]), p, job_cal(dj),
				       lookback);
	}
	/* a partition outside down's start..end does not exist */
	if (dj->has_start && r.first < dj->start)
		r.first = dj->start;
	if (dj->has_end && r.last > dj->end)
		r.last = dj->end;
	return r;
}
