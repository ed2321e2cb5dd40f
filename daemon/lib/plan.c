/*
 * plan.c - the downstream planner: which downstream partitions a set of
 * partitions feeds, and what each waits for.  See plan.h for the rules.
 *
 * Cost: O(k log k) for k (input item, downstream partition) pairs; a week
 * straddling two months yields two pairs.
 */
#include "plan.h"

#include <stdio.h>

#include "lineage.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

struct pair {
	part_t part;  /* downstream partition */
	size_t input; /* plan item feeding it */
};

/* Start an empty plan. */
void
plan_init(struct plan *p)
{
	memset(p, 0, sizeof *p);
}

/* Free a plan's arrays. */
void
plan_free(struct plan *p)
{
	free(p->items);
	free(p->deps);
	plan_init(p);
}

/* Grow an array to hold one more element of size sz. */
static void
plan_grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return;
	*cap = *cap ? *cap * 2 : 64;
	*arr = xreallocarray(*arr, *cap, sz);
}

/* Append an item. */
static void
plan_push(struct plan *p, int job, part_t part, bool downstream)
{
	struct plan_item *it;

	plan_grow((void **)&p->items, &p->cap, p->n, sizeof *p->items);
	it = &p->items[p->n++];
	it->job = job;
	it->part = part;
	it->downstream = downstream;
	it->dep_off = p->ndeps;
	it->ndeps = 0;
}

/* Append an input to the last item. */
static void
plan_push_dep(struct plan *p, size_t input)
{
	plan_grow((void **)&p->deps, &p->depcap, p->ndeps, sizeof *p->deps);
	p->deps[p->ndeps++] = input;
	p->items[p->n - 1].ndeps++;
}

void
plan_add_root(struct plan *p, int job, part_t part)
{
	plan_push(p, job, part, false);
	p->nroot = p->n;
}

/* Order pairs by partition, then input. */
static int
pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	if (x->input != y->input)
		return x->input < y->input ? -1 : 1;
	return 0;
}

/* The last partition of a cascade of job j whose earliest rebuilt one
 * is first and latest last: its newest built partition when later,
 * within its end. */
static part_t
plan_cascade_last(const struct job_def *j, part_t last,
		  const struct plan_built *built)
{
	if (built != NULL && built->has && built->newest > last)
		last = built->newest;
	if (j->has_end && last > j->end)
		last = j->end;
	return last;
}

/* Append to the last item the items of job j (a running total) among the
 * nprev pushed before it (from index base), up to its lookback. */
static void
plan_push_self_deps(struct plan *p, const struct job_def *j, size_t base,
		    size_t nprev)
{
	size_t lb = (size_t)j->self_lookback;

	for (size_t k = nprev > lb ? nprev - lb : 0; k < nprev; k++)
		plan_push_dep(p, base + k);
}

/*
 * The cascade of job d in its own upstream (DESIGN, "A job in its own
 * upstream"), from the (partition, input) pairs its upstream feeds
 * (sorted): every partition from the earliest fed to the latest fed or
 * its newest built one, whichever is later, each once, in time order
 * (never reversed), each waiting for its inputs in the plan and for the
 * job's own items before it within its lookback.  A day a zone skipped
 * is not one.
 */
static void
plan_expand_self(struct plan *p, const struct config *cfg, int d,
		 const struct pair *pairs, size_t n,
		 const struct plan_built *built)
{
	const struct job_def *dj = &cfg->jobs[d];
	part_t last = plan_cascade_last(dj, pairs[n - 1].part, built);
	size_t base = p->n, a = 0;

	for (part_t q = pairs[0].part; q <= last; q++) {
		if (cal_empty(job_cal(dj), q))
			continue;
		plan_push(p, d, q, true);
		for (; a < n && pairs[a].part < q; a++)
			;
		for (size_t b = a; b < n && pairs[b].part == q; b++)
			plan_push_dep(p, pairs[b].input);
		plan_push_self_deps(p, dj, base, p->n - 1 - base);
	}
}

