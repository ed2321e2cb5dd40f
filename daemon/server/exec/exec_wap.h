/*
 * exec_wap.h - what exec_wap.c (write-audit-publish on ClickHouse) shares
 * with exec_wap_set.c, its statements over several partitions at once
 * (docs/clickhouse.md, "Round trips"), exec_wap_digest.c, the
 * fingerprints, and exec_wap_fill.c, a batch's fill.  Worker threads
 * only.
 */
#ifndef BACKFILLD_EXEC_WAP_H
#define BACKFILLD_EXEC_WAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar.h"
#include "chparts.h"
#include "chsql.h"
#include "exec_int.h"

/* The tables of one publish: the live one, its stage and marks. */
struct wap_tables {
	const char *live;   /* the table published into */
	char stage[CHSQL_IDENT_MAX + 32];
	char mark[CHSQL_IDENT_MAX + 32];
	/* its partition key is compound (a tuple whose first element is the
	 * grain's key; exec_wap_parts.c): a partition is a set of the
	 * table's, published and dropped by their ids */
	bool compound;
	/* the server of the stage whose state the process keeps
	 * (exec_wap_known.c: the warehouse's URL), NULL for none */
	const char *where;
};

/* What the state read found, per part of the run. */
struct wap_state {
	bool *kept;    /* marked by one of the run's requests for it (WAP-3) */
	bool *any;     /* marked at all */
	bool *staged;  /* its stage partition holds parts */
	char (*sum_before)[32]; /* the live partition's sum ("" unread) */
	bool stage_exists;
};

void exec_wap_state_free(struct wap_state *st);
/* Whether the fingerprint is read for the run on t (exec_wap_digest.c). */
bool exec_wap_digested(const struct exec_run *run, const struct wap_tables *t);
/* exec_wap_digest.c: a partition's rows and checksum in table (params[0]
 * its :partition); part i's fingerprints before and after its write into
 * run->guards[i] ("" before/after: read now). */
int exec_wap_digest(struct wh_conn *conn, const char *table,
		    const char *column, enum grain grain,
		    const struct wh_param *params, int64_t *rows, char *sum,
		    size_t sumsz, struct err *err);
int exec_wap_fingerprint(struct exec_flight *fl, struct wh_conn *conn,
			 size_t i, const struct wh_param *params,
			 const struct wap_tables *t, const char *before,
			 const char *after, struct err *err);
/*
 * One statement a chunk of parts [from, from + n): the stage's existence,
 * each part's stage parts and marks, and its before figures (rows,
 * metrics, the live sum when digested) into run->guards.  0 read; 1 not
 * read (a statement failed, or the job's metrics bind values: the caller
 * reads them one by one, as before); -1 interrupted (err).
 */
int exec_wap_read_state(struct exec_flight *fl, struct wh_conn *conn,
			const struct wap_tables *t, size_t from, size_t n,
			struct wap_state *st, struct err *err);
/* The after figures of parts [from, from + n) from the stage, into
 * run->guards (and sum_after[i] when digested): 0, 1 not read, -1
 * interrupted. */
int exec_wap_read_after(struct exec_flight *fl, struct wh_conn *conn,
			const struct wap_tables *t, size_t from, size_t n,
			char (*sum_after)[32], struct err *err);
/* Part i's after figures forgotten (its audit was not reached). */
void exec_wap_forget_after(struct exec_run *run, size_t i);
/* The marks of the parts with marked[i], then the stage partitions of
 * those with staged[i], dropped, a statement a table per chunk (WAP-1). */
int exec_wap_clear(struct exec_flight *fl, struct wh_conn *conn,
		   const struct wap_tables *t, size_t from, size_t n,
		   const bool *marked, const bool *staged, struct err *err);
/*
 * exec_wap_known.c: what this process knows of t's stage.  A fill into
 * it failed, or a run of it did (its INSERT may still run on the server,
 * a stage partition may be left): the next clear of the stage drops
 * whether or not the state read saw parts (a DROP PARTITION waits for
 * it), and nothing is known of it until exec_wap_learn reads it again.
 */
void exec_wap_unswept(const struct wap_tables *t);
/* Whether t's stage is swept (a clear of it went through since its last
 * exec_wap_unswept); *gen its generation now.  exec_wap_set_swept: a
 * clear begun at generation gen went through. */
bool exec_wap_swept(const struct wap_tables *t, unsigned *gen);
void exec_wap_set_swept(const struct wap_tables *t, unsigned gen);
/* Once t's stage is swept: its partitions holding parts and the marks of
 * every run read, once, with t's query id (best effort: 0, or -1 when
 * the run is being stopped). */
int exec_wap_learn(struct exec_flight *fl, struct wh_conn *conn,
		   const struct wap_tables *t, struct err *err);
/* key's stage partition is written by a run now (or may hold rows, or a
 * mark: a proof's fill). */
void exec_wap_dirty(const struct wap_tables *t, const char *key);
/* Whether key's stage partition is known to hold no part and no mark
 * (learned, and no run wrote it since, or its release went through). */
bool exec_wap_clean(const struct wap_tables *t, const char *key);
/* keys[0..n)'s marks and stage partitions dropped (a release). */
void exec_wap_released(const struct wap_tables *t, const char *const *keys,
		       size_t n);
/* Everything this process knew of its stages forgotten (the executor
 * freed, its workers joined): a new executor sweeps and learns again. */
