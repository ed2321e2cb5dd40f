/*
 * olrun.c - the runs' OpenLineage events (see olrun.h).
 */
#include "olrun.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "olevent.h"
#include "xalloc.h"

/* A run begun and not ended: its UUID. */
struct olrun_open {
	int64_t run_id;
	char uuid[OL_UUID_LEN];
};

struct olrun {
	struct sched *s;
	struct olsend *send;
	struct olrun_open *open;
	size_t nopen;
};

/* A fresh version 4 UUID. */
static void
olrun_uuid(char out[OL_UUID_LEN])
{
	uint8_t b[16];
	size_t got = 0;

	while (got < sizeof b) {
		ssize_t n = getrandom(b + got, sizeof b - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	ol_uuid_v4(b, out);
}

/* The run's UUID: drawn when it begins, taken back when it ends (one
 * that never began here, a skip: a fresh one). */
static void
olrun_id(struct olrun *r, const struct sched_run_fact *f,
	 char out[OL_UUID_LEN])
{
	if (f->state == MS_RUNNING) {
		olrun_uuid(out);
		r->open = xreallocarray(r->open, r->nopen + 1, sizeof *r->open);
		r->open[r->nopen].run_id = f->run_id;
		memcpy(r->open[r->nopen].uuid, out, OL_UUID_LEN);
		r->nopen++;
		return;
	}
	for (size_t i = 0; i < r->nopen; i++)
		if (r->open[i].run_id == f->run_id) {
			memcpy(out, r->open[i].uuid, OL_UUID_LEN);
			r->open[i] = r->open[--r->nopen];
			return;
		}
	olrun_uuid(out);
}

/* The job's tables named per OpenLineage (none without a warehouse). */
static struct ol_dataset *
olrun_datasets(const struct config *cfg, const struct job_def *j,
	       char *const *tables, size_t n)
{
	struct ol_dataset *d;

	if (j->warehouse < 0 || n == 0)
		return NULL;
	d = xcalloc(n, sizeof *d);
	for (size_t i = 0; i < n; i++)
		ol_dataset_name(&cfg->warehouses[j->warehouse], tables[i],
				&d[i]);
	return d;
}

static enum ol_type
olrun_type(enum mstate st)
{
	switch (st) {
	case MS_RUNNING:
		return OL_START;
	case MS_FAILED:
		return OL_FAIL;
	case MS_CANCELLED:
		return OL_ABORT;
	default:
		return OL_COMPLETE;
	}
}

/* One run fact: its event, queued. */
static void
olrun_fact_cb(void *data, const struct sched_run_fact *f)
{
	struct olrun *r = data;
	const struct config *cfg = sched_config(r->s);
	const struct job_def *j = f->job;
	char uuid[OL_UUID_LEN], parent[OL_UUID_LEN], seed[256];
	struct ol_dataset *in, *out;
	struct ol_run_facts e;

	olrun_id(r, f, uuid);
	memset(&e, 0, sizeof e);
	e.type = olrun_type(f->state);
	e.run_id = uuid;
	e.ns = cfg->ol_namespace;
	e.job = j->name;
	e.event_ms = f->now_ms;
	e.nominal_start = f->t0;
	e.nominal_end = f->t1;
	e.request_id = f->request_id;
	e.request_kind = f->request_kind;
	e.partition = f->key;
	e.attempt = f->attempt;
	e.code_version = j->code_version;
	e.skipped = f->state == MS_SKIPPED;
	e.error = f->error;
	if (strcmp(f->request_job, j->name) != 0) {
		snprintf(seed, sizeof seed, "backfilld %s request %" PRId64
			 " %" PRId64, cfg->ol_namespace, f->request_id,
			 f->request_created_ms);
		ol_uuid_of(seed, parent);
		e.parent_run_id = parent;
		e.parent_job = f->request_job;
	}
	in = olrun_datasets(cfg, j, j->reads, j->nreads);
	out = olrun_datasets(cfg, j, j->writes, j->nwrites);
	e.inputs = in;
	e.ninputs = in != NULL ? j->nreads : 0;
	e.outputs = out;
	e.noutputs = out != NULL ? j->nwrites : 0;
	olsend_push(r->send, ol_event_json(&e));
	free(in);
	free(out);
}

struct olrun *
olrun_new(struct sched *s, struct olsend *send)
{
	struct olrun *r = xcalloc(1, sizeof *r);

	r->s = s;
	r->send = send;
	sched_on_run_fact(s, olrun_fact_cb, r);
	return r;
}

void
olrun_free(struct olrun *r)
{
	if (r == NULL)
		return;
	free(r->open);
	free(r);
}
