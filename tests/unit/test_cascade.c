/*
 * test_cascade.c - a job in its own upstream (a running total; DESIGN,
 * "A job in its own upstream"): the configuration that accepts it, the
 * planner's cascade (plan.h, Cascades), its bound, the relink of a
 * request loaded at start, dispatch's order across requests
 * (SCHED-8, pick.c) and a running total's batch (SCHED-9).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "config.h"
#include "estimate.h"
#include "lineage.h"
#include "manifest.h"
#include "pick.h"
#include "plan.h"
#include "plan_fixture.h"
#include "schedule.h"

/* fct (day) -> rtd (day, reads its own previous day) -> weekly (week) */
static const char rtd_yaml[] =
	"state_db: s.db\n"
	"socket: s.sock\n"
	"warehouses:\n"
	"  - {name: w, sqlite: w.db}\n"
	"jobs:\n"
	"  - {name: fct, warehouse: w, partition: day, sql: SELECT 1}\n"
	"  - {name: rtd, warehouse: w, partition: day, max_backfill: 13,"
	" concurrency: 2,"
	" upstream: [fct, {job: rtd, lookback: 1}], sql: SELECT 1}\n"
	"  - {name: weekly, warehouse: w, partition: week, upstream: [rtd],"
	" sql: SELECT 1}\n"
	"  - {name: bal, warehouse: w, partition: day, start: 2026-01-01,"
	" upstream: [{job: bal, lookback: 2}], sql: SELECT 1}\n";

static struct config *cfg;
static int fct, rtd, weekly;

static void
setup(void)
{
	cfg = fixture_config("/tmp/cascade.yaml", rtd_yaml);
	fct = config_job_index(cfg, "fct");
	rtd = config_job_index(cfg, "rtd");
	weekly = config_job_index(cfg, "weekly");
}

static void
teardown(void)
{
	config_unref(cfg);
}

/* "job key" of plan item i. */
static const char *
item_of(const struct plan *p, size_t i)
{
	static char buf[CAL_KEY_MAX + 64];

	return fixture_item(cfg, p, i, buf, sizeof buf);
}

/* What plan item i waits for, as "job key, job key". */
static const char *
deps_of(const struct plan *p, size_t i)
{
	static char buf[1024];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t d = 0; d < p->items[i].ndeps; d++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s",
					d ? ", " : "",
					item_of(p, p->deps[p->items[i].dep_off
							   + d]));
	return buf;
}

/* The built array with rtd's newest built partition at key (NULL:
 * none). */
static struct plan_built *
built_at(const char *key)
{
	struct plan_built *b = calloc(cfg->njobs, sizeof *b);

	if (key != NULL) {
		b[rtd].has = true;
		b[rtd].newest = day_of(key);
	}
	return b;
}

/* The job in its own upstream is accepted with its lookback, kept out of
 * the graph's walks. */
START_TEST(config_accepts_self)
{
	const struct job_def *j = &cfg->jobs[rtd];
	const struct job_def *b = &cfg->jobs[config_job_index(cfg, "bal")];
	struct part_range r;

	ck_assert_int_eq(j->self_lookback, 1);
	ck_assert_uint_eq(j->nupstream, 1);
	ck_assert_int_eq(j->upstream_idx[0], fct);
	ck_assert_int_eq(b->self_lookback, 2);
	ck_assert_uint_eq(b->nupstream, 0);
	ck_assert_int_eq(lineage_lookback(cfg, rtd, rtd), 1);
	ck_assert_int_eq(lineage_lookback(cfg, fct, fct), -1);
	r = lineage_range(cfg, rtd, day_of("2026-02-10"), rtd);
	ck_assert_int_eq(r.first, day_of("2026-02-11"));
	ck_assert_int_eq(r.last, day_of("2026-02-11"));
	/* its days run one after the other: an estimate counts them so */
	ck_assert_int_eq(estimate_concurrency(cfg, rtd), 1);
	/* the topological order holds every job */
	for (size_t t = 0; t < cfg->njobs; t++)
		ck_assert_int_ge(cfg->topo[t], 0);
}
END_TEST

