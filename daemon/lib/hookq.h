/*
 * hookq.h - the bounds on the operator's hooks, as decisions without I/O
 * (daemon/server/base/hooks.c applies them; docs/configuration.md, "Freshness
 * and hooks").
 *
 * At most `concurrency` hooks run at once (hook_concurrency); a hook fired
 * while they all run waits in a first-in first-out queue of at most
 * `queue` hooks (hook_queue); one fired while the queue is full is
 * dropped: counted, and logged once per spell of a full queue (the spell
 * ends when the queue is empty again).  Each hook's output is logged up to
 * HOOKQ_OUTPUT_MAX bytes of log lines; the rest of it is counted, not
 * written, and its size logged once when the hook ends.
 */
#ifndef BACKFILLD_HOOKQ_H
#define BACKFILLD_HOOKQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The log bytes one hook's output may take (its lines with their
 * "hook=... output: " prefix and newline). */
#define HOOKQ_OUTPUT_MAX 16384
/* hook_concurrency and hook_queue when the configuration has none. */
#define HOOKQ_CONCURRENCY_DEFAULT 4
#define HOOKQ_QUEUE_DEFAULT 4096
/* Their largest values. */
#define HOOKQ_CONCURRENCY_MAX 1024
#define HOOKQ_QUEUE_MAX 100000

struct hookq {
	int concurrency;   /* hooks running at once, at most */
	int queue;         /* hooks waiting, at most */
	int running;       /* now */
	int queued;        /* now */
	int64_t dropped;   /* since the start */
	bool spell;        /* a drop was logged and the queue has not emptied */
};

enum hookq_verdict {
	HOOKQ_RUN,         /* start it now (counted running) */
	HOOKQ_QUEUE,       /* put it at the queue's tail (counted queued) */
	HOOKQ_DROP,        /* the queue is full: dropped (counted) */
	HOOKQ_DROP_LOG,    /* the same, the first of its spell: log it */
};

/* A queue with these bounds (concurrency >= 1, queue >= 0), empty. */
void hookq_init(struct hookq *q, int concurrency, int queue);
/* New bounds (on reload); what runs goes on, what is queued stays. */
void hookq_bound(struct hookq *q, int concurrency, int queue);
/* A hook is fired: what to do with it. */
enum hookq_verdict hookq_fire(struct hookq *q);
/* A running hook ended (or could not start). */
void hookq_done(struct hookq *q);
/* Whether the queue's head may start now; when true it is counted running
 * (the caller takes it off the queue and starts it). */
bool hookq_next(struct hookq *q);

/* A hook's output as logged so far. */
struct hookq_out {
	size_t logged;     /* log bytes written for its output */
	uint64_t dropped;  /* bytes of its output not written */
	bool full;         /* a line did not fit: nothing more is written */
};

/* May a line of `len` bytes of output (`nl`: and its newline), taking
 * `cost` bytes of log, be logged?  The first line that does not fit in
 * HOOKQ_OUTPUT_MAX and every line after it are counted in dropped. */
bool hookq_out_take(struct hookq_out *o, size_t len, size_t cost, bool nl);
/* Bytes of output not written besides whole lines (a line's tail beyond
 * what one log line holds). */
void hookq_out_cut(struct hookq_out *o, size_t n);

#endif
