/*
 * keycheck.h - the start and reload check of ClickHouse targets
 * (exec_check_partition_keys: each job's table reached, its partition
 * key against the job's grain) run on libuv's thread pool, so that the
 * loop (the control socket, runs finishing) goes on while a server is
 * slow to answer.  Each query of the check is bounded (10 s to connect
 * and answer), so a check ends even when the server never answers.
 */
#ifndef BACKFILLD_KEYCHECK_H
#define BACKFILLD_KEYCHECK_H

#include <uv.h>

#include "config.h"
#include "err.h"

/* rc 0, or -1 with err (EXIT_BAD_INPUT, "FILE:LINE:COL: job ..."). */
typedef void keycheck_done_fn(void *arg, int rc, const struct err *err);

/*
 * Check cfg's ClickHouse jobs off the loop; done(arg, ...) is called once
 * on the loop thread: before keycheck_start returns when cfg has no
 * ClickHouse warehouse (nothing to reach), later otherwise.  The caller
 * keeps cfg referenced until done.  A loop that is run to its end waits
 * for the check (a libuv request in flight).
 */
void keycheck_start(uv_loop_t *loop, const struct config *cfg,
		    keycheck_done_fn *done, void *arg);

#endif