/* The lesson's repair 2026-02-08..12 of fct, rtd built to 02-20: rtd
 * 02-08..02-20 in order, each after fct's day and rtd's day before;
 * weekly from every one of them. */
START_TEST(repair_cascades_to_newest)
{
	struct plan p;
	struct plan_built *b = built_at("2026-02-20");
	struct err err;
	size_t i;

	plan_init(&p);
	for (part_t d = day_of("2026-02-08"); d <= day_of("2026-02-12"); d++)
		plan_add_root(&p, fct, d);
	plan_expand_built(&p, cfg, false, NULL, b);
	ck_assert_uint_eq(p.nroot, 5);
	ck_assert_str_eq(item_of(&p, 5), "rtd 2026-02-08");
	ck_assert_str_eq(deps_of(&p, 5), "fct 2026-02-08");
	ck_assert_str_eq(item_of(&p, 6), "rtd 2026-02-09");
	ck_assert_str_eq(deps_of(&p, 6), "fct 2026-02-09, rtd 2026-02-08");
	ck_assert_str_eq(deps_of(&p, 9), "fct 2026-02-12, rtd 2026-02-11");
	ck_assert_str_eq(item_of(&p, 10), "rtd 2026-02-13");
	ck_assert_str_eq(deps_of(&p, 10), "rtd 2026-02-12");
	ck_assert_str_eq(item_of(&p, 17), "rtd 2026-02-20");
	ck_assert_str_eq(deps_of(&p, 17), "rtd 2026-02-19");
	for (i = 5; i <= 17; i++)
		ck_assert(p.items[i].downstream);
	ck_assert_str_eq(item_of(&p, 18), "weekly 2026-02-02");
	ck_assert_str_eq(item_of(&p, 19), "weekly 2026-02-09");
	ck_assert_str_eq(item_of(&p, 20), "weekly 2026-02-16");
	ck_assert_str_eq(deps_of(&p, 20), "rtd 2026-02-16, rtd 2026-02-17,"
			 " rtd 2026-02-18, rtd 2026-02-19, rtd 2026-02-20");
	ck_assert_uint_eq(p.n, 21);
	/* 13 of rtd: at its bound */
	ck_assert_int_eq(plan_check_bounds(&p, cfg, &err), 0);
	plan_free(&p);

	/* reverse does not reverse a cascade */
	plan_init(&p);
	for (part_t d = day_of("2026-02-12"); d >= day_of("2026-02-08"); d--)
		plan_add_root(&p, fct, d);
	plan_expand_built(&p, cfg, true, NULL, b);
	ck_assert_str_eq(item_of(&p, 5), "rtd 2026-02-08");
	ck_assert_str_eq(item_of(&p, 17), "rtd 2026-02-20");
	plan_free(&p);

	/* nothing built past the repair: no cascade past it; nothing known
	 * (plan_expand): the same */
	plan_init(&p);
	plan_add_root(&p, fct, day_of("2026-02-10"));
	plan_expand(&p, cfg, false, NULL);
	ck_assert_uint_eq(p.n, 3);
	ck_assert_str_eq(item_of(&p, 1), "rtd 2026-02-10");
	plan_free(&p);
	free(b);
}
END_TEST

/* Above rtd's max_backfill (13) the request is refused whole. */
START_TEST(cascade_bound)
{
	struct plan p;
	struct plan_built *b = built_at("2026-02-21");
	struct err err;

	plan_init(&p);
	for (part_t d = day_of("2026-02-08"); d <= day_of("2026-02-12"); d++)
		plan_add_root(&p, fct, d);
	plan_expand_built(&p, cfg, false, NULL, b);
	ck_assert_int_eq(plan_check_bounds(&p, cfg, &err), -1);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, "refused: the request rebuilds 14"
			 " partitions of rtd (it reads its own earlier"
			 " partitions: each one from the earliest repaired to"
			 " its newest built), above its max_backfill of 13;"
			 " nothing was queued. Raise rtd's max_backfill");
	plan_free(&p);
	free(b);
}
END_TEST

