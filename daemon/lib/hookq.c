/*
 * hookq.c - the bounds on the operator's hooks (see hookq.h).
 */
#include "hookq.h"

void
hookq_init(struct hookq *q, int concurrency, int queue)
{
	q->running = q->queued = 0;
	q->dropped = 0;
	q->spell = false;
	hookq_bound(q, concurrency, queue);
}

void
hookq_bound(struct hookq *q, int concurrency, int queue)
{
	q->concurrency = concurrency < 1 ? 1 : concurrency;
	q->queue = queue < 0 ? 0 : queue;
}

enum hookq_verdict
hookq_fire(struct hookq *q)
{
	/* nothing waits ahead of it and there is room: it runs */
	if (q->queued == 0 && q->running < q->concurrency) {
		q->running++;
		return HOOKQ_RUN;
	}
	if (q->queued < q->queue) {
		q->queued++;
		return HOOKQ_QUEUE;
	}
	q->dropped++;
	if (q->spell)
		return HOOKQ_DROP;
	q->spell = true;
	return HOOKQ_DROP_LOG;
}

void
hookq_done(struct hookq *q)
{
	if (q->running > 0)
		q->running--;
	if (q->queued == 0)
		q->spell = false;
}

bool
hookq_next(struct hookq *q)
{
	if (q->queued == 0 || q->running >= q->concurrency)
		return false;
	q->queued--;
	q->running++;
	if (q->queued == 0)
		q->spell = false;
	return true;
}

bool
hookq_out_take(struct hookq_out *o, size_t len, size_t cost, bool nl)
{
	if (!o->full && o->logged + cost <= HOOKQ_OUTPUT_MAX) {
		o->logged += cost;
		return true;
	}
	o->full = true;
	o->dropped += len + (nl ? 1 : 0);
	return false;
}

void
hookq_out_cut(struct hookq_out *o, size_t n)
{
	o->dropped += n;
}
