/*
 * exec_wap_known.c - what this process knows of its ClickHouse stage
 * tables (exec_wap.h), so that a run of one partition can skip the read
 * of its stage's state before the fill (docs/clickhouse.md, "Round
 * trips").  Worker threads, under one lock.
 *
 * Rules that must always hold:
 *  KNOWN-1. A stage is swept once a clear of it went through in this
 *     process since its last exec_wap_unswept.  An ALTER ... DROP
 *     PARTITION waits for the INSERTs into its table that are running,
 *     and a daemon killed during a fill can leave its INSERT running on
 *     the server, to land after the next process's reads: so each
 *     process clears unconditionally (as every run once did) until one
 *     such drop of the table has gone through, and only then trusts a
 *     read's "holds nothing".  A fill of this process's that failed, or
 *     any failed run (its INSERT may run on, its stage partition may be
 *     left), makes it unswept again.
 *  KNOWN-2. Once swept, the stage's partitions holding parts and every
 *     mark are read once (exec_wap_learn); a key among them is dirty.  A
 *     key a run (or a proof) of this process begins to write is dirty
 *     from before its first statement; only a release that dropped its
 *     marks, then its stage partition, makes it clean again.  Nothing
 *     else writes the stage: another node has stages of its own, and two
 *     processes never share a state store.
 *  KNOWN-3. A run of one partition whose key is clean (learned at the
 *     stage's generation, swept still) has no stage partition to clear
 *     and no mark to honour (WAP-3 finds none): it fills at once.  In
 *     doubt (unswept, not learned, a key that is dirty, a text of a
 *     partition that is no key) the run reads the state as before.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chsql.h"
#include "chwap.h"
#include "exec_wap.h"
#include "xalloc.h"

/* At most this many partitions of a stage are read by exec_wap_learn. */
#define WAP_KNOWN_MAX 100000

static pthread_mutex_t wap_known_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wap_known {
	char *stage;
	char *where;        /* its server ("": no knowledge kept) */
	bool swept;
	unsigned gen;       /* failures: a clear begun before one is no sweep */
	bool known;         /* learned at gen (dirty lists the rest) */
	bool learning;
	char **dirty;       /* the keys' plain texts (chsql_plain, unquoted) */
	size_t ndirty;
} *wap_known;
static size_t wap_nknown;

/* The entry of t's stage (added when absent); wap_known_lock held. */
static struct wap_known *
exec_wap_known_of(const struct wap_tables *t)
{
	const char *where = t->where != NULL ? t->where : "";
	struct wap_known *e;

	for (size_t i = 0; i < wap_nknown; i++)
		if (strcmp(wap_known[i].stage, t->stage) == 0 &&
		    strcmp(wap_known[i].where, where) == 0)
			return &wap_known[i];
	wap_known = xreallocarray(wap_known, wap_nknown + 1,
				  sizeof *wap_known);
	e = &wap_known[wap_nknown++];
	memset(e, 0, sizeof *e);
	e->stage = xstrdup(t->stage);
	e->where = xstrdup(where);
	return e;
}

bool
exec_wap_swept(const struct wap_tables *t, unsigned *gen)
{
	struct wap_known *e;
	bool swept;

	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t);
	swept = e->swept;
	*gen = e->gen;
	pthread_mutex_unlock(&wap_known_lock);
	return swept;
}

void
exec_wap_set_swept(const struct wap_tables *t, unsigned gen)
{
	struct wap_known *e;

	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t);
	if (e->gen == gen)
		e->swept = true;
	pthread_mutex_unlock(&wap_known_lock);
}

void
exec_wap_unswept(const struct wap_tables *t)
{
	struct wap_known *e;

	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t);
	e->swept = false;
	e->known = false;
	e->gen++;
	pthread_mutex_unlock(&wap_known_lock);
}

/* The plain text of key (its literal unquoted), "" for none. */
static void
exec_wap_text(const char *key, char out[CHSQL_LITERAL_MAX])
{
	char lit[CHSQL_LITERAL_MAX];
	struct err e;
	size_t n;

	out[0] = '\0';
	if (chsql_plain(key, lit, &e) == -1 || (n = strlen(lit)) < 2)
		return;
	snprintf(out, CHSQL_LITERAL_MAX, "%.*s", (int)(n - 2), lit + 1);
}

/* Whether text is a day's or an hour's plain text: the partitions of a
 * key of the grain's first day (a compound key's are tuples). */
static bool
exec_wap_text_ok(const char *text)
{
	static const char form[] = "dddd-dd-dd dd:dd:dd";
	size_t n = strlen(text);

	if (n != 10 && n != 19)
		return false;
	for (size_t i = 0; i < n; i++)
		if (form[i] == 'd' ? text[i] < '0' || text[i] > '9' :
		    text[i] != form[i])
			return false;
	return true;
}