/* A request of rtd itself: its own partitions (a gap rebuilt), then the
 * cascade to its newest built one, all in order; its own count too. */
START_TEST(own_request_cascades)
{
	struct plan p;
	struct plan_built *b = built_at("2026-02-14");

	plan_init(&p);
	plan_add_root(&p, rtd, day_of("2026-02-12"));
	plan_add_root(&p, rtd, day_of("2026-02-10"));
	plan_expand_built(&p, cfg, true, NULL, b);
	ck_assert_uint_eq(p.nroot, 3);
	ck_assert_str_eq(item_of(&p, 0), "rtd 2026-02-10");
	ck_assert_str_eq(deps_of(&p, 0), "");
	ck_assert(!p.items[0].downstream);
	ck_assert_str_eq(item_of(&p, 1), "rtd 2026-02-11");
	ck_assert(p.items[1].downstream); /* the gap: rebuilt, never marked */
	ck_assert(!p.items[2].downstream);
	ck_assert_str_eq(deps_of(&p, 1), "rtd 2026-02-10");
	ck_assert_str_eq(item_of(&p, 2), "rtd 2026-02-12");
	ck_assert_str_eq(item_of(&p, 3), "rtd 2026-02-13");
	ck_assert(p.items[3].downstream);
	ck_assert_str_eq(deps_of(&p, 3), "rtd 2026-02-12");
	ck_assert_str_eq(item_of(&p, 4), "rtd 2026-02-14");
	ck_assert_str_eq(item_of(&p, 5), "weekly 2026-02-09");
	ck_assert_uint_eq(p.n, 6);
	plan_free(&p);
	free(b);

	/* --no-downstream: the named days in order, no gap, no cascade */
	plan_init(&p);
	plan_add_root(&p, rtd, day_of("2026-02-12"));
	plan_add_root(&p, rtd, day_of("2026-02-11"));
	plan_add_root(&p, rtd, day_of("2026-02-09"));
	plan_add_root(&p, rtd, day_of("2026-02-11"));
	plan_own_in_order(&p, cfg);
	ck_assert_uint_eq(p.n, 3);
	ck_assert_uint_eq(p.nroot, 3);
	ck_assert_str_eq(item_of(&p, 0), "rtd 2026-02-09");
	ck_assert_str_eq(deps_of(&p, 1), "");
	ck_assert_str_eq(item_of(&p, 2), "rtd 2026-02-12");
	ck_assert_str_eq(deps_of(&p, 2), "rtd 2026-02-11");
	plan_free(&p);

	/* a lookback of 2 waits for the two before */
	b = calloc(cfg->njobs, sizeof *b);
	b[config_job_index(cfg, "bal")] = (struct plan_built){ true,
		day_of("2026-01-05") };
	plan_init(&p);
	plan_add_root(&p, config_job_index(cfg, "bal"), day_of("2026-01-02"));
	plan_expand_built(&p, cfg, false, NULL, b);
	ck_assert_uint_eq(p.n, 4);
	ck_assert_str_eq(deps_of(&p, 1), "bal 2026-01-02");
	ck_assert_str_eq(deps_of(&p, 2), "bal 2026-01-02, bal 2026-01-03");
	ck_assert_str_eq(deps_of(&p, 3), "bal 2026-01-03, bal 2026-01-04");
	plan_free(&p);
	free(b);
}
END_TEST

/* A request loaded from the store: its rtd items wait for the ones
 * before them again (the own ones too), and dispatch never starts a day
 * of rtd while the day before is queued or running in any request. */
