/*
 * exec_wap_parts.c - write-audit-publish on a ClickHouse table whose
 * partition key is compound, `PARTITION BY (dt, store_id)` (exec_wap.h,
 * chparts.h; docs/clickhouse.md, "Compound keys").  A job's partition P
 * is then the set of the table's partitions whose first element is P:
 *  - its publish is that exact set: every stage partition of P replaced
 *    into the live table, every live partition of P the stage lacks
 *    dropped (a store gone from the day goes from the table), one ALTER,
 *    by partition id, the ids of both tables read with the stage's after
 *    figures (exec_wap_read_after, kept here for the publish), or just
 *    before it when that read did not give them;
 *  - its stage partition is cleared by dropping each id of P there.
 * The rules of exec_wap.c (WAP-1 to WAP-3) hold unchanged: the set is
 * derived from the marked stage each time, so publishing it again after
 * a crash (between the mark and the publish, or in the middle of the
 * ALTER) leaves what one publish leaves.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chparts.h"
#include "exec_wap.h"
#include "xalloc.h"

/* At most this many partition ids are read in one statement. */
#define EXEC_WAP_PARTS_MAX 100000

/*
 * The ids the after figures read, by run, connection, stage and key,
 * until the run's publish takes them.  The stage partitions of a key are
 * written by its run alone (a run of the key, a node's own stage) and
 * not between the after figures and the publish, so what was read then
 * is what the publish meets; a run that never publishes (it failed) has
 * its entries pushed out by later ones.  At most EXEC_WAP_KEPT_MAX;
 * worker threads, under kept_lock.
 */
#define EXEC_WAP_KEPT_MAX 1024
static struct exec_wap_kept {
	int64_t run;
	const struct wh_conn *conn;
	char *stage, *key;
	struct chparts ids;
} kept[EXEC_WAP_KEPT_MAX];
static size_t kept_next;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void
exec_wap_kept_clear(struct exec_wap_kept *k)
{
	free(k->stage);
	free(k->key);
	chparts_free(&k->ids, 1);
	memset(k, 0, sizeof *k);
}

/* The entry of (run, conn, stage, key), or NULL; kept_lock held. */
static struct exec_wap_kept *
exec_wap_kept_of(int64_t run, const struct wh_conn *conn, const char *stage,
		 const char *key)
{
	for (size_t i = 0; i < EXEC_WAP_KEPT_MAX; i++)
		if (kept[i].key != NULL && kept[i].run == run &&
		    kept[i].conn == conn && strcmp(kept[i].stage, stage) == 0 &&
		    strcmp(kept[i].key, key) == 0)
			return &kept[i];
	return NULL;
}

void
exec_wap_parts_keep(const struct exec_run *run, const struct wh_conn *conn,
		    const struct wap_tables *t, const char *key,
		    struct chparts *ids)
{
	struct exec_wap_kept *k;

	pthread_mutex_lock(&kept_lock);
	if ((k = exec_wap_kept_of(run->run_id, conn, t->stage, key)) == NULL) {
		k = &kept[kept_next];
		kept_next = (kept_next + 1) % EXEC_WAP_KEPT_MAX;
	}
	exec_wap_kept_clear(k);
	k->run = run->run_id;
	k->conn = conn;
	k->stage = xstrdup(t->stage);
	k->key = xstrdup(key);
	k->ids = *ids;
	memset(ids, 0, sizeof *ids);
	pthread_mutex_unlock(&kept_lock);
}

/* The ids kept for every one of keys[0..n) into *p (n of them), taken
 * out; false (nothing taken) when one is missing, or a key is twice. */
static bool
exec_wap_parts_take(const struct exec_run *run, const struct wh_conn *conn,
		    const struct wap_tables *t, const char *const *keys,
		    size_t n, struct chparts **p)
{
	struct exec_wap_kept **k = xcalloc(n ? n : 1, sizeof *k);
	bool all = true;

	pthread_mutex_lock(&kept_lock);
	for (size_t i = 0; i < n && all; i++) {
		k[i] = exec_wap_kept_of(run->run_id, conn, t->stage, keys[i]);
		all = k[i] != NULL;
		for (size_t j = 0; j < i && all; j++)
			all = k[j] != k[i];
	}
	if (all) {
		*p = xcalloc(n ? n : 1, sizeof **p);
		for (size_t i = 0; i < n; i++) {
			(*p)[i] = k[i]->ids;
			memset(&k[i]->ids, 0, sizeof k[i]->ids);
			exec_wap_kept_clear(k[i]);
		}
	}
	pthread_mutex_unlock(&kept_lock);
	free(k);
	return all;
}