void exec_wap_known_forget(void);
/* exec_wap_set.c: part i's before figures (from the live table) and
 * after figures (from the stage) read by one statement, after the fill
 * (the live partition is not written before the REPLACE), into
 * run->guards[i], and the sums when sums: 0, 1 not read (the metrics
 * bind values, or the statement failed), -1 interrupted. */
int exec_wap_read_both(struct exec_flight *fl, struct wh_conn *conn,
		       const struct wap_tables *t, size_t i,
		       char sum_before[32], char sum_after[32],
		       struct err *err);
/* Every part of [from, from + n) marked, one INSERT a chunk (WAP-1). */
int exec_wap_mark_set(struct exec_flight *fl, struct wh_conn *conn,
		      const struct wap_tables *t, size_t from, size_t n,
		      struct err *err);
/* The keys of parts [from, from + n) of the run, an array to free (its
 * strings are the run's). */
const char **exec_wap_keys(const struct exec_run *run, size_t from, size_t n);
/* Drop the marks of keys[0..n) (WAP-1): the runs holding one are read,
 * then their partitions of the marks' table dropped, a run's marks being
 * one partition (so the marks of the run's other keys go too: a key
 * whose mark is gone is cleared and built again, never published
 * unaudited).  Nothing is dropped when none is marked. */
int exec_wap_drop_marks(struct wh_conn *conn, const struct wap_tables *t,
			const char *const *keys, size_t n, struct err *err);
/* Outside a run: the marks, then the stage partitions, of keys. */
int exec_wap_drop_keys(struct wh_conn *conn, const struct wap_tables *t,
		       const char *const *keys, size_t n, struct err *err);
/* exec_wap_key.c: the target's partition key against jd's grain (the
 * table must exist; *distributed, when not NULL: it is a Distributed
 * table, whose local table's key was checked). */
int exec_wap_key_of(struct wh_conn *conn, const struct config *cfg,
		    const struct job_def *jd, bool *distributed,
		    struct err *err);
int exec_wap_key(struct wh_conn *conn, const struct config *cfg,
		 const struct job_def *jd, struct err *err);
/* The audit of part i's stage (params: its :partition first) that the
 * target's partition key calls for: a key that is the column itself
 * holding the grain's first day (chsql_key_shape, as the last check of
 * the job's table found it) refuses a stage holding rows of the
 * partition whose column is another day (their stage partitions
 * dropped, best effort); 0 for any other key. */
/* Whether the job's table is read FINAL: its engine (as the last check
 * found it) a Replacing or Collapsing one, whose parts hold several
 * versions of a key until merged. */
bool exec_wap_key_final(const struct exec_run *run);
int exec_wap_key_audit(struct wh_conn *conn, const struct exec_run *run,
		       const struct wh_param *params, size_t nparams,
		       const char *stage, struct err *err);
/* exec_wap_key.c: whether jd's table's partition key is compound, as the
 * last check of it found it (chparts.h). */
bool exec_wap_key_compound(const struct config *cfg, const struct job_def *jd);
/*
 * exec_wap_parts.c, for a table whose key is compound (t->compound):
 * the publish of keys[0..n) as the exact set of each one's partitions,
 * the ids of the stage's and of the live table's read now (one
 * statement), into *sql (NULL: no id at all, nothing to send), refused
 * for a key of run's own table whose audit counted rows in the stage
 * but whose stage holds no partition (a first element that is no Date,
 * or a DateTime, whose text is not the key's); the drop
 * of each of keys[0..n)'s stage partitions (the ids read, then one ALTER
 * when there are any), `wait`: after an ALTER of the stage first, which
 * waits for the INSERTs into it still running (exec_wap_set.c's sweep).
 */
int exec_wap_parts_publish_sql(const struct exec_run *run,
			       struct wh_conn *conn, const struct wap_tables *t,
			       const char *const *keys, size_t n, char **sql,
			       struct err *err);
int exec_wap_parts_drop(struct wh_conn *conn, const char *stage,
			const char *const *keys, size_t n, bool wait,
			struct err *err);
/* The ids of key's partitions in t's stage and live table as run's
 * after figures read them on conn (exec_wap_read_after), kept for its
 * publish there, which then reads none (*ids emptied: they are kept). */
void exec_wap_parts_keep(const struct exec_run *run,
			 const struct wh_conn *conn,
			 const struct wap_tables *t, const char *key,
			 struct chparts *ids);
/* exec_wap_fill.c: one statement of the run (n = 1: sets[0] its
 * params), or the one statement for each of sets[0..n) at once (the
 * driver's exec_many); not when the run is being stopped; the error
 * prefixed with `what` unless interrupted. */
int exec_wap_steps(struct exec_flight *fl, struct wh_conn *conn,
		   const char *what, const char *sql,
		   const struct wh_param *const *sets, size_t nparams,
		   size_t n, struct err *err);
/* A batch's stage filled over its interval (:partition not bound): by
 * one statement, or, when the run's width allows and the job is no
 * running total, by up to width statements at once, each over a
 * consecutive share of the parts in time order, as equal as can be. */
int exec_wap_batch_fill(struct exec_flight *fl, struct wh_conn *conn,
			const struct wap_tables *t, struct err *err);
/* The request that marks part i (exec_wap_set.c). */
int64_t exec_wap_request(const struct exec_run *run, size_t i);

#endif