START_TEST(relink_and_dispatch_order)
{
	struct manifest m;
	struct request *a, *b;
	struct item *a10, *a11, *a12, *b13;
	struct run *r;
	int64_t wake = INT64_MAX;

	manifest_init(&m, cfg);
	a = manifest_request_add(&m, 1, "rtd", "backfill", 0);
	a10 = manifest_item_add(&m, a, 1, "rtd", "2026-02-10", 0, false,
				MS_QUEUED);
	a11 = manifest_item_add(&m, a, 2, "rtd", "2026-02-11", 1, false,
				MS_QUEUED);
	a12 = manifest_item_add(&m, a, 3, "rtd", "2026-02-12", 2, true,
				MS_QUEUED);
	a->nroot = 2;
	manifest_relink(&m, a);
	ck_assert_uint_eq(a10->nins, 0);
	ck_assert_uint_eq(a11->nins, 1);
	ck_assert_ptr_eq(a11->ins[0], a10);
	ck_assert_uint_eq(a12->nins, 1);
	ck_assert_ptr_eq(a12->ins[0], a11);
	/* a schedule request of the next day, no input in it */
	b = manifest_request_add(&m, 2, "rtd", "schedule", 0);
	b->priority = true;
	b13 = manifest_item_add(&m, b, 4, "rtd", "2026-02-13", 0, false,
				MS_QUEUED);
	b->nroot = 1;
	manifest_relink(&m, b);
	ck_assert_uint_eq(b13->nins, 0);
	/* concurrency 2: only 02-10 starts */
	r = pick_next_run(&m, NULL, 0, &wake);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_eq(r->items[0], a10);
	manifest_run_start(&m, r);
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	manifest_run_result(&m, r, MS_SUCCEEDED, NULL, 0);
	manifest_settle(&m, a10);
	manifest_run_finish(&m, r);
	manifest_run_free(r);
	r = pick_next_run(&m, NULL, 0, &wake);
	ck_assert_ptr_eq(r->items[0], a11);
	manifest_run_start(&m, r);
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	manifest_run_result(&m, r, MS_SUCCEEDED, NULL, 0);
	manifest_settle(&m, a11);
	manifest_run_finish(&m, r);
	manifest_run_free(r);
	r = pick_next_run(&m, NULL, 0, &wake);
	ck_assert_ptr_eq(r->items[0], a12);
	manifest_run_start(&m, r);
	/* 02-13 waits for 02-12, running in another request */
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	manifest_run_result(&m, r, MS_SUCCEEDED, NULL, 0);
	manifest_settle(&m, a12);
	manifest_run_finish(&m, r);
	manifest_run_free(r);
	r = pick_next_run(&m, NULL, 0, &wake);
	ck_assert_ptr_eq(r->items[0], b13);
	manifest_run_start(&m, r);
	manifest_run_result(&m, r, MS_SUCCEEDED, NULL, 0);
	manifest_run_finish(&m, r);
	manifest_run_free(r);
	manifest_clear(&m);
}
END_TEST

/* A job in its own upstream without a lookback is a cycle. */
START_TEST(config_refuses_lookback_0)
{
	static const char bad[] =
		"jobs:\n  - {name: t, partition: day,"
		" upstream: [{job: t, lookback: 0}], command: [x]}\n";
	struct config *c = NULL;
	struct err err;

	ck_assert_int_eq(config_load_string("inline.yaml", bad, strlen(bad),
					    &c, &err), -1);
	ck_assert_str_eq(err.msg, "inline.yaml:2:42: job \"t\" lists itself"
			 " in upstream without a lookback: a partition cannot"
			 " wait for itself; write {job: t, lookback: 1} (a"
			 " running total reading its previous partition), or"
			 " remove the entry");
}
END_TEST

/* Load yaml; NULL and the message in *msg if refused. */
static struct config *
load_inline(const char *yaml, char *msg, size_t len)
{
	struct config *c = NULL;
	struct err err;

	msg[0] = '\0';
	if (config_load_string("inline.yaml", yaml, strlen(yaml), &c,
			       &err) < 0) {
		snprintf(msg, len, "%s", err.msg);
		return NULL;
	}
	return c;
}

/* A job whose only upstream is itself (a balance) is checked as a
 * clock-driven job, not as a downstream one: with a start, on_refused
 * and deadline are accepted and its schedule holds; without one,
 * deadline is refused as for any job without a schedule.  A running
 * total with another upstream stays a downstream job (on_refused
 * refused, deadline accepted without a start). */