/* Order partitions. */
static int
part_cmp(const void *a, const void *b)
{
	const part_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/*
 * The request's own partitions of a job in its own upstream: from the
 * earliest to the latest named, every one (a gap between two would be
 * read by the later one: rebuilt in its place as a downstream item, so
 * that a mark never marks it and cut-off may skip it), then its later
 * partitions up to its newest built one as downstream items (the
 * cascade), all in time order, each waiting for those before it within
 * its lookback.  nroot counts up to the latest named.
 */
static void
plan_cascade_roots(struct plan *p, const struct config *cfg,
		   const struct plan_built *built)
{
	int j = p->items[0].job;
	const struct job_def *jd = &cfg->jobs[j];
	size_t n = p->nroot, k = 0, nroot = 0;
	part_t *named = xcalloc(n, sizeof *named), last;

	for (size_t i = 0; i < n; i++)
		named[i] = p->items[i].part;
	qsort(named, n, sizeof *named, part_cmp);
	last = plan_cascade_last(jd, named[n - 1], built);
	p->n = p->ndeps = 0;
	for (part_t q = named[0]; q <= last; q++) {
		bool own;

		if (cal_empty(job_cal(jd), q))
			continue;
		while (k < n && named[k] < q)
			k++;
		own = k < n && named[k] == q;
		plan_push(p, j, q, !own);
		plan_push_self_deps(p, jd, 0, p->n - 1);
		if (q <= named[n - 1])
			nroot = p->n;
	}
	p->nroot = nroot;
	free(named);
}

void
plan_own_in_order(struct plan *p, const struct config *cfg)
{
	const struct job_def *jd;
	size_t n = p->nroot;
	part_t *named;
	int j;

	if (n == 0 || cfg->jobs[p->items[0].job].self_lookback == 0)
		return;
	j = p->items[0].job;
	jd = &cfg->jobs[j];
	named = xcalloc(n, sizeof *named);
	for (size_t i = 0; i < n; i++)
		named[i] = p->items[i].part;
	qsort(named, n, sizeof *named, part_cmp);
	p->n = p->ndeps = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = p->n;

		if (k > 0 && p->items[k - 1].part == named[i])
			continue; /* named twice */
		plan_push(p, j, named[i], false);
		while (k > 0 && named[i] - p->items[k - 1].part <=
		       jd->self_lookback)
			k--;
		for (; k + 1 < p->n; k++)
			plan_push_dep(p, k);
	}
	p->nroot = p->n;
	free(named);
}

/* Add job d's items fed by items already in the plan. */
static void
plan_expand_job(struct plan *p, const struct config *cfg, int d, bool reverse,
		const struct plan_built *built)
{
	struct pair *pairs = NULL;
	size_t n = 0, cap = 0, limit = p->n;

	for (size_t i = 0; i < limit; i++) {
		const struct plan_item *it = &p->items[i];
		struct part_range r = lineage_range(cfg, it->job, it->part, d);

		for (part_t q = r.first; q <= r.last; q++) {
			plan_grow((void **)&pairs, &cap, n, sizeof *pairs);
			pairs[n].part = q;
			pairs[n].input = i;
			n++;
		}
	}
	if (n == 0)
		return;
	qsort(pairs, n, sizeof *pairs, pair_cmp);
	if (cfg->jobs[d].self_lookback > 0) {
		plan_expand_self(p, cfg, d, pairs, n, built);
		free(pairs);
		return;
	}
	for (size_t a = 0; a < n;) {
		size_t s = reverse ? n - 1 - a : a, b;

		/* find the group of pairs[s].part */
		size_t lo = s, hi = s;
		while (lo > 0 && pairs[lo - 1].part == pairs[s].part)
			lo--;
		while (hi + 1 < n && pairs[hi + 1].part == pairs[s].part)
			hi++;
		plan_push(p, d, pairs[s].part, true);
		for (b = lo; b <= hi; b++)
			plan_push_dep(p, pairs[b].input);
		a += hi - lo + 1;
	}
	free(pairs);
}

void
plan_expand(struct plan *p, const struct config *cfg, bool reverse,
	    const bool *keep)
{
	plan_expand_built(p, cfg, reverse, keep, NULL);
}

