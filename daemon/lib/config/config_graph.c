/*
 * config_graph.c - the upstream graph, once every job is read: upstream
 * names resolved (with a suggestion), grains that can feed each other,
 * cycles (the path named), then the downstream lists and the topological
 * order.
 */
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"
#include "xalloc.h"

/* The node of job j's upstream entry i (an index into upstream[] once
 * the entry naming the job itself was taken out: the ones after it were
 * one further in the file). */
static yaml_node_t *
cfg_upstream_node(struct cfg_parser *p, size_t j, size_t i)
{
	const struct job_def *jd = &p->cfg->jobs[j];

	if (jd->self_lookback > 0 && i >= jd->self_entry)
		i++;
	cfg_use(p, p->job_src[j]);
	return cfg_seq_item(p, cfg_map_get(p, p->job_nodes[j], "upstream"), i);
}

/* Depth-first search for an upstream cycle from job u; path holds the
 * jobs on the stack. */
static int
cfg_find_cycle(struct cfg_parser *p, size_t u, char *state, size_t *path,
	       size_t depth)
{
	const struct config *cfg = p->cfg;
	const struct job_def *j = &cfg->jobs[u];
	size_t i, d;

	state[u] = 1;
	path[depth] = u;
	for (i = 0; i < j->nupstream; i++) {
		size_t v = (size_t)j->upstream_idx[i];

		if (state[v] == 1) {
			char buf[ERR_MSG_MAX / 2];
			size_t o = 0;

			for (d = 0; d <= depth && path[d] != v; d++)
				;
			for (; d <= depth && o < sizeof buf; d++)
				o += (size_t)snprintf(buf + o, sizeof buf - o,
						      "%s -> ",
						      cfg->jobs[path[d]].name);
			if (o < sizeof buf)
				snprintf(buf + o, sizeof buf - o, "%s",
					 cfg->jobs[v].name);
			return cfg_fail(p, cfg_upstream_node(p, u, i)->start_mark,
					"upstream cycle %s (each job lists the next in upstream); remove one of these entries",
					buf);
		}
		if (state[v] == 0 &&
		    cfg_find_cycle(p, v, state, path, depth + 1) < 0)
			return -1;
	}
	state[u] = 2;
	return 0;
}

/* partition: none (a whole table) feeds only whole tables, and reads every
 * partition of its upstream already: no lookback. */
static int
cfg_link_whole(struct cfg_parser *p, size_t a, size_t i, int u)
{
	const struct job_def *j = &p->cfg->jobs[a];
	const struct job_def *up = &p->cfg->jobs[u];

	if (up->grain == GRAIN_NONE && j->grain != GRAIN_NONE)
		return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
				"job \"%s\": upstream \"%s\" has partition:"
				" none (one whole table) and feeds only jobs with"
				" partition: none; remove the entry or make \"%s\""
				" partition: none", j->name, up->name, j->name);
	if (j->grain == GRAIN_NONE && job_lookback(j, i) > 0)
		return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
				"job \"%s\" has partition: none: it reads every"
				" partition of \"%s\" already; remove lookback",
				j->name, up->name);
	return 0;
}

/*
 * A job in its own upstream (DESIGN, "A job in its own upstream"): a
 * running total, whose partition P reads its partitions P-N..P-1.  N of 0
 * would read P itself, a cycle; a whole table has no earlier partition.
 */
static int
cfg_link_self(struct cfg_parser *p, size_t a, size_t i, int *self_lb)
{
	struct job_def *j = &p->cfg->jobs[a];
	int lb = job_lookback(j, i);

	if (*self_lb > 0)
		return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
				"job \"%s\" lists itself in upstream twice;"
				" keep one", j->name);
	if (j->grain == GRAIN_NONE)
		return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
				"job \"%s\" has partition: none: it has no"
				" earlier partition to read; remove the entry"
				" naming itself", j->name);
	if (lb < 1)
		return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
				"job \"%s\" lists itself in upstream without a"
				" lookback: a partition cannot wait for itself;"
				" write {job: %s, lookback: 1} (a running total"
				" reading its previous partition), or remove the"
				" entry", j->name, j->name);
	*self_lb = lb;
	j->self_entry = i;
	return 0;
}

/* Take the entry naming the job itself out of upstream[] (its lookback
 * kept in self_lookback), so the graph's walks see no loop. */
static void
cfg_unlink_self(struct job_def *j)
{
	size_t k = j->self_entry;

	free(j->upstream[k]);
	for (size_t m = k; m + 1 < j->nupstream; m++) {
		j->upstream[m] = j->upstream[m + 1];
		j->upstream_idx[m] = j->upstream_idx[m + 1];
		if (j->upstream_lookback != NULL)
			j->upstream_lookback[m] = j->upstream_lookback[m + 1];
	}
	j->nupstream--;
}