START_TEST(config_self_only_is_clock_driven)
{
	static const char bal[] =
		"jobs:\n  - {name: bal, partition: day, start: 2026-01-01,"
		" upstream: [{job: bal, lookback: 1}], deadline: 2h,"
		" max_catchup: 5, on_refused: [/bin/page, \"{job}\"],"
		" command: [x]}\n";
	static const char no_start[] =
		"jobs:\n  - {name: bal, partition: day,"
		" upstream: [{job: bal, lookback: 1}], deadline: 2h,"
		" command: [x]}\n";
	static const char no_start_refused[] =
		"jobs:\n  - {name: bal, partition: day,"
		" upstream: [{job: bal, lookback: 1}],"
		" on_refused: [/bin/page], command: [x]}\n";
	static const char rt[] =
		"jobs:\n  - {name: f, partition: day, command: [x]}\n"
		"  - {name: rt, partition: day, upstream: [f, {job: rt,"
		" lookback: 1}], deadline: 2h, command: [x]}\n";
	static const char rt_refused[] =
		"jobs:\n  - {name: f, partition: day, command: [x]}\n"
		"  - {name: rt, partition: day, start: 2026-01-01,"
		" upstream: [{job: rt, lookback: 1}, f],"
		" on_refused: [/bin/page], command: [x]}\n";
	char msg[1024];
	struct config *c = load_inline(bal, msg, sizeof msg);
	const struct job_def *j;

	ck_assert_msg(c != NULL, "the balance refused: %s", msg);
	j = &c->jobs[0];
	ck_assert_int_eq(j->self_lookback, 1);
	ck_assert(schedule_is_clock_job(j));
	ck_assert_int_eq(j->deadline, 2 * 3600);
	ck_assert_int_eq(j->max_catchup, 5);
	ck_assert(j->catchup);
	ck_assert_ptr_nonnull(j->hooks[HOOK_REFUSED].argv);
	config_unref(c);

	ck_assert_ptr_null(load_inline(no_start, msg, sizeof msg));
	ck_assert_str_eq(msg, "inline.yaml:2:70: job \"bal\": deadline needs"
			 " a schedule: add start: (a clock-driven job) or"
			 " upstream: (a downstream job)");
	ck_assert_ptr_null(load_inline(no_start_refused, msg, sizeof msg));
	ck_assert_str_eq(msg, "inline.yaml:2:70: job \"bal\": on_refused"
			 " needs a clock schedule with catchup (start: and no"
			 " upstream:)");

	c = load_inline(rt, msg, sizeof msg);
	ck_assert_msg(c != NULL, "the running total refused: %s", msg);
	ck_assert(!schedule_is_clock_job(&c->jobs[1]));
	ck_assert_int_eq(c->jobs[1].deadline, 2 * 3600);
	config_unref(c);
	ck_assert_ptr_null(load_inline(rt_refused, msg, sizeof msg));
	ck_assert_str_eq(msg, "inline.yaml:3:90: job \"rt\": on_refused"
			 " needs a clock schedule with catchup (start: and no"
			 " upstream:)");
}
END_TEST

/* fct (day) -> rt, a running total with batch: `batch` (SCHED-9) */
static struct config *
batch_config(const char *batch)
{
	static const char fmt[] =
		"state_db: s.db\n"
		"socket: s.sock\n"
		"max_concurrency: 8\n"
		"warehouses:\n"
		"  - {name: w, sqlite: w.db}\n"
		"jobs:\n"
		"  - {name: fct, warehouse: w, partition: day, concurrency: 3,"
		" sql: SELECT 1}\n"
		"  - {name: rt, warehouse: w, partition: day, batch: %s,"
		" concurrency: 2,"
		" upstream: [fct, {job: rt, lookback: 1}], sql: SELECT 1}\n";
	char yaml[1024];
	struct config *c = NULL;

	snprintf(yaml, sizeof yaml, fmt, batch);
	c = fixture_config("/tmp/rtbatch.yaml", yaml);
	return c;
}

