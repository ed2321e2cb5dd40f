/*
 * olsend.c - the OpenLineage transport's thread (see olsend.h for its
 * rules OL-1 to OL-5).
 *
 * One mutex guards the queue (a ring of owned strings), the counters and
 * the stop flag; the thread takes an event out, sends it without the
 * lock, and waits on the condition (the backoff is a timed wait, so a
 * close cuts it short).  The loop thread only pushes and reads counters.
 */
#include "olsend.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock_ms.h"
#include "log.h"
#include "module.h"
#include "olcurl.h"
#include "xalloc.h"

#define OLSEND_ATTEMPTS 4
#define OLSEND_BACKOFF_MS 200

struct olsend {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char **ring;
	size_t cap, head, n;
	bool stopping;
	int64_t counts[OLSEND_NCOUNTS];
	/* the thread's own */
	char *url;
	char *path;
	int fd;
	long timeout_s;
	olcurl_post_fn post;
	bool failing;          /* OL-3: in a failure streak */
	int64_t stop_by_ms;    /* OL-5: the close's deadline */
};

const char *
olsend_count_name(enum olsend_count c)
{
	static const char *const names[] = { "sent", "dropped", "failed" };

	return names[c];
}

/* The monotonic clock in ms (for the close's deadline). */
static int64_t
olsend_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Count one event's end c; OL-3's log lines. */
static void
olsend_done(struct olsend *o, enum olsend_count c, const char *why)
{
	pthread_mutex_lock(&o->mu);
	o->counts[c]++;
	pthread_mutex_unlock(&o->mu);
	if (c == OLSEND_FAILED && !o->failing) {
		log_warn("openlineage: cannot deliver run events to %s: %s;"
			 " counted in backfilld_lineage_events_total"
			 "{result=\"failed\"}, runs go on",
			 o->url != NULL ? o->url : o->path, why);
		o->failing = true;
	} else if (c == OLSEND_SENT && o->failing) {
		log_notice("openlineage: run events delivered to %s again",
			   o->url != NULL ? o->url : o->path);
		o->failing = false;
	}
}

/* Wait ms unless a close comes first: false when stopping. */
static bool
olsend_backoff(struct olsend *o, int64_t ms)
{
	struct timespec ts = clock_read(CLOCK_REALTIME);
	bool stop;

	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&o->mu);
	while (!o->stopping &&
	       pthread_cond_timedwait(&o->cv, &o->mu, &ts) != ETIMEDOUT)
		;
	stop = o->stopping;
	pthread_mutex_unlock(&o->mu);
	return !stop;
}

/* OL-2: POST one event, again after a backoff while that can help. */
static void
olsend_http(struct olsend *o, const char *text)
{
	char why[256];
	enum olcurl_result r = OLCURL_RETRY;

	for (int k = 0; k < OLSEND_ATTEMPTS; k++) {
		if (k > 0 && !olsend_backoff(o, (int64_t)OLSEND_BACKOFF_MS << (k - 1)))
			break;
		r = o->post(o->url, text, strlen(text), o->timeout_s, why,
			    sizeof why);
		if (r != OLCURL_RETRY)
			break;
	}
	olsend_done(o, r == OLCURL_OK ? OLSEND_SENT : OLSEND_FAILED, why);
}

/* Append one line to the file (OL-4: fsync'd by the caller). */
static void
olsend_file(struct olsend *o, const char *text)
{
	size_t len = strlen(text), off = 0;
	char *line = xasprintf("%s\n", text);
	char why[256];

	len++;
	while (off < len) {
		ssize_t w = write(o->fd, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			snprintf(why, sizeof why, "write: %s", strerror(errno));
			free(line);
			olsend_done(o, OLSEND_FAILED, why);
			return;
		}
		off += (size_t)w;
	}
	free(line);
	olsend_done(o, OLSEND_SENT, NULL);
}

/* The next event (NULL: stop), fsyncing the file when the queue ran
 * empty (OL-4); past the close's deadline the rest are dropped (OL-5). */
