/*
 * keycheck.c - the check of ClickHouse targets off the loop (keycheck.h).
 *
 * One uv_work_t per check: the work callback runs
 * exec_check_partition_keys on a thread of libuv's pool (it opens its own
 * connections and closes them; the configuration is immutable, shared by
 * reference), the after-work callback hands the result to the caller on
 * the loop thread.
 */
#include "keycheck.h"

#include <stdbool.h>
#include <stdlib.h>

#include "exec.h"
#include "xalloc.h"

struct keycheck {
	uv_work_t work;
	const struct config *cfg;
	keycheck_done_fn *done;
	void *arg;
	int rc;
	struct err err;
};

/* Whether cfg has a ClickHouse warehouse (else nothing to reach). */
static bool
keycheck_needed(const struct config *cfg)
{
	for (size_t w = 0; w < cfg->nwarehouses; w++)
		if (cfg->warehouses[w].kind == WH_CLICKHOUSE)
			return true;
	return false;
}

/* A thread of the pool. */
static void
keycheck_work_cb(uv_work_t *req)
{
	struct keycheck *k = req->data;

	err_clear(&k->err);
	k->rc = exec_check_partition_keys(k->cfg, &k->err);
}

/* The loop thread. */
static void
keycheck_after_cb(uv_work_t *req, int status)
{
	struct keycheck *k = req->data;

	(void)status; /* never cancelled: uv_cancel is not called */
	k->done(k->arg, k->rc, &k->err);
	free(k);
}

void
keycheck_start(uv_loop_t *loop, const struct config *cfg,
	       keycheck_done_fn *done, void *arg)
{
	struct keycheck *k;
	struct err err;

	err_clear(&err);
	if (!keycheck_needed(cfg)) {
		done(arg, 0, &err);
		return;
	}
	k = xcalloc(1, sizeof *k);
	k->work.data = k;
	k->cfg = cfg;
	k->done = done;
	k->arg = arg;
	if (uv_queue_work(loop, &k->work, keycheck_work_cb,
			  keycheck_after_cb) != 0) {
		/* cannot fail with a callback given; checked all the same */
		k->rc = exec_check_partition_keys(cfg, &k->err);
		done(arg, k->rc, &k->err);
		free(k);
	}
}