void
plan_expand_built(struct plan *p, const struct config *cfg, bool reverse,
		  const bool *keep, const struct plan_built *built)
{
	bool *in_plan, *own;

	if (p->nroot > 0 && cfg->jobs[p->items[0].job].self_lookback > 0)
		plan_cascade_roots(p, cfg, built != NULL ?
				   &built[p->items[0].job] : NULL);
	in_plan = xcalloc(cfg->njobs, sizeof *in_plan);
	own = xcalloc(cfg->njobs, sizeof *own);
	for (size_t i = 0; i < p->n; i++)
		in_plan[p->items[i].job] = own[p->items[i].job] = true;
	for (size_t t = 0; t < cfg->njobs; t++) {
		int d = cfg->topo[t];
		const struct job_def *dj = &cfg->jobs[d];
		bool fed = false, chained = false;

		if (in_plan[d])
			continue; /* the request's own job: not its own downstream */
		for (size_t u = 0; u < dj->nupstream; u++) {
			int up = dj->upstream_idx[u];

			fed |= in_plan[up];
			chained |= in_plan[up] && !own[up];
		}
		if (!fed || (keep != NULL && !keep[d] && !chained))
			continue;
		size_t before = p->n;
		plan_expand_job(p, cfg, d, reverse,
				built != NULL ? &built[d] : NULL);
		if (p->n > before)
			in_plan[d] = true;
	}
	free(in_plan);
	free(own);
}

/* Is item i of p one plan_drop_open takes out, given what it took out
 * of the items before it (gone[])? */
static bool
plan_item_open(const struct plan *p, size_t i, const part_t *closed,
	       const bool *gone)
{
	const struct plan_item *it = &p->items[i];

	if (i < p->nroot)
		return false;
	if (it->part > closed[it->job])
		return true;
	for (size_t d = 0; d < it->ndeps; d++)
		if (!gone[p->deps[it->dep_off + d]])
			return false;
	return it->ndeps > 0; /* fed only through items taken out */
}

void
plan_drop_open(struct plan *p, const part_t *closed)
{
	bool *gone = xcalloc(p->n ? p->n : 1, sizeof *gone);
	size_t *to = xcalloc(p->n ? p->n : 1, sizeof *to);
	size_t n = 0, nd = 0;

	/* in place: every input is earlier than what waits for it, and an
	 * item's deps are never behind the kept ones written so far */
	for (size_t i = 0; i < p->n; i++) {
		struct plan_item it = p->items[i];

		gone[i] = plan_item_open(p, i, closed, gone);
		if (gone[i]) {
			p->nopen++;
			continue;
		}
		to[i] = n;
		p->items[n] = it;
		p->items[n].dep_off = nd;
		p->items[n].ndeps = 0;
		for (size_t d = 0; d < it.ndeps; d++) {
			size_t in = p->deps[it.dep_off + d];

			if (!gone[in]) {
				p->deps[nd++] = to[in];
				p->items[n].ndeps++;
			}
		}
		n++;
	}
	p->n = n;
	p->ndeps = nd;
	free(gone);
	free(to);
}

int
plan_check_bounds(const struct plan *p, const struct config *cfg,
		  struct err *err)
{
	size_t *n = xcalloc(cfg->njobs, sizeof *n);
	int rc = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->items[i].downstream ||
		    cfg->jobs[p->items[i].job].self_lookback > 0)
			n[p->items[i].job]++;
	for (size_t t = 0; t < cfg->njobs && rc == 0; t++) {
		const struct job_def *j = &cfg->jobs[cfg->topo[t]];

		if (n[cfg->topo[t]] > (size_t)j->max_backfill &&
		    j->self_lookback > 0)
			rc = err_set(err, EXIT_BAD_INPUT, "refused: the request"
				     " rebuilds %zu partitions of %s (it reads"
				     " its own earlier partitions: each one"
				     " from the earliest repaired to its newest"
				     " built), above its max_backfill of %d;"
				     " nothing was queued. Raise %s's"
				     " max_backfill", n[cfg->topo[t]], j->name,
				     j->max_backfill, j->name);
		else if (n[cfg->topo[t]] > (size_t)j->max_backfill)
			rc = err_set(err, EXIT_BAD_INPUT, "refused: the request"
				     " rebuilds %zu partitions of %s downstream,"
				     " above its max_backfill of %d; nothing was"
				     " queued. Split the request, or raise %s's"
				     " max_backfill", n[cfg->topo[t]], j->name,
				     j->max_backfill, j->name);
	}
	free(n);
	return rc;
}