/* Resolve job a's upstream names (suggesting the closest job name for an
 * unknown one), each once, each of a grain that can feed a's. */
static int
cfg_link_upstream(struct cfg_parser *p, size_t a)
{
	struct config *cfg = p->cfg;
	struct job_def *j = &cfg->jobs[a];
	char q[CFG_QUOTE_MAX * 4 + 16];
	size_t b, i, m;
	int self_lb = 0;

	j->upstream_idx = xcalloc(j->nupstream, sizeof *j->upstream_idx);
	for (i = 0; i < j->nupstream; i++) {
		int u = config_job_index(cfg, j->upstream[i]);
		size_t best = SIZE_MAX;
		const char *sugg = NULL;

		if (u < 0) {
			for (b = 0; b < cfg->njobs; b++)
				if (suggest_close(j->upstream[i], cfg->jobs[b].name, &best))
					sugg = cfg->jobs[b].name;
			return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
					"job \"%s\": unknown upstream job %s%s%s%s",
					j->name, cfg_quote(j->upstream[i], q, sizeof q),
					sugg ? "; did you mean \"" : "",
					sugg ? sugg : "", sugg ? "\"?" : "");
		}
		if (u == (int)a) {
			if (cfg_link_self(p, a, i, &self_lb) < 0)
				return -1;
			j->upstream_idx[i] = u; /* never another entry's twin */
			continue;
		}
		if (cfg_link_whole(p, a, i, u) < 0)
			return -1;
		for (m = 0; m < i; m++)
			if (j->upstream_idx[m] == u)
				return cfg_fail(p, cfg_upstream_node(p, a, i)->start_mark,
						"job \"%s\" lists upstream \"%s\" twice; keep one",
						j->name, j->upstream[i]);
		j->upstream_idx[i] = u;
	}
	if (self_lb > 0) {
		/* from here on, cfg_upstream_node skips its entry */
		j->self_lookback = self_lb;
		cfg_unlink_self(j);
	}
	return 0;
}

/* downstream: every job that names job a in its upstream, in job order. */
static void
cfg_link_downstream(struct config *cfg, size_t a)
{
	struct job_def *j = &cfg->jobs[a];
	size_t b, i;

	for (b = 0; b < cfg->njobs; b++)
		for (i = 0; i < cfg->jobs[b].nupstream; i++)
			if (cfg->jobs[b].upstream_idx[i] == (int)a)
				j->ndownstream++;
	if (j->ndownstream == 0)
		return;
	j->downstream_idx = xcalloc(j->ndownstream, sizeof *j->downstream_idx);
	j->ndownstream = 0;
	for (b = 0; b < cfg->njobs; b++)
		for (i = 0; i < cfg->jobs[b].nupstream; i++)
			if (cfg->jobs[b].upstream_idx[i] == (int)a)
				j->downstream_idx[j->ndownstream++] = (int)b;
}

/* topo: repeatedly the lowest-index job whose upstream is placed (the
 * graph has no cycle); state is scratch of njobs + 1 bytes. */
static void
cfg_link_topo(struct config *cfg, char *state)
{
	size_t a, i, placed;

	cfg->topo = xcalloc(cfg->njobs + 1, sizeof *cfg->topo);
	memset(state, 0, cfg->njobs + 1);
	for (placed = 0; placed < cfg->njobs;) {
		for (a = 0; a < cfg->njobs; a++) {
			const struct job_def *j = &cfg->jobs[a];
			bool ready = state[a] == 0;

			for (i = 0; ready && i < j->nupstream; i++)
				if (!state[j->upstream_idx[i]])
					ready = false;
			if (ready) {
				state[a] = 1;
				cfg->topo[placed++] = (int)a;
				break;
			}
		}
	}
}

/* Resolve upstream names, check grains and cycles, fill downstream and
 * the topological order. */
int
cfg_link(struct cfg_parser *p)
{
	struct config *cfg = p->cfg;
	size_t a;
	char *state = NULL;
	size_t *path = NULL;
	int rc = 0;

	for (a = 0; a < cfg->njobs; a++)
		if (cfg->jobs[a].nupstream > 0 && cfg_link_upstream(p, a) < 0)
			return -1;
	state = xcalloc(cfg->njobs + 1, 1);
	path = xcalloc(cfg->njobs + 1, sizeof *path);
	for (a = 0; a < cfg->njobs && rc == 0; a++)
		if (state[a] == 0)
			rc = cfg_find_cycle(p, a, state, path, 0);
	if (rc == 0) {
		for (a = 0; a < cfg->njobs; a++)
			cfg_link_downstream(cfg, a);
		cfg_link_topo(cfg, state);
	}
	free(state);
	free(path);
	return rc;
}