/* A plan's items as a request of m, each waiting for its plan inputs. */
static struct request *
batch_request(struct manifest *m, const struct config *c,
	      const struct plan *p, int64_t id)
{
	struct request *rq = manifest_request_add(m, id, c->jobs[
	    p->items[0].job].name, "backfill", 0);
	char key[CAL_KEY_MAX];

	for (size_t i = 0; i < p->n; i++) {
		const struct plan_item *pi = &p->items[i];
		struct item *x;

		cal_key(&c->jobs[pi->job].cal, pi->part, key);
		x = manifest_item_add(m, rq, id * 100 + (int64_t)i,
				      c->jobs[pi->job].name, key, (int)i,
				      pi->downstream, MS_QUEUED);
		for (size_t d = 0; d < pi->ndeps; d++)
			manifest_link(rq->items[p->deps[pi->dep_off + d]], x);
	}
	rq->nroot = p->nroot;
	return rq;
}

/* The keys of run r's items, "k1 k2 ...". */
static const char *
run_keys(const struct run *r)
{
	static char buf[512];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->nitems; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s",
					i ? " " : "", r->items[i]->key);
	return buf;
}

/* Run r ends with result st. */
static void
batch_end(struct manifest *m, struct run *r, enum mstate st)
{
	manifest_run_result(m, r, st, NULL, 0);
	for (size_t i = 0; i < r->nitems; i++)
		manifest_settle_outs(m, r->items[i]);
	manifest_run_finish(m, r);
	manifest_run_free(r);
}

/* The repair of fct 02-10..12 through a running total with built days
 * up to 02-16 (job rt), in manifest m; the plan's request. */
static struct request *
batch_repair(struct manifest *m, const struct config *c, const char *rt)
{
	struct plan_built *b = calloc(c->njobs, sizeof *b);
	int f = config_job_index(c, "fct");
	struct request *rq;
	struct plan p;

	b[config_job_index(c, rt)] = (struct plan_built){ true,
		day_of("2026-02-16") };
	plan_init(&p);
	for (const char *k = "2026-02-10"; k != NULL;
	     k = strcmp(k, "2026-02-12") == 0 ? NULL :
		 strcmp(k, "2026-02-10") == 0 ? "2026-02-11" : "2026-02-12")
		plan_add_root(&p, f, day_of(k));
	plan_expand_built(&p, c, false, NULL, b);
	rq = batch_request(m, c, &p, 1);
	plan_free(&p);
	free(b);
	return rq;
}

/* SCHED-9: batch: true on a running total runs its cascade of the
 * request as one batch, in order, once the day before its first day
 * and every fact day of it landed; without SCHED-9 (the old code) each
 * day was a run, 02-10 starting as soon as its fact day landed. */
START_TEST(batch_cascade_is_one_run)
{
	struct config *c;
	struct manifest m;
	struct run *f[3], *r;
	int64_t wake = INT64_MAX;
	char msg[512];

	c = batch_config("true");
	manifest_init(&m, c);
	batch_repair(&m, c, "rt");
	for (int i = 0; i < 3; i++) {
		f[i] = pick_next_run(&m, NULL, 0, &wake);
		ck_assert_ptr_nonnull(f[i]);
		ck_assert_str_eq(f[i]->job_name, "fct");
		manifest_run_start(&m, f[i]);
	}
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	/* 02-10's and 02-11's fact days landed, 02-12's not: the batch
	 * waits for it */
	batch_end(&m, f[0], MS_SUCCEEDED);
	batch_end(&m, f[1], MS_SUCCEEDED);
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	batch_end(&m, f[2], MS_SUCCEEDED);
	r = pick_next_run(&m, NULL, 0, &wake);
	ck_assert_ptr_nonnull(r);
	snprintf(msg, sizeof msg, "%s", run_keys(r));
	ck_assert_str_eq(msg, "2026-02-10 2026-02-11 2026-02-12 2026-02-13"
			 " 2026-02-14 2026-02-15 2026-02-16");
	ck_assert(r->batch);
	ck_assert_str_eq(r->job_name, "rt");
	manifest_run_start(&m, r);
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	/* cut-off took its first day out: the rest stays one batch */
	memmove(r->items, r->items + 1, (r->nitems - 1) * sizeof *r->items);
	r->nitems--;
	pick_run_trim(&m, r);
	ck_assert_uint_eq(r->nitems, 6);
	batch_end(&m, r, MS_SUCCEEDED);
	manifest_clear(&m);
	config_unref(c);
}
END_TEST