/* The index of text among e's dirty keys, or e->ndirty; lock held. */
static size_t
exec_wap_dirty_at(const struct wap_known *e, const char *text)
{
	size_t i;

	for (i = 0; i < e->ndirty; i++)
		if (strcmp(e->dirty[i], text) == 0)
			break;
	return i;
}

/* text dirty in e; lock held. */
static void
exec_wap_dirty_add(struct wap_known *e, const char *text)
{
	if (exec_wap_dirty_at(e, text) < e->ndirty)
		return;
	e->dirty = xreallocarray(e->dirty, e->ndirty + 1, sizeof *e->dirty);
	e->dirty[e->ndirty++] = xstrdup(text);
}

void
exec_wap_dirty(const struct wap_tables *t, const char *key)
{
	char text[CHSQL_LITERAL_MAX];

	if (t->where == NULL)
		return;
	exec_wap_text(key, text);
	pthread_mutex_lock(&wap_known_lock);
	if (text[0] == '\0') /* no key: nothing is known of the stage */
		exec_wap_known_of(t)->known = false;
	else
		exec_wap_dirty_add(exec_wap_known_of(t), text);
	pthread_mutex_unlock(&wap_known_lock);
}

bool
exec_wap_clean(const struct wap_tables *t, const char *key)
{
	char text[CHSQL_LITERAL_MAX];
	struct wap_known *e;
	bool clean;

	if (t->where == NULL || t->compound)
		return false;
	exec_wap_text(key, text);
	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t);
	clean = e->swept && e->known && text[0] != '\0' &&
		exec_wap_dirty_at(e, text) == e->ndirty;
	pthread_mutex_unlock(&wap_known_lock);
	return clean;
}

void
exec_wap_released(const struct wap_tables *t, const char *const *keys,
		  size_t n)
{
	char text[CHSQL_LITERAL_MAX];
	struct wap_known *e;
	size_t at;

	if (t->where == NULL)
		return;
	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t);
	for (size_t i = 0; i < n; i++) {
		exec_wap_text(keys[i], text);
		if ((at = exec_wap_dirty_at(e, text)) == e->ndirty)
			continue;
		free(e->dirty[at]);
		e->dirty[at] = e->dirty[--e->ndirty];
	}
	pthread_mutex_unlock(&wap_known_lock);
}

/* The answer of chwap_known_sql into e (lock held): false when a value
 * is none of its forms, or the stage is missing. */
static bool
exec_wap_learned(struct wap_known *e, char **v, size_t nv)
{
	bool exists = false;

	for (size_t i = 0; i < nv; i++) {
		const char *text = v[i] + 2;

		if (strcmp(v[i], "e") == 0) {
			exists = true;
			continue;
		}
		if ((v[i][0] != 's' && v[i][0] != 'm') || v[i][1] != '\t' ||
		    !exec_wap_text_ok(text))
			return false;
		exec_wap_dirty_add(e, text);
	}
	return exists;
}

int
exec_wap_learn(struct exec_flight *fl, struct wh_conn *conn,
	       const struct wap_tables *t, struct err *err)
{
	struct wap_known *e;
	char *sql, **v = NULL;
	size_t nv = 0;
	unsigned gen;
	struct err e2;
	int rc;

	if (t->where == NULL || t->compound)
		return 0;
	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t);
	gen = e->gen;
	rc = !e->swept || e->known || e->learning;
	e->learning = rc == 0;
	pthread_mutex_unlock(&wap_known_lock);
	if (rc != 0)
		return 0;
	sql = chwap_known_sql(t->stage, t->mark,
			      exec_flight_run(fl)->job->partition_column);
	rc = exec_interrupted(fl, err) ? -1 :
	     conn->drv->query_column(conn, sql, NULL, 0, WAP_KNOWN_MAX, &v,
				     &nv, &e2);
	free(sql);
	pthread_mutex_lock(&wap_known_lock);
	e = exec_wap_known_of(t); /* the array may have moved */
	e->learning = false;
	/* a failure since the read began: what it says may be old */
	if (rc == 0 && e->gen == gen && e->swept && exec_wap_learned(e, v, nv))
		e->known = true;
	pthread_mutex_unlock(&wap_known_lock);
	for (size_t i = 0; i < nv; i++)
		free(v[i]);
	free(v);
	return rc == -1 && exec_interrupted(fl, err) ? -1 : 0;
}

void
exec_wap_known_forget(void)
{
	pthread_mutex_lock(&wap_known_lock);
	for (size_t i = 0; i < wap_nknown; i++) {
		struct wap_known *e = &wap_known[i];

		for (size_t k = 0; k < e->ndirty; k++)
			free(e->dirty[k]);
		free(e->dirty);
		free(e->stage);
		free(e->where);
	}
	free(wap_known);
	wap_known = NULL;
	wap_nknown = 0;
	pthread_mutex_unlock(&wap_known_lock);
}