/* The ids of keys[0..n) in stage (and live, when not NULL) into *p (n of
 * them, to chparts_free and free). */
static int
exec_wap_parts_read(struct wh_conn *conn, const char *stage, const char *live,
		    const char *const *keys, size_t n, struct chparts **p,
		    struct err *err)
{
	char *sql, **v = NULL;
	size_t nv = 0;
	int rc;

	*p = xcalloc(n ? n : 1, sizeof **p);
	if (chparts_ids_sql(stage, live, keys, n, &sql, err) == -1)
		return -1;
	rc = conn->drv->query_column(conn, sql, NULL, 0, EXEC_WAP_PARTS_MAX,
				     &v, &nv, err);
	free(sql);
	if (rc == 0)
		rc = chparts_parse(keys, n, v, nv, *p, err);
	else
		err_prefix(err, "reading the partitions of %s", stage);
	for (size_t i = 0; i < nv; i++)
		free(v[i]);
	free(v);
	return rc;
}

/* -1 with err when a key of p[0..n) has no stage partition though the
 * audit of its part counted rows in the stage (on the job's own table:
 * a shard's counts are the last shard's). */
static int
exec_wap_parts_lost(const struct exec_run *run, const struct wap_tables *t,
		    const char *const *keys, const struct chparts *p,
		    size_t n, struct err *err)
{
	if (strcmp(t->live, run->job->table) != 0)
		return 0;
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < run->nparts && p[k].nstage == 0; i++)
			if (strcmp(run->parts[i].key, keys[k]) == 0 &&
			    run->guards[i].rows_after > 0)
				return err_set(err, EXIT_WORK_FAILED, "refused:"
				    " the stage holds %lld rows of %s in no"
				    " partition whose first element is %s:"
				    " the first element of table %s's"
				    " partition key must be a Date (or the"
				    " hour's DateTime) equal to the partition"
				    " (docs/clickhouse.md, \"Compound keys\")",
				    (long long)run->guards[i].rows_after,
				    keys[k], keys[k], t->live);
	return 0;
}

int
exec_wap_parts_publish_sql(const struct exec_run *run, struct wh_conn *conn,
			   const struct wap_tables *t,
			   const char *const *keys, size_t n, char **sql,
			   struct err *err)
{
	struct chparts *p;
	int rc;

	*sql = NULL;
	/* read with the after figures, else now */
	rc = exec_wap_parts_take(run, conn, t, keys, n, &p) ? 0 :
	     exec_wap_parts_read(conn, t->stage, t->live, keys, n, &p, err);
	if (rc == 0)
		rc = exec_wap_parts_lost(run, t, keys, p, n, err);
	if (rc == 0)
		chparts_publish_sql(t->live, t->stage, p, n, sql);
	chparts_free(p, n);
	free(p);
	return rc;
}

int
exec_wap_parts_drop(struct wh_conn *conn, const char *stage,
		    const char *const *keys, size_t n, bool wait,
		    struct err *err)
{
	struct chparts *p = NULL;
	char *sql = NULL;
	int rc = 0;

	/* an ALTER waits for the INSERTs into its table that run (a fill a
	 * killed daemon left on the server): the ids are read after it */
	if (wait) {
		sql = chparts_wait_sql(stage);
		rc = conn->drv->exec_script(conn, sql, NULL, 0, err);
		free(sql);
		sql = NULL;
	}
	if (rc == 0)
		rc = exec_wap_parts_read(conn, stage, NULL, keys, n, &p, err);
	if (rc == 0)
		chparts_drop_sql(stage, p, n, &sql);
	if (p != NULL)
		chparts_free(p, n);
	free(p);
	if (rc == 0 && sql != NULL)
		rc = conn->drv->exec_script(conn, sql, NULL, 0, err);
	free(sql);
	return rc;
}