/* SCHED-9 with batch: 3: chunks of 3, 3 and 1, in order, each after the
 * one before it ended; a fact day that failed ends the chunk before its
 * day, which is blocked with the days after it. */
START_TEST(batch_n_chunks_in_order)
{
	struct config *c;
	struct manifest m;
	struct request *rq;
	struct run *r;
	int64_t wake = INT64_MAX;
	const char *want[] = { "2026-02-10 2026-02-11 2026-02-12",
			       "2026-02-13 2026-02-14 2026-02-15",
			       "2026-02-16" };

	c = batch_config("3");
	manifest_init(&m, c);
	batch_repair(&m, c, "rt");
	for (int i = 0; i < 3; i++)
		batch_end(&m, pick_next_run(&m, NULL, 0, &wake),
			  MS_SUCCEEDED);
	for (int i = 0; i < 3; i++) {
		r = pick_next_run(&m, NULL, 0, &wake);
		ck_assert_ptr_nonnull(r);
		ck_assert_str_eq(run_keys(r), want[i]);
		manifest_run_start(&m, r);
		/* concurrency 2, yet the next chunk waits for this one */
		ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
		batch_end(&m, r, MS_SUCCEEDED);
	}
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	manifest_clear(&m);

	/* the fact's 02-11 fails: 02-10 runs alone, 02-11.. blocked */
	manifest_init(&m, c);
	rq = batch_repair(&m, c, "rt");
	batch_end(&m, pick_next_run(&m, NULL, 0, &wake), MS_SUCCEEDED);
	batch_end(&m, pick_next_run(&m, NULL, 0, &wake), MS_FAILED);
	batch_end(&m, pick_next_run(&m, NULL, 0, &wake), MS_SUCCEEDED);
	r = pick_next_run(&m, NULL, 0, &wake);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(run_keys(r), "2026-02-10");
	batch_end(&m, r, MS_SUCCEEDED);
	ck_assert_ptr_null(pick_next_run(&m, NULL, 0, &wake));
	ck_assert_int_eq(rq->items[4]->state, MS_BLOCKED);
	ck_assert_int_eq(rq->items[9]->state, MS_BLOCKED);
	manifest_clear(&m);
	config_unref(c);
}
END_TEST

/* Without batch a running total's cascade is a run a day (SCHED-8). */
START_TEST(no_batch_runs_a_day)
{
	struct manifest m;
	struct run *r;
	int64_t wake = INT64_MAX;

	manifest_init(&m, cfg);
	batch_repair(&m, cfg, "rtd");
	for (int i = 0; i < 3; i++)
		batch_end(&m, pick_next_run(&m, NULL, 0, &wake),
			  MS_SUCCEEDED);
	for (const char *k = "2026-02-10"; strcmp(k, "2026-02-13") != 0;
	     k = strcmp(k, "2026-02-10") == 0 ? "2026-02-11" :
		 strcmp(k, "2026-02-11") == 0 ? "2026-02-12" : "2026-02-13") {
		r = pick_next_run(&m, NULL, 0, &wake);
		ck_assert_ptr_nonnull(r);
		ck_assert_str_eq(run_keys(r), k);
		batch_end(&m, r, MS_SUCCEEDED);
	}
	manifest_clear(&m);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cascade");
	TCase *tc = tcase_create("cascade");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, config_accepts_self);
	tcase_add_test(tc, repair_cascades_to_newest);
	tcase_add_test(tc, cascade_bound);
	tcase_add_test(tc, own_request_cascades);
	tcase_add_test(tc, relink_and_dispatch_order);
	tcase_add_test(tc, config_refuses_lookback_0);
	tcase_add_test(tc, config_self_only_is_clock_driven);
	tcase_add_test(tc, batch_cascade_is_one_run);
	tcase_add_test(tc, batch_n_chunks_in_order);
	tcase_add_test(tc, no_batch_runs_a_day);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
