/*
 * lineage.c - the one downstream rule (see lineage.h).
 */
#include "lineage.h"

bool
lineage_feeds(const struct config *cfg, int up, int down)
{
	const struct job_def *dj = &cfg->jobs[down];

	for (size_t u = 0; u < dj->nupstream; u++)
		if (dj->upstream_idx[u] == up)
			return true;
	return false;
}

int
lineage_map(const struct config *cfg, int up, part_t p, int down,
	    part_t out[2])
{
	const struct job_def *dj = &cfg->jobs[down];
	part_t all[2];
	int n, k = 0;

	if (!lineage_feeds(cfg, up, down))
		return 0;
	n = part_map(cfg->jobs[up].grain, p, dj->grain, all);
	for (int i = 0; i < n; i++) {
		/* a partition outside down's start..end does not exist */
		if ((dj->has_start && all[i] < dj->start) ||
		    (dj->has_end && all[i] > dj->end))
			continue;
		out[k++] = all[i];
	}
	return k;
}
