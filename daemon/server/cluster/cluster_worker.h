/*
 * cluster_worker.h - the daemon on one PostgreSQL state store shared by
 * several hosts (docs/several-hosts.md): the glue between the cluster
 * (cluster.h), the scheduler (the planner's side: its runs are offered,
 * their results come back through their done_cb) and the executor (the
 * worker's side: claimed runs run here, their results are finished).
 */
#ifndef BACKFILLD_CLUSTER_WORKER_H
#define BACKFILLD_CLUSTER_WORKER_H

#include <stdbool.h>
#include <uv.h>

#include "cluster.h"
#include "err.h"

struct cworker;
struct sched;
struct store;
struct exec;

struct cworker_opts {
	uv_loop_t *loop;
	struct sched *sched;
	struct store *store;
	struct exec *exec;
	const char *log_dir;
	/* this node stopped being the planner after it was one: the daemon
	 * restarts from the store (its manifest is no longer the truth) */
	void (*deposed_cb)(void *data);
	/* control requests wait in the mailbox (control_mail) */
	void (*mail_cb)(void *data);
	/* role or database state changed (for STATUS=) */
	void (*changed_cb)(void *data);
	void *data;
};

int cworker_open(const struct cworker_opts *o, struct cworker **out,
		 struct err *err);
/* A reloaded configuration: its hash and lease go to the cluster. */
void cworker_reload(struct cworker *w);
/* Stop claiming (shutdown begins); a planner hands its runs in flight and
 * the lease over to the next planner. */
void cworker_stop(struct cworker *w);
/* Is another node alive (its heartbeat within the lease)?  A planner
 * that stops hands its runs over only then; alone, it stops as a single
 * host does (false too when the database cannot say). */
bool cworker_others_alive(struct cworker *w);
/* Stop claiming; cb once the local runs ended and the cluster closed. */
void cworker_close(struct cworker *w, void (*cb)(void *), void *arg);
void cworker_free(struct cworker *w);
/* Never take the lease again in this process (a deposed planner that
 * waits to restart in place: it plans nothing meanwhile). */
void cworker_resign(struct cworker *w);
/* Cancel the local runs (shutdown grace over). */
void cworker_cancel_all(struct cworker *w);
int cworker_running(const struct cworker *w);
/* The cluster and its driver, for status and control forwarding. */
struct cluster *cworker_cluster(struct cworker *w);
const struct cluster_driver *cworker_driver(void);

#endif
