/*
 * fresh.c - the partitions owed by jobs with a deadline (see fresh.h).
 *
 * Items live in an array (for the scans of fresh_next, fresh_advance and
 * fresh_late, linear in the open work of deadline jobs) and in a hash by
 * (job, key) for track and done, which the scheduler calls on every run.
 * A binary heap for fresh_next was rejected: the set is small (open work)
 * and status already scans it.
 */
#include "fresh.h"
#include "text.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRESH_HASH 1024

struct fitem {
	struct fresh_item it;
	char *job;
	size_t idx;
	struct fitem *hnext;
};

struct fresh {
	struct fitem **items;
	size_t n, cap;
	struct fitem *hash[FRESH_HASH];
};

struct fresh *
fresh_new(void)
{
	return xcalloc(1, sizeof(struct fresh));
}

void
fresh_free(struct fresh *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->items[i]->job);
		free(f->items[i]);
	}
	free(f->items);
	free(f);
}

/* The item of (job, key), or NULL. */
static struct fitem *
fresh_find(const struct fresh *f, const char *job, const char *key)
{
	for (struct fitem *x = f->hash[text_hash_pair(job, key) % FRESH_HASH]; x; x = x->hnext)
		if (strcmp(x->it.key, key) == 0 && strcmp(x->job, job) == 0)
			return x;
	return NULL;
}

void
fresh_track(struct fresh *f, const char *job, part_t part, const char *key,
	    int64_t since, int64_t deadline, int64_t request)
{
	struct fitem *x = fresh_find(f, job, key);
	unsigned h;

	if (x != NULL) {
		if (since < x->it.since && !x->it.late)
			x->it.since = since;
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->job = xstrdup(job);
	x->it.job = x->job;
	snprintf(x->it.key, sizeof x->it.key, "%s", key);
	x->it.part = part;
	x->it.since = since;
	x->it.deadline = deadline;
	x->it.request = request;
	h = text_hash_pair(job, key) % FRESH_HASH;
	x->hnext = f->hash[h];
	f->hash[h] = x;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->items = xreallocarray(f->items, f->cap, sizeof *f->items);
	}
	x->idx = f->n;
	f->items[f->n++] = x;
}

/* Unlink and free item x. */
static void
fresh_remove(struct fresh *f, struct fitem *x)
{
	struct fitem **pp = &f->hash[text_hash_pair(x->job, x->it.key) % FRESH_HASH];

	while (*pp != x)
		pp = &(*pp)->hnext;
	*pp = x->hnext;
	f->items[x->idx] = f->items[--f->n];
	f->items[x->idx]->idx = x->idx;
	free(x->job);
	free(x);
}

void
fresh_done(struct fresh *f, const char *job, const char *key)
{
	struct fitem *x = fresh_find(f, job, key);

	if (x != NULL)
		fresh_remove(f, x);
}

void
fresh_set_deadline(struct fresh *f, const char *job, int64_t deadline)
{
	for (size_t i = 0; i < f->n;) {
		struct fitem *x = f->items[i];

		if (strcmp(x->job, job) != 0) {
			i++;
		} else if (deadline <= 0) {
			fresh_remove(f, x); /* the last item moved to i */
		} else {
			x->it.deadline = deadline;
			i++;
		}
	}
}

int64_t
fresh_next(const struct fresh *f)
{
	int64_t next = INT64_MAX;

	for (size_t i = 0; i < f->n; i++) {
		const struct fresh_item *it = &f->items[i]->it;

		if (!it->late && it->since + it->deadline < next)
			next = it->since + it->deadline;
	}
	return next;
}

/* Order items by deadline, then job and key. */
static int
fresh_cmp(const void *a, const void *b)
{
	const struct fresh_item *x = &(*(struct fitem *const *)a)->it;
	const struct fresh_item *y = &(*(struct fitem *const *)b)->it;
	int64_t dx = x->since + x->deadline, dy = y->since + y->deadline;
	int c;

	if (dx != dy)
		return dx < dy ? -1 : 1;
	if ((c = strcmp(x->job, y->job)) != 0)
		return c;
	return x->part < y->part ? -1 : x->part > y->part;
}

int64_t
fresh_advance(struct fresh *f, int64_t now, fresh_late_cb cb, void *data)
{
	struct fitem **due = NULL;
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++) {
		struct fitem *x = f->items[i];

		if (!x->it.late && x->it.since + x->it.deadline <= now) {
			due = xreallocarray(due, n + 1, sizeof *due);
			due[n++] = x;
		}
	}
	if (n > 1)
		qsort(due, n, sizeof *due, fresh_cmp);
	for (size_t i = 0; i < n; i++)
		due[i]->it.late = true;
	/* callbacks last: they may not change the set */
	for (size_t i = 0; cb != NULL && i < n; i++)
		cb(&due[i]->it, data);
	free(due);
	return (int64_t)n;
}

int64_t
fresh_late(const struct fresh *f, const char *job, part_t *oldest,
	   char oldest_key[CAL_KEY_MAX])
{
	int64_t n = 0;
	const struct fresh_item *old = NULL;

	for (size_t i = 0; i < f->n; i++) {
		const struct fresh_item *it = &f->items[i]->it;

		if (!it->late || strcmp(it->job, job) != 0)
			continue;
		n++;
		if (old == NULL || it->part < old->part)
			old = it;
	}
	if (old != NULL) {
		if (oldest != NULL)
			*oldest = old->part;
		if (oldest_key != NULL)
			snprintf(oldest_key, CAL_KEY_MAX, "%s", old->key);
	}
	return n;
}

size_t
fresh_size(const struct fresh *f)
{
	return f->n;
}

void
fresh_each_late(const struct fresh *f, const char *job,
		void (*cb)(const struct fresh_item *it, void *data), void *data)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i]->it.late && strcmp(f->items[i]->job, job) == 0)
			cb(&f->items[i]->it, data);
}