void
plan_downstream_of(const struct config *cfg, int job, bool *below)
{
	memset(below, 0, cfg->njobs * sizeof *below);
	/* topological order: every upstream is decided before its downstream */
	for (size_t t = 0; t < cfg->njobs; t++) {
		int d = cfg->topo[t];
		const struct job_def *dj = &cfg->jobs[d];

		for (size_t u = 0; u < dj->nupstream && d != job; u++)
			if (dj->upstream_idx[u] == job || below[dj->upstream_idx[u]])
				below[d] = true;
	}
}

/* The names of the jobs marked in set, comma separated, into out. */
static void
plan_names(const struct config *cfg, const bool *set, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < cfg->njobs && len + 1 < size; i++) {
		int n;

		if (!set[i])
			continue;
		n = snprintf(out + len, size - len, "%s%s", len ? ", " : "",
			     cfg->jobs[i].name);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	if (len >= size && size > 4)
		memcpy(out + size - 4, "...", 4);
}

/* Refuse a named job that the narrowed plan cannot reach: every job
 * between it and the request's job was left out (reach: scratch flags). */
static int
plan_check_reached(const struct config *cfg, int job, const bool *keep,
		   bool *reach, struct err *err)
{
	memset(reach, 0, cfg->njobs * sizeof *reach);
	reach[job] = true;
	for (size_t t = 0; t < cfg->njobs; t++) {
		int d = cfg->topo[t];
		const struct job_def *dj = &cfg->jobs[d];
		bool fed = false, chained = false;

		for (size_t u = 0; u < dj->nupstream && d != job; u++) {
			int up = dj->upstream_idx[u];

			fed |= reach[up];
			chained |= reach[up] && up != job;
		}
		reach[d] = d == job || (fed && (keep[d] || chained));
	}
	for (size_t d = 0; d < cfg->njobs; d++)
		if (keep[d] && !reach[d])
			return err_set(err, EXIT_BAD_INPUT, "--downstream: %s is"
				       " fed by %s only through jobs left out:"
				       " name them too (the chain from %s to"
				       " %s)", cfg->jobs[d].name,
				       cfg->jobs[job].name, cfg->jobs[job].name,
				       cfg->jobs[d].name);
	return 0;
}

int
plan_select_downstream(const struct config *cfg, int job, const char *list,
		       bool *keep, struct err *err)
{
	bool *below = xcalloc(cfg->njobs, sizeof *below);
	const char *p = list;
	char names[256];
	int rc = 0;

	plan_downstream_of(cfg, job, below);
	plan_names(cfg, below, names, sizeof names);
	memset(keep, 0, cfg->njobs * sizeof *keep);
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[128];
		int d;

		if (len == 0 || len >= sizeof name) {
			rc = err_set(err, EXIT_BAD_INPUT, "--downstream %s: give"
				     " job names separated by commas (the"
				     " downstream jobs of %s: %s)", len ?
				     "names a job too long" : "has an empty name",
				     cfg->jobs[job].name, names[0] ? names : "none");
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		d = config_job_index(cfg, name);
		if (d < 0) {
			rc = err_set(err, EXIT_BAD_INPUT, "--downstream: unknown job"
				     " \"%s\": the downstream jobs of %s are %s",
				     name, cfg->jobs[job].name,
				     names[0] ? names : "none");
			break;
		}
		if (!below[d]) {
			rc = err_set(err, EXIT_BAD_INPUT, "--downstream: %s is not"
				     " downstream of %s: %s%s", name,
				     cfg->jobs[job].name, names[0] ?
				     "its downstream jobs are " : "it has no"
				     " downstream jobs", names);
			break;
		}
		keep[d] = true;
		if (end == NULL)
			break;
		p = end + 1;
	}
	if (rc == 0)
		rc = plan_check_reached(cfg, job, keep, below, err);
	free(below);
	return rc;
}
