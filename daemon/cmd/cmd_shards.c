/*
 * cmd_shards.c - what runs, audit and status say of a partition that a
 * ClickHouse Distributed target publishes shard by shard
 * (docs/clickhouse.md, "Beyond one server"): published only when every
 * shard has it; until then partially published, naming the shards done.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

/* Whether job publishes on the shards of a ClickHouse cluster. */
static bool
cmd_shards_job(const struct config *cfg, const char *job)
{
	int j = config_job_index(cfg, job);
	const struct warehouse_def *wh;

	if (j < 0 || cfg->jobs[j].sql == NULL || cfg->jobs[j].command != NULL ||
	    cfg->jobs[j].warehouse < 0 ||
	    (size_t)cfg->jobs[j].warehouse >= cfg->nwarehouses)
		return false;
	wh = &cfg->warehouses[cfg->jobs[j].warehouse];
	return wh->kind == WH_CLICKHOUSE && wh->cluster != NULL;
}

struct shards_acc {
	struct cmd_shards *out;
	int64_t upto;
};

static void
cmd_shards_row_cb(const struct store_shard_row *row, void *data)
{
	struct shards_acc *acc = data;
	struct cmd_shards *o = acc->out;
	size_t len = strlen(o->names);

	if (acc->upto > 0 && row->run_id > acc->upto)
		return;
	o->published++;
	o->of = row->nshards;
	if (o->published <= CMD_SHARDS_NAMED)
		o->shard[o->published - 1] = row->shard;
	snprintf(o->names + len, sizeof o->names - len, "%s%d",
		 len ? ", " : "", row->shard);
}

bool
cmd_shards_read(struct sched *sched, int64_t request, const char *job,
		const char *key, int64_t upto_run, struct cmd_shards *out)
{
	struct shards_acc acc = { out, upto_run };
	struct err err;

	memset(out, 0, sizeof *out);
	if (job == NULL || key == NULL ||
	    !cmd_shards_job(sched_config(sched), job))
		return false;
	if (sched_read_shards_of(sched, request, job, key,
				 cmd_shards_row_cb, &acc, &err) < 0)
		return false;
	return out->published > 0;
}

void
cmd_shards_json(struct buf *out, const struct cmd_shards *sh, bool known)
{
	if (!known) {
		buf_addstr(out, "null");
		return;
	}
	buf_printf(out, "{\"published\": %d, \"of\": %d, \"shards\": [",
		   sh->published, sh->of);
	for (int i = 0; i < sh->published && i < CMD_SHARDS_NAMED; i++)
		buf_printf(out, "%s%d", i ? ", " : "", sh->shard[i]);
	buf_printf(out, "], \"partial\": %s}",
		   sh->published < sh->of ? "true" : "false");
}

void
cmd_shards_text(const struct cmd_shards *sh, char *buf, size_t size)
{
	if (sh->published < sh->of)
		snprintf(buf, size, "partially published: shard%s %s of %d",
			 sh->published > 1 ? "s" : "", sh->names, sh->of);
	else
		snprintf(buf, size, "published on all %d shards", sh->of);
}

/* status: the partitions partially published (store_shards_partial's
 * rows grouped by request, job and partition). */
struct partial_acc {
	struct buf *out;
	bool json;
	const char *only;
	size_t n;
	bool open;
	struct cmd_shards cur;
	int64_t request;
	char job[128], key[32];
};

static void
cmd_shards_partial_end(struct partial_acc *pa)
{
	char line[256];

	if (!pa->open)
		return;
	pa->open = false;
	if (pa->json) {
		buf_printf(pa->out, "%s{\"request\": %" PRId64 ", \"job\": ",
			   pa->n++ ? ", " : "", pa->request);
		json_str(pa->out, pa->job);
		buf_addstr(pa->out, ", \"partition\": ");
		json_str(pa->out, pa->key);
		buf_addstr(pa->out, ", \"shards\": ");
		cmd_shards_json(pa->out, &pa->cur, true);
		buf_addstr(pa->out, "}");
		return;
	}
	cmd_shards_text(&pa->cur, line, sizeof line);
	buf_printf(pa->out, "%s %s (request %" PRId64 "): %s; not succeeded"
		   " until every shard has it\n", pa->job, pa->key,
		   pa->request, line);
	pa->n++;
}

static void
cmd_shards_partial_cb(const struct store_shard_row *row, void *data)
{
	struct partial_acc *pa = data;
	struct shards_acc acc = { &pa->cur, 0 };

	if (pa->only != NULL && strcmp(pa->only, row->job) != 0)
		return;
	if (pa->open && (pa->request != row->request ||
			 strcmp(pa->job, row->job) != 0 ||
			 strcmp(pa->key, row->key) != 0))
		cmd_shards_partial_end(pa);
	if (!pa->open) {
		memset(&pa->cur, 0, sizeof pa->cur);
		pa->open = true;
		pa->request = row->request;
		snprintf(pa->job, sizeof pa->job, "%s", row->job);
		snprintf(pa->key, sizeof pa->key, "%s", row->key);
	}
	cmd_shards_row_cb(row, &acc);
}

void
cmd_shards_partial(struct cmd_ctx *ctx, const char *only, bool json,
		   struct buf *out)
{
	struct partial_acc pa = { .out = out, .json = json, .only = only };
	struct err err;
	int rc;

	const struct config *cfg = sched_config(ctx->sched);
	bool any = false;

	for (size_t j = 0; j < cfg->njobs && !any; j++)
		any = cmd_shards_job(cfg, cfg->jobs[j].name);
	if (json)
		buf_addstr(out, ", \"partially_published\": [");
	/* no job on a cluster's shards: nothing to read (no transaction) */
	rc = !any ? 0 : sched_read_shards_partial(ctx->sched,
						  cmd_shards_partial_cb, &pa,
						  &err);
	cmd_shards_partial_end(&pa);
	if (rc < 0 && !json)
		buf_printf(out, "partially published partitions: cannot be"
			   " read: %s\n", err.msg);
	if (json)
		buf_addstr(out, "]");
}