static char *
olsend_take(struct olsend *o)
{
	char *t = NULL;

	pthread_mutex_lock(&o->mu);
	while (o->n == 0 && !o->stopping) {
		if (o->fd >= 0) {
			pthread_mutex_unlock(&o->mu);
			if (fsync(o->fd) < 0)
				log_warn("openlineage: fsync %s: %s", o->path,
					 strerror(errno));
			pthread_mutex_lock(&o->mu);
			if (o->n > 0 || o->stopping)
				break;
		}
		pthread_cond_wait(&o->cv, &o->mu);
	}
	if (o->stopping && olsend_mono_ms() > o->stop_by_ms) {
		o->counts[OLSEND_DROPPED] += (int64_t)o->n;
		while (o->n > 0) {
			free(o->ring[o->head]);
			o->head = (o->head + 1) % o->cap;
			o->n--;
		}
	}
	if (o->n > 0) {
		t = o->ring[o->head];
		o->head = (o->head + 1) % o->cap;
		o->n--;
	}
	pthread_mutex_unlock(&o->mu);
	return t;
}

static void *
olsend_main(void *data)
{
	struct olsend *o = data;
	char *t;

	while ((t = olsend_take(o)) != NULL) {
		if (o->url != NULL)
			olsend_http(o, t);
		else
			olsend_file(o, t);
		free(t);
	}
	if (o->fd >= 0 && fsync(o->fd) < 0)
		log_warn("openlineage: fsync %s: %s", o->path, strerror(errno));
	return NULL;
}

int
olsend_open(const struct config *cfg, struct olsend **out, struct err *err)
{
	struct olsend *o;
	char why[512];

	*out = NULL;
	if (cfg->ol_url == NULL && cfg->ol_file == NULL)
		return 0;
	o = xcalloc(1, sizeof *o);
	o->fd = -1;
	if (cfg->ol_url != NULL) {
		o->post = (olcurl_post_fn)module_symbol_in(
			"backfilld-ch.so", "olcurl_post",
			"the OpenLineage HTTP transport (libcurl4)", why,
			sizeof why);
		if (o->post == NULL) {
			err_set(err, ERR_NONE, "openlineage url: %s", why);
			free(o);
			return -1;
		}
		o->url = xstrdup(cfg->ol_url);
	} else {
		o->fd = open(cfg->ol_file, O_WRONLY | O_APPEND | O_CREAT |
			     O_CLOEXEC, 0640);
		if (o->fd < 0) {
			err_set(err, ERR_NONE, "openlineage file: cannot open"
				" %s: %s", cfg->ol_file, strerror(errno));
			free(o);
			return -1;
		}
		o->path = xstrdup(cfg->ol_file);
	}
	o->timeout_s = (long)cfg->ol_timeout;
	o->cap = (size_t)cfg->ol_queue;
	o->ring = xcalloc(o->cap, sizeof *o->ring);
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	if (pthread_create(&o->thread, NULL, olsend_main, o) != 0)
		xalloc_exhausted("the OpenLineage thread");
	*out = o;
	return 0;
}

void
olsend_push(struct olsend *o, char *text)
{
	pthread_mutex_lock(&o->mu);
	if (o->n == o->cap) { /* OL-1: the oldest goes */
		free(o->ring[o->head]);
		o->head = (o->head + 1) % o->cap;
		o->n--;
		o->counts[OLSEND_DROPPED]++;
	}
	o->ring[(o->head + o->n) % o->cap] = text;
	o->n++;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

int64_t
olsend_count(struct olsend *o, enum olsend_count c)
{
	int64_t v;

	pthread_mutex_lock(&o->mu);
	v = o->counts[c];
	pthread_mutex_unlock(&o->mu);
	return v;
}

void
olsend_close(struct olsend *o)
{
	if (o == NULL)
		return;
	pthread_mutex_lock(&o->mu);
	o->stopping = true;
	o->stop_by_ms = olsend_mono_ms() + o->timeout_s * 1000;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->thread, NULL);
	if (o->fd >= 0)
		close(o->fd);
	for (; o->n > 0; o->n--) {
		free(o->ring[o->head]);
		o->head = (o->head + 1) % o->cap;
	}
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	free(o->ring);
	free(o->url);
	free(o->path);
	free(o);
}
