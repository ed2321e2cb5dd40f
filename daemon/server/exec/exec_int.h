/*
 * exec_int.h - what the executor (exec*.c, exec_priv.h) shares with the
 * files that run one kind of SQL run for it on a worker thread
 * (exec_wap.c: ClickHouse).  Worker threads only: nothing here touches
 * the loop.
 */
#ifndef BACKFILLD_EXEC_INT_H
#define BACKFILLD_EXEC_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "exec.h"
#include "wh.h"

struct exec_flight;

/* The run a flight carries. */
struct exec_run *exec_flight_run(struct exec_flight *fl);
/* The run's stop flag (non-zero once it is being stopped), for a
 * driver's watch() on a connection of the run's own. */
const atomic_int *exec_flight_stop(struct exec_flight *fl);
/* Several hosts: 0 while this node cannot have been declared dead yet
 * (with a third of its lease to spare), else -1 with err "WHEN: this
 * node's lease could have run out ..." (exec_fence_clock). */
int exec_fence_check(struct exec_flight *fl, const char *when,
		     struct err *err);
/* Whether the run is being stopped (timeout, cancel, shutdown). */
bool exec_stopping(struct exec_flight *fl);
/* exec_stopping, with err "interrupted". */
bool exec_interrupted(struct exec_flight *fl, struct err *err);
/* Every check of the job for part i, each outcome recorded: 0 all passed,
 * -1 one failed, -2 one could not run (err filled). */
int exec_checks(struct exec_flight *fl, struct wh_conn *conn, size_t i,
		const struct wh_param *params, size_t nparams,
		struct err *err);
/* params[0..4]: part p's :partition, :partition_start, :partition_end,
 * :partition_start_utc, :partition_end_utc. */
void exec_part_params(const struct exec_part *p,
		      struct wh_param params[EXEC_NPARAMS]);
/* The interval of a batch's parts (earliest start to latest end, by
 * instant): span[0..3] :partition_start, :partition_end and their _utc. */
void exec_batch_span(const struct exec_part *parts, size_t n,
		     struct wh_param span[4]);
/* Begin the run's transaction on conn (the driver's begin()). */
int exec_begin(struct wh_conn *conn, struct err *err);
/* The driver for a kind of warehouse, or NULL when not built in. */
const struct wh_driver *exec_driver(enum wh_kind kind);

/* A shard published (run->shard_cb on the loop, waited for): 0, or -1
 * with err when it could not be recorded; 0 at once without shard_cb. */
int exec_shard_published(struct exec_flight *fl,
			 const struct exec_shard_publish *pub,
			 struct err *err);

/* The run published and kept its stage partitions for the record
 * (exec_wap.c, WAP-2): once the caller has recorded it, they go. */
void exec_flight_set_staged(struct exec_flight *fl);

/* exec_wap.c: a run, and a proof, on ClickHouse (key_checked: the
 * table's partition key passed exec_wap_key on this connection already,
 * exec_conn.c's per-connection cache). */
int exec_sql_wap(struct exec_flight *fl, struct wh_conn *conn,
		 bool key_checked, struct err *err);
int exec_sql_wap_verify(struct exec_flight *fl, struct wh_conn *conn,
			struct err *err);
/* After a run (exec_wap.c): log the line of the statement conn stopped
 * on the server for it (wh_driver.stopped), if any; shard: 1-based, 0
 * for none. */
void exec_log_stopped(const struct exec_run *run, struct wh_conn *conn,
		      size_t shard);
/* The marks and stage partitions of parts (skip[i]: not that one; skip
 * NULL: all), once their run is recorded; best effort, outside a run. */
void exec_wap_release(struct wh_conn *conn, const struct config *cfg,
		      const struct warehouse_def *wh, const struct job_def *jd,
		      const struct exec_part *parts, const bool *skip,
		      size_t n);
/* At start: the partitions whose mark is stale (exec_done_stale),
 * malloc'd into *parts, *n of them. */
int exec_wap_stale(struct wh_conn *conn, const struct config *cfg,
		   const struct job_def *jd, const int64_t *keep, size_t nkeep,
		   const struct exec_done *done, size_t ndone,
		   struct exec_part **parts, size_t *n, struct err *err);
/* exec_stage.c: whether a mark of `key` naming `request` is stale: no
 * open request of keep[0..nkeep) is it, or done[0..ndone) says it has
 * recorded key succeeded (its release was lost to a crash). */
bool exec_done_stale(int64_t request, const char *key, const int64_t *keep,
		     size_t nkeep, const struct exec_done *done, size_t ndone);

#endif
