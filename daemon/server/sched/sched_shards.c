/*
 * sched_shards.c - the state store's record of each shard's publish on a
 * ClickHouse Distributed target (docs/clickhouse.md, "Beyond one
 * server"): read before a run starts (the shards its requests have
 * already, which it does not publish again), written as each shard
 * publishes (exec.h, shard_cb: the worker waits for the commit before the
 * next shard's REPLACE).
 */
#include "sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"

/* What one request has recorded for the run's partition. */
struct shards_read {
	uint64_t mask;
	int64_t rows_before[64], rows_after[64];
};

static void
sched_shards_row_cb(const struct store_shard_row *row, void *data)
{
	struct shards_read *rd = data;

	if (row->shard < 1 || row->shard > 64)
		return; /* beyond 64 shards the ClickHouse marks decide */
	rd->mask |= (uint64_t)1 << (row->shard - 1);
	rd->rows_before[row->shard - 1] = row->rows_before;
	rd->rows_after[row->shard - 1] = row->rows_after;
}

/* A ClickHouse job of a warehouse with cluster: (its table may be
 * Distributed: the executor finds out). */
static bool
sched_shards_job(const struct sched *s, const struct job_def *j)
{
	const struct warehouse_def *wh;

	if (j->sql == NULL || j->command != NULL || j->batch ||
	    j->warehouse < 0 || (size_t)j->warehouse >= s->cfg->nwarehouses)
		return false;
	wh = &s->cfg->warehouses[j->warehouse];
	return wh->kind == WH_CLICKHOUSE && wh->cluster != NULL;
}

static int sched_shard_cb(struct exec_run *run,
			  const struct exec_shard_publish *pub,
			  struct err *err);

void
sched_shards_fill(struct sched *s, struct active *a)
{
	/* several hosts: the node that runs it (cluster_worker.c) */
	if (s->remote == NULL)
		sched_shards_prepare(s, &a->run);
}

void
sched_shards_prepare(struct sched *s, struct exec_run *run)
{
	const struct job_def *j = run->job;
	struct shards_read rd;
	uint64_t mask = ~(uint64_t)0;
	struct err err;

	if (!sched_shards_job(s, j) || run->ncommits == 0)
		return;
	run->shard_cb = sched_shard_cb;
	run->shard_data = s;
	for (size_t k = 0; k < run->ncommits; k++) {
		memset(&rd, 0, sizeof rd);
		if (store_shards_of(s->store, run->commits[k].request, j->name,
				    run->parts[0].key, sched_shards_row_cb,
				    &rd, &err) < 0) {
			/* none skipped: the marks make publishing again safe */
			log_warn("job=%s partition=%s cannot read its shards'"
				 " publishes: %s; publishing on every shard",
				 j->name, run->parts[0].key, err.msg);
			return;
		}
		mask &= rd.mask;
	}
	/* the counts of the first request's record (the same rows) */
	run->shards_done = mask;
	for (int b = 0; b < 64; b++)
		if (mask >> b & 1) {
			run->shards_done_before += rd.rows_before[b];
			run->shards_done_after += rd.rows_after[b];
		}
	if (mask != 0)
		log_info("job=%s partition=%s run=%" PRId64 " shards recorded"
			 " published already: not published again", j->name,
			 run->parts[0].key, run->run_id);
}

/* A shard published the run's partition: a row per request of the run,
 * committed before the worker goes on to the next shard. */
static int
sched_shard_cb(struct exec_run *run, const struct exec_shard_publish *pub,
	       struct err *err)
{
	struct sched *s = run->shard_data;
	int64_t now = clock_now_ms();

	if (store_defer(s->store, err) < 0)
		goto fail;
	for (size_t k = 0; k < run->ncommits; k++) {
		struct store_shard_row row = {
			.request = run->commits[k].request,
			.job = run->job->name,
			.key = run->parts[pub->part].key,
			.shard = pub->shard,
			.nshards = pub->nshards,
			.run_id = run->commits[k].run_id,
			.rows_before = pub->rows_before,
			.rows_after = pub->rows_after,
			.published_at = now,
		};

		if (run->commits[k].part != pub->part)
			continue;
		if (store_shard_put(s->store, &row, err) < 0)
			goto fail;
	}
	if (sched_flush(s) < 0) {
		err_set(err, EXIT_WORK_FAILED, "%s", s->store_error);
		goto fail;
	}
	log_info("job=%s partition=%s run=%" PRId64 " shard %d of %d"
		 " published", run->job->name, run->parts[pub->part].key,
		 run->run_id, pub->shard, pub->nshards);
	return 0;
fail:
	err_prefix(err, "shard %d published, its record in the state store"
		   " failed", pub->shard);
	return -1;
}
