/*
 * test_manifest.c - the manifest's rules (manifest.c, pick.c), one row per
 * case: caps (global, job, warehouse, request), the order (schedule and
 * catchup first, round-robin, oldest first), one run for several
 * requests, batches, once after the inputs, blocked and released (also by
 * a later request), fail fast, retries with backoff, cancel, retry,
 * paused jobs and throttled warehouses.
 *
 * Each case is a script of steps run against a fresh manifest:
 *   req   "ID KIND [cap=N] [ff]: ITEM ..."   add a request; an ITEM is
 *         job/key, or ^job/key<I,J for a downstream item waiting for the
 *         request's items I and J
 *   pick  start every run the core picks now; want: the runs in order,
 *         "job/key@ID" (+ "+ID" per request sharing it, "xN" for a batch
 *         of N, "/wN" for a run holding N slots: its width, SCHED-2),
 *         space separated, "-" for none
 *   cut   "N": pick the next run, keep its first N items (early cut-off
 *         took the rest), pick_run_trim, start it; want as for pick
 *   slots "JOB ID": want the slots in flight of the job, of all runs and
 *         of request ID, "J G R" (job_running, nrunning, nruns)
 *   hosts  dispatch for several hosts from then on (pick_gate one_slot)
 *   end   "job/key RESULT": the run of that item ends; RESULT ok, fail,
 *         cancel or requeue (a throttle interrupted it); a failure is
 *         retried while attempts <= retries
 *   state want: each request's item states, "ID:LETTERS" (Queued,
 *         Running, Succeeded, Failed, Blocked, Cancelled)
 *   why   want: the rules that moved items since the last step that
 *         looked ("blocked", "released", "landed", "cancelled",
 *         "failfast", "overbudget"), space separated, "-" for none
 *   cancel, retry   "ID": the operator's cancel or retry of a request
 *   over  "ID": the request went over its budget (manifest_over_budget)
 *   relink "ID": link the request's downstream items to their inputs by
 *         the mapping, as a restart does
 *   gone  "job/key": that item is cancelled (its job left the
 *         configuration, say) and what waits for it settles
 *   reindex  the configuration read again (manifest_reindex)
 *   parts "JOB": want its partitions queued, running and blocked, each
 *         once however many requests hold it, "Q R B" (job_parts)
 *   now   "MS": the time from then on
 *   pause "JOB", throttle "WAREHOUSE"
 *   deck  "JOB": start the run of that job that pick_next_deck hands
 *         ahead; want as for pick
 *   undeck "job/key": the run handed ahead started (the one before it
 *         ended)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "pick.h"

/* clang-format off */
#define BASE_YAML \
	"state_db: s.db\n" \
	"socket: s.sock\n" \
	"warehouses:\n" \
	"  - {name: w, sqlite: w.db}\n" \
	"  - {name: pg, postgres: \"dbname=x\", max_connections: 2}\n"

/* Most cases: three independent daily jobs, a weekly one fed by a. */
static const char jobs_yaml[] = BASE_YAML
	"max_concurrency: 8\n"
	"jobs:\n"
	"  - {name: a, warehouse: w, partition: day, concurrency: 4, sql: SELECT 1}\n"
	"  - {name: b, warehouse: w, partition: day, concurrency: 4, sql: SELECT 1}\n"
	"  - {name: c, warehouse: w, partition: day, concurrency: 1, sql: SELECT 1}\n"
	"  - {name: wk, warehouse: w, partition: week, upstream: [a], sql: SELECT 1}\n"
	"  - {name: p1, warehouse: pg, partition: day, concurrency: 4, sql: SELECT 1}\n"
	"  - {name: p2, warehouse: pg, partition: day, concurrency: 4, sql: SELECT 1}\n"
	"  - {name: r, warehouse: w, partition: day, retries: 2, retry_backoff: 30s, sql: SELECT 1}\n"
	"  - {name: bt, warehouse: w, partition: day, batch: true, sql: SELECT 1}\n"
	"  - {name: b3, warehouse: w, partition: day, batch: 3, concurrency: 3, sql: SELECT 1}\n"
	"  - {name: wb, warehouse: w, partition: week, upstream: [a, bt], batch: true, concurrency: 2, sql: SELECT 1}\n";

/* Chunks on ClickHouse (consecutive partitions) beside the same on SQLite. */
static const char ch_yaml[] = BASE_YAML
	"  - {name: ch, clickhouse: \"http://127.0.0.1:8123/?database=x\"}\n"
	"max_concurrency: 8\n"
	"jobs:\n"
	"  - {name: b3, warehouse: w, partition: day, batch: 3, concurrency: 3, sql: SELECT 1}\n"
	"  - {name: c3, warehouse: ch, partition: day, batch: 3, concurrency: 3,\n"
	"     table: t, partition_column: dt, sql: SELECT 1}\n"
	"  - {name: ct, warehouse: ch, partition: day, batch: true, concurrency: 3,\n"
	"     table: t, partition_column: dt, sql: SELECT 1}\n"
	"  - {name: ca, warehouse: ch, partition: day, concurrency: 4,\n"
	"     table: t, partition_column: dt, sql: SELECT 1}\n"
	"  - {name: cw, warehouse: ch, partition: week, upstream: [ca], batch: true, concurrency: 2,\n"
	"     table: w, partition_column: wk, sql: SELECT 1}\n";

/* A ClickHouse batch's width (SCHED-2): max_concurrency, the ClickHouse
 * warehouse's max_connections. */
#define WIDE_YAML(maxc, conns) BASE_YAML \
	"  - {name: ch, clickhouse: \"http://127.0.0.1:8123/?database=x\"," \
	"     max_connections: " conns "}\n" \
	"max_concurrency: " maxc "\n" \
	"jobs:\n" \
	"  - {name: cb, warehouse: ch, partition: day, batch: true, concurrency: 4,\n" \
	"     table: t, partition_column: dt, sql: SELECT 1}\n" \
	"  - {name: cc, warehouse: ch, partition: day, concurrency: 4,\n" \
	"     table: u, partition_column: dt, sql: SELECT 1}\n" \
	"  - {name: rt, warehouse: ch, partition: day, batch: true, concurrency: 4,\n" \
	"     upstream: [{job: rt, lookback: 1}],\n" \
	"     table: r, partition_column: dt, sql: SELECT 1}\n" \
	"  - {name: sb, warehouse: w, partition: day, batch: true, concurrency: 4, sql: SELECT 1}\n" \
	"  - {name: pb, warehouse: pg, partition: day, batch: true, concurrency: 4, sql: SELECT 1}\n" \
	"  - {name: sa, warehouse: w, partition: day, concurrency: 4, sql: SELECT 1}\n"

static const char wide_yaml[] = WIDE_YAML("4", "8");
static const char wide_wh3_yaml[] = WIDE_YAML("8", "3");

/* Eight consecutive days of a job. */
#define DAYS8(j) j "/2026-01-01 " j "/2026-01-02 " j "/2026-01-03 " \
	j "/2026-01-04 " j "/2026-01-05 " j "/2026-01-06 " j "/2026-01-07 " \
	j "/2026-01-08"

static const char tight_yaml[] = BASE_YAML
	"max_concurrency: 2\n"
	"jobs:\n"
	"  - {name: a, warehouse: w, partition: day, concurrency: 2, sql: SELECT 1}\n"
	"  - {name: b, warehouse: w, partition: day, concurrency: 2, sql: SELECT 1}\n";

struct step {
	const char *op;
	const char *arg;
	const char *want;
};

struct mcase {
	const char *name;
	const char *yaml;       /* NULL: jobs_yaml */
	struct step steps[16];
};

static const struct mcase cases[] = {
	/* ---- runs handed ahead (pick_next_deck) ---- */
	{ "deck: one run past the job's cap, one at a time", tight_yaml, {
		{ "req", "1 backfill: a/2026-01-01 a/2026-01-02 a/2026-01-03 a/2026-01-04", NULL },
		{ "pick", NULL, "a/2026-01-01@1 a/2026-01-02@1" },
		{ "deck", "a", "a/2026-01-03@1" },
		{ "deck", "a", "-" },
		{ "pick", NULL, "-" },
		{ "state", NULL, "1:RRRQ" },
		{ "end", "a/2026-01-01 ok", NULL },
		{ "undeck", "a/2026-01-03", NULL },
		{ "pick", NULL, "-" },
		{ "deck", "a", "a/2026-01-04@1" },
		{ "state", NULL, "1:SRRR" },
	} },
	{ "deck: no slot of max_concurrency taken", tight_yaml, {
		{ "req", "1 backfill: a/2026-01-01 a/2026-01-02 a/2026-01-03", NULL },
		{ "req", "2 backfill: b/2026-01-01 b/2026-01-02 b/2026-01-03", NULL },
		{ "pick", NULL, "a/2026-01-01@1 b/2026-01-01@2" },
		{ "deck", "a", "a/2026-01-02@1" },
		{ "pick", NULL, "-" },
		{ "end", "b/2026-01-01 ok", NULL },
		{ "pick", NULL, "b/2026-01-02@2" },
		{ "deck", "b", "b/2026-01-03@2" },
		{ "end", "b/2026-01-02 ok", NULL },
		{ "undeck", "b/2026-01-03", NULL },
		{ "pick", NULL, "-" },
		{ "state", NULL, "1:RRQ 2:SSR" },
	} },
	{ "deck: a request's cap, a paused job, another job", NULL, {
		{ "req", "1 backfill cap=1: a/2026-01-01 a/2026-01-02 a/2026-01-03", NULL },
		{ "req", "2 backfill: c/2026-01-01 c/2026-01-02", NULL },
		{ "pick", NULL, "a/2026-01-01@1 c/2026-01-01@2" },
		{ "deck", "a", "a/2026-01-02@1" },
		{ "deck", "a", "-" },
		{ "deck", "b", "-" },
		{ "pause", "c", NULL },
		{ "deck", "c", "-" },
		{ "state", NULL, "1:RRQ 2:RQ" },
	} },
	{ "deck: never a fail-fast request's run, nor riding along", tight_yaml, {
		{ "req", "1 backfill ff: a/2026-01-01 a/2026-01-02 a/2026-01-03", NULL },
		{ "req", "2 backfill: b/2026-01-01 b/2026-01-02", NULL },
		{ "req", "3 backfill ff: b/2026-01-02", NULL },
		{ "pick", NULL, "a/2026-01-01@1 b/2026-01-01@2" },
		{ "deck", "a", "-" },
		{ "deck", "b", "b/2026-01-02@2" },
		{ "state", NULL, "1:RQQ 2:RR 3:Q" },
		{ "end", "a/2026-01-01 fail", NULL },
		{ "state", NULL, "1:FCC 2:RR 3:Q" },
	} },

	/* ---- status counts partitions, not requests' items ---- */
	{ "parts: a partition queued by three requests is one", NULL, {
		{ "req", "1 backfill: c/2026-01-01 c/2026-01-02", NULL },
		{ "req", "2 backfill: c/2026-01-01", NULL },
		{ "req", "3 backfill: c/2026-01-01", NULL },
		{ "parts", "c", "2 0 0" },
		{ "pick", NULL, "c/2026-01-01@1+3+2" },
		{ "parts", "c", "1 1 0" },
		{ "end", "c/2026-01-01 ok", NULL },
		{ "parts", "c", "1 0 0" },
		{ "cancel", "1", NULL },
		{ "parts", "c", "0 0 0" },
		{ "req", "4 backfill: c/2026-01-05", NULL },
		{ "req", "5 backfill: c/2026-01-05", NULL },
		{ "cancel", "4", NULL },
		{ "parts", "c", "1 0 0" },
		{ "reindex", NULL, NULL },
		{ "parts", "c", "1 0 0" },
	} },

	/* ---- rule 2, caps ---- */
	{ "global cap", tight_yaml, {
		{ "req", "1 backfill: a/2026-01-01 a/2026-01-02 a/2026-01-03", NULL },
		{ "pick", NULL, "a/2026-01-01@1 a/2026-01-02@1" },
		{ "end", "a/2026-01-01 ok", NULL },
		{ "pick", NULL, "a/2026-01-03@1" } } },
	{ "job cap", NULL, {
		{ "req", "1 backfill: c/2026-01-01 c/2026-01-02", NULL },
		{ "pick", NULL, "c/2026-01-01@1" },
		{ "pick", NULL, "-" },
		{ "end", "c/2026-01-01 ok", NULL },
		{ "pick", NULL, "c/2026-01-02@1" } } },
	{ "warehouse cap across jobs", NULL, {
		{ "req", "1 backfill: p1/2026-01-01 p1/2026-01-02", NULL },
		{ "req", "2 backfill: p2/2026-01-01", NULL },
		{ "pick", NULL, "p1/2026-01-01@1 p2/2026-01-01@2" },
		{ "pick", NULL, "-" },
		{ "end", "p1/2026-01-01 ok", NULL },
		{ "pick", NULL, "p1/2026-01-02@1" } } },
	{ "request cap", NULL, {
		{ "req", "1 backfill cap=1: a/2026-01-01 a/2026-01-02", NULL },
		{ "req", "2 backfill: b/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-01@1 b/2026-01-01@2" },
		{ "end", "a/2026-01-01 ok", NULL },
		{ "pick", NULL, "a/2026-01-02@1" } } },
	{ "one partition never runs twice at once", NULL, {
		{ "req", "1 backfill: a/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-01@1" },
		{ "req", "2 backfill: a/2026-01-01", NULL },
		{ "pick", NULL, "-" },
		{ "end", "a/2026-01-01 ok", NULL },
		{ "pick", NULL, "a/2026-01-01@2" } } },
	{ "a request at its cap rides no shared run", NULL, {
		{ "req", "1 backfill cap=1: a/2026-01-02 a/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-02@1" },
		{ "req", "2 backfill: a/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-01@2" } } },
	/* ---- rule 3, order ---- */
	{ "schedule and catchup first", tight_yaml, {
		{ "req", "1 backfill: a/2026-01-01 a/2026-01-02", NULL },
		{ "req", "2 schedule: b/2026-01-05", NULL },
		{ "req", "3 catchup: b/2026-01-03 b/2026-01-04", NULL },
		{ "pick", NULL, "b/2026-01-05@2 b/2026-01-03@3" } } },
	{ "operator requests round-robin, oldest first", tight_yaml, {
		{ "req", "1 backfill: a/2026-01-01 a/2026-01-02 a/2026-01-03", NULL },
		{ "req", "2 backfill: b/2026-01-01 b/2026-01-02", NULL },
		{ "pick", NULL, "a/2026-01-01@1 b/2026-01-01@2" },
		{ "end", "b/2026-01-01 ok", NULL },
		{ "pick", NULL, "a/2026-01-02@1" },
		{ "end", "a/2026-01-01 ok", NULL },
		{ "pick", NULL, "b/2026-01-02@2" } } },
	{ "newest first is the request's own order (--reverse)", tight_yaml, {
		{ "req", "1 backfill: a/2026-01-03 a/2026-01-02 a/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-03@1 a/2026-01-02@1" } } },
	/* ---- rule 5, one run for many ---- */
	{ "several requests' items for one partition run once", NULL, {
		{ "req", "1 backfill cap=1: a/2026-01-01 a/2026-01-02", NULL },
		{ "req", "2 backfill: a/2026-01-01", NULL },
		{ "req", "3 backfill: a/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-01@1+3+2" },
		{ "end", "a/2026-01-01 ok", NULL },
		{ "state", NULL, "1:SQ 2:S 3:S" } } },
	{ "a batch job's partitions run as one", NULL, {
		{ "req", "1 backfill: bt/2026-01-01 bt/2026-01-02 bt/2026-01-03", NULL },
		{ "pick", NULL, "bt/2026-01-01@1x3" },
		{ "end", "bt/2026-01-01 ok", NULL },
		{ "state", NULL, "1:SSS" } } },
	{ "batch: N runs a request's partitions N at a time", NULL, {
		{ "req", "1 backfill: b3/2026-01-01 b3/2026-01-02 b3/2026-01-03 b3/2026-01-04 b3/2026-01-05 b3/2026-01-06 b3/2026-01-07", NULL },
		{ "pick", NULL, "b3/2026-01-01@1x3 b3/2026-01-04@1x3 b3/2026-01-07@1" },
		{ "state", NULL, "1:RRRRRRR" },
		{ "end", "b3/2026-01-05 fail", NULL },
		{ "state", NULL, "1:RRRFFFR" },
		{ "end", "b3/2026-01-01 ok", NULL },
		{ "end", "b3/2026-01-07 ok", NULL },
		{ "state", NULL, "1:SSSFFFS" },
		{ "retry", "1", "3" },
		{ "pick", NULL, "b3/2026-01-04@1x3" } } },
	{ "a chunk fills up past a partition running elsewhere", ch_yaml, {
		{ "req", "1 backfill: b3/2026-01-02", NULL },
		{ "pick", NULL, "b3/2026-01-02@1" },
		{ "req", "2 backfill: b3/2026-01-01 b3/2026-01-02 b3/2026-01-03 b3/2026-01-04", NULL },
		{ "pick", NULL, "b3/2026-01-01@2x3" },
		{ "end", "b3/2026-01-02 ok", NULL },
		{ "pick", NULL, "b3/2026-01-02@2" } } },
	{ "on ClickHouse a chunk holds consecutive partitions only", ch_yaml, {
		{ "req", "1 backfill: c3/2026-01-02", NULL },
		{ "pick", NULL, "c3/2026-01-02@1" },
		{ "req", "2 backfill: c3/2026-01-01 c3/2026-01-02 c3/2026-01-03 c3/2026-01-04 c3/2026-01-05 c3/2026-01-06", NULL },
		{ "pick", NULL, "c3/2026-01-01@2 c3/2026-01-03@2x3" },
		{ "end", "c3/2026-01-02 ok", NULL },
		{ "pick", NULL, "c3/2026-01-02@2" } } },
	{ "on ClickHouse batch: true holds consecutive partitions too", ch_yaml, {
		{ "req", "1 backfill: ct/2026-01-03", NULL },
		{ "pick", NULL, "ct/2026-01-03@1" },
		{ "req", "2 backfill: ct/2026-01-01 ct/2026-01-02 ct/2026-01-03 ct/2026-01-04 ct/2026-01-05", NULL },
		/* the batch of 01 and 02 holds two of ct's three slots (SCHED-2,
		 * its width): 04 and 05 wait for them */
		{ "pick", NULL, "ct/2026-01-01@2x2/w2" },
		{ "end", "ct/2026-01-01 ok", NULL },
		{ "pick", NULL, "ct/2026-01-04@2x2/w2" } } },
	{ "a batch job's downstream items ready at once run as one batch", NULL, {
		{ "req", "1 backfill: bt/2026-01-09 bt/2026-01-10 bt/2026-01-11 bt/2026-01-12 ^wb/2026-01-05<0,1,2 ^wb/2026-01-12<3", NULL },
		{ "pick", NULL, "bt/2026-01-09@1x4" },
		{ "end", "bt/2026-01-09 ok", NULL },
		{ "pick", NULL, "wb/2026-01-05@1x2" },
		{ "end", "wb/2026-01-05 ok", NULL },
		{ "state", NULL, "1:SSSSSS" } } },
	{ "a downstream batch takes the items ready, not those still waiting", NULL, {
		{ "req", "1 backfill: a/2026-01-05 a/2026-01-12 a/2026-01-19 ^wb/2026-01-05<0 ^wb/2026-01-12<1 ^wb/2026-01-19<2", NULL },
		{ "pick", NULL, "a/2026-01-05@1 a/2026-01-12@1 a/2026-01-19@1" },
		{ "end", "a/2026-01-05 ok", NULL },
		{ "pick", NULL, "wb/2026-01-05@1" },
		{ "end", "a/2026-01-12 ok", NULL },
		{ "end", "a/2026-01-19 ok", NULL },
		{ "pick", NULL, "wb/2026-01-12@1x2" },
		{ "end", "wb/2026-01-05 ok", NULL },
		{ "end", "wb/2026-01-12 ok", NULL },
		{ "state", NULL, "1:SSSSSS" } } },
	{ "on ClickHouse a downstream batch holds consecutive partitions only", ch_yaml, {
		{ "req", "1 backfill: ca/2026-01-05 ca/2026-01-12 ca/2026-01-19 ^cw/2026-01-05<0 ^cw/2026-01-12<1 ^cw/2026-01-19<2", NULL },
		{ "pick", NULL, "ca/2026-01-05@1 ca/2026-01-12@1 ca/2026-01-19@1" },
		{ "end", "ca/2026-01-12 fail", NULL },
		{ "end", "ca/2026-01-05 ok", NULL },
		{ "end", "ca/2026-01-19 ok", NULL },
		{ "state", NULL, "1:SFSQBQ" },
		{ "pick", NULL, "cw/2026-01-05@1 cw/2026-01-19@1" } } },
	/* ---- a ClickHouse batch's width (SCHED-2, pick_width) ---- */
	{ "a ClickHouse batch holds a slot per statement of every cap", wide_yaml, {
		{ "req", "1 backfill: " DAYS8("cb"), NULL },
		{ "pick", NULL, "cb/2026-01-01@1x8/w4" },
		/* the job's, the global and the request's counts */
		{ "slots", "cb 1", "4 4 4" },
		{ "req", "2 backfill: cb/2026-01-10 sa/2026-01-10", NULL },
		{ "pick", NULL, "-" },
		{ "reindex", NULL, NULL },
		{ "slots", "cb 1", "4 4 4" },
		{ "end", "cb/2026-01-01 ok", NULL },
		{ "slots", "cb 1", "0 0 0" },
		{ "pick", NULL, "cb/2026-01-10@2 sa/2026-01-10@2" },
		{ "slots", "cb 2", "1 2 2" } } },
	{ "a ClickHouse batch takes the job's slots left", wide_yaml, {
		{ "req", "1 backfill: cb/2026-01-20", NULL },
		{ "pick", NULL, "cb/2026-01-20@1" },
		{ "req", "2 backfill: " DAYS8("cb"), NULL },
		{ "pick", NULL, "cb/2026-01-01@2x8/w3" },
		{ "slots", "cb 2", "4 4 3" },
		{ "end", "cb/2026-01-20 ok", NULL },
		{ "slots", "cb 2", "3 3 3" } } },
	{ "a ClickHouse batch takes max_concurrency's slots left", wide_yaml, {
		{ "req", "1 backfill: sa/2026-01-01 sa/2026-01-02", NULL },
		{ "pick", NULL, "sa/2026-01-01@1 sa/2026-01-02@1" },
		{ "req", "2 backfill: " DAYS8("cb"), NULL },
		{ "pick", NULL, "cb/2026-01-01@2x8/w2" },
		{ "slots", "cb 2", "2 4 2" },
		{ "req", "3 backfill: sa/2026-01-03", NULL },
		{ "pick", NULL, "-" },
		{ "end", "cb/2026-01-01 ok", NULL },
		{ "pick", NULL, "sa/2026-01-03@3" } } },
	{ "a ClickHouse batch takes its request's own slots left", wide_yaml, {
		{ "req", "1 backfill cap=2: " DAYS8("cb"), NULL },
		{ "pick", NULL, "cb/2026-01-01@1x8/w2" },
		{ "slots", "cb 1", "2 2 2" } } },
	{ "a ClickHouse batch takes its warehouse's slots left", wide_wh3_yaml, {
		{ "req", "1 backfill: " DAYS8("cb"), NULL },
		{ "req", "2 backfill: cc/2026-01-01", NULL },
		{ "pick", NULL, "cb/2026-01-01@1x8/w3" },
		{ "slots", "cb 1", "3 3 3" },
		{ "end", "cb/2026-01-01 ok", NULL },
		{ "pick", NULL, "cc/2026-01-01@2" } } },
	{ "a wide run holds its slots of its warehouse", wide_wh3_yaml, {
		{ "req", "1 backfill: cb/2026-01-01 cb/2026-01-02", NULL },
		{ "pick", NULL, "cb/2026-01-01@1x2/w2" },
		{ "req", "2 backfill: cb/2026-01-10 cb/2026-01-11", NULL },
		{ "pick", NULL, "cb/2026-01-10@2x2" },
		{ "slots", "cb 2", "3 3 1" } } },
	{ "a batch on SQLite or PostgreSQL holds one slot", wide_yaml, {
		{ "req", "1 backfill: " DAYS8("sb"), NULL },
		{ "req", "2 backfill: " DAYS8("pb"), NULL },
		{ "pick", NULL, "sb/2026-01-01@1x8 pb/2026-01-01@2x8" },
		{ "slots", "sb 1", "1 2 1" },
		{ "slots", "pb 2", "1 2 1" } } },
	{ "a running total's batch on ClickHouse holds one slot", wide_yaml, {
		{ "req", "1 backfill: " DAYS8("rt"), NULL },
		{ "pick", NULL, "rt/2026-01-01@1x8" },
		{ "slots", "rt 1", "1 1 1" } } },
	{ "a ClickHouse run holds no more slots than partitions", wide_yaml, {
		{ "req", "1 backfill: cb/2026-01-01", NULL },
		{ "pick", NULL, "cb/2026-01-01@1" },
		{ "slots", "cb 1", "1 1 1" },
		{ "req", "2 backfill: cb/2026-01-10 cb/2026-01-11", NULL },
		{ "pick", NULL, "cb/2026-01-10@2x2/w2" },
		{ "slots", "cb 2", "3 3 2" } } },
	{ "on several hosts a ClickHouse batch holds one slot", wide_yaml, {
		{ "hosts", NULL, NULL },
		{ "req", "1 backfill: " DAYS8("cb"), NULL },
		{ "pick", NULL, "cb/2026-01-01@1x8" },
		{ "slots", "cb 1", "1 1 1" } } },
	{ "a ClickHouse batch handed ahead holds one slot", wide_yaml, {
		{ "req", "1 backfill: " DAYS8("cb"), NULL },
		{ "pick", NULL, "cb/2026-01-01@1x8/w4" },
		{ "req", "2 backfill: cb/2026-01-10 cb/2026-01-11 cb/2026-01-12", NULL },
		{ "deck", "cb", "cb/2026-01-10@2x3" },
		{ "slots", "cb 2", "5 5 1" },
		{ "end", "cb/2026-01-01 ok", NULL },
		{ "undeck", "cb/2026-01-10", NULL },
		{ "slots", "cb 2", "1 1 1" } } },
	{ "handed ahead below the job's cap, still one slot", wide_yaml, {
		{ "req", "1 backfill: cb/2026-01-20", NULL },
		{ "pick", NULL, "cb/2026-01-20@1" },
		{ "req", "2 backfill: cb/2026-01-10 cb/2026-01-11 cb/2026-01-12", NULL },
		{ "deck", "cb", "cb/2026-01-10@2x3" },
		{ "slots", "cb 2", "2 2 1" },
		{ "end", "cb/2026-01-20 ok", NULL },
		{ "undeck", "cb/2026-01-10", NULL },
		{ "slots", "cb 2", "1 1 1" } } },
	{ "a batch cut short holds no more slots than partitions", wide_yaml, {
		{ "req", "1 backfill: " DAYS8("cb"), NULL },
		{ "cut", "2", "cb/2026-01-01@1x2/w2" },
		{ "slots", "cb 1", "2 2 2" } } },
	/* ---- budgets (budget.h, rule 4) ---- */
	{ "over budget cancels the rest, runs in flight finish", NULL, {
		{ "req", "1 backfill: c/2026-01-01 c/2026-01-02 c/2026-01-03 ^wk/2025-12-29<0", NULL },
		{ "pick", NULL, "c/2026-01-01@1" },
		{ "over", "1", "3" },
		{ "why", NULL, "overbudget overbudget overbudget" },
		{ "state", NULL, "1:RCCC" },
		{ "pick", NULL, "-" },
		{ "end", "c/2026-01-01 ok", NULL },
		{ "state", NULL, "1:SCCC" },
		{ "retry", "1", "3" },
		{ "pick", NULL, "c/2026-01-02@1 wk/2025-12-29@1" } } },
	/* ---- rule 4, downstream ---- */
	{ "downstream runs once, after all its inputs are final", NULL, {
		{ "req", "1 backfill: a/2026-01-05 a/2026-01-06 ^wk/2026-01-05<0,1", NULL },
		{ "pick", NULL, "a/2026-01-05@1 a/2026-01-06@1" },
		{ "end", "a/2026-01-05 ok", NULL },
		{ "pick", NULL, "-" },
		{ "end", "a/2026-01-06 ok", NULL },
		{ "pick", NULL, "wk/2026-01-05@1" },
		{ "end", "wk/2026-01-05 ok", NULL },
		{ "state", NULL, "1:SSS" } } },
	{ "a failed input blocks, naming it", NULL, {
		{ "req", "1 backfill: a/2026-01-05 a/2026-01-06 ^wk/2026-01-05<0,1", NULL },
		{ "pick", NULL, "a/2026-01-05@1 a/2026-01-06@1" },
		{ "end", "a/2026-01-05 fail", NULL },
		{ "why", NULL, "-" },
		{ "end", "a/2026-01-06 ok", NULL },
		{ "why", NULL, "blocked" },
		{ "state", NULL, "1:FSB" },
		{ "blocked_on", "wk/2026-01-05", "a 2026-01-05" } } },
	{ "a later request's success releases a blocked item", NULL, {
		{ "req", "1 backfill: a/2026-01-05 ^wk/2026-01-05<0", NULL },
		{ "pick", NULL, "a/2026-01-05@1" },
		{ "end", "a/2026-01-05 fail", NULL },
		{ "state", NULL, "1:FB" },
		{ "req", "2 backfill: a/2026-01-05", NULL },
		{ "pick", NULL, "a/2026-01-05@2" },
		{ "end", "a/2026-01-05 ok", NULL },
		{ "why", NULL, "blocked landed released" },
		{ "state", NULL, "1:SQ 2:S" },
		{ "pick", NULL, "wk/2026-01-05@1" } } },
	{ "an input cancelled cancels what waits for it", NULL, {
		{ "req", "1 backfill: a/2026-01-05 a/2026-01-06 ^wk/2026-01-05<0,1", NULL },
		{ "pick", NULL, "a/2026-01-05@1 a/2026-01-06@1" },
		{ "end", "a/2026-01-05 ok", NULL },
		{ "gone", "a/2026-01-06", NULL },
		{ "why", NULL, "cancelled" },
		{ "state", NULL, "1:SCC" },
		{ "pick", NULL, "-" } } },
	{ "a failed input blocks even when another was cancelled", NULL, {
		{ "req", "1 backfill: a/2026-01-05 a/2026-01-06 ^wk/2026-01-05<0,1", NULL },
		{ "pick", NULL, "a/2026-01-05@1 a/2026-01-06@1" },
		{ "end", "a/2026-01-05 fail", NULL },
		{ "gone", "a/2026-01-06", NULL },
		{ "state", NULL, "1:FCB" } } },
	{ "fail fast cancels the rest, runs in flight finish", NULL, {
		{ "req", "1 backfill ff: c/2026-01-01 c/2026-01-02 c/2026-01-03", NULL },
		{ "pick", NULL, "c/2026-01-01@1" },
		{ "end", "c/2026-01-01 fail", NULL },
		{ "why", NULL, "failfast failfast" },
		{ "state", NULL, "1:FCC" },
		{ "pick", NULL, "-" } } },
	{ "without fail fast the rest goes on", NULL, {
		{ "req", "1 backfill: c/2026-01-01 c/2026-01-02", NULL },
		{ "pick", NULL, "c/2026-01-01@1" },
		{ "end", "c/2026-01-01 fail", NULL },
		{ "pick", NULL, "c/2026-01-02@1" } } },
	{ "retry with backoff, doubled, then final", NULL, {
		{ "req", "1 backfill: r/2026-01-01", NULL },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "end", "r/2026-01-01 fail", NULL },
		{ "state", NULL, "1:Q" },
		{ "now", "29999", NULL },
		{ "pick", NULL, "-" },
		{ "now", "30000", NULL },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "end", "r/2026-01-01 fail", NULL },
		{ "now", "89999", NULL },
		{ "pick", NULL, "-" },
		{ "now", "90000", NULL },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "end", "r/2026-01-01 fail", NULL },
		{ "state", NULL, "1:F" } } },
	{ "a throttle's requeue costs no attempt", NULL, {
		{ "req", "1 backfill: r/2026-01-01", NULL },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "end", "r/2026-01-01 requeue", NULL },
		{ "attempts", "r/2026-01-01", "0" },
		{ "pick", NULL, "r/2026-01-01@1" } } },
	{ "a run cancelled by a stop costs no attempt either", NULL, {
		{ "req", "1 backfill: r/2026-01-01", NULL },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "end", "r/2026-01-01 fail", NULL },
		{ "now", "30000", NULL },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "end", "r/2026-01-01 cancel", NULL },
		{ "attempts", "r/2026-01-01", "1" },
		{ "pick", NULL, "r/2026-01-01@1" },
		{ "attempts", "r/2026-01-01", "2" } } },
	{ "cancel drops queued and blocked items", NULL, {
		{ "req", "1 backfill: c/2026-01-01 c/2026-01-02 c/2026-01-03", NULL },
		{ "pick", NULL, "c/2026-01-01@1" },
		{ "cancel", "1", "2" },
		{ "state", NULL, "1:RCC" },
		{ "end", "c/2026-01-01 ok", NULL },
		{ "state", NULL, "1:SCC" } } },
	{ "retry queues failed, blocked and cancelled items again", NULL, {
		{ "req", "1 backfill: a/2026-01-05 ^wk/2026-01-05<0", NULL },
		{ "pick", NULL, "a/2026-01-05@1" },
		{ "end", "a/2026-01-05 fail", NULL },
		{ "state", NULL, "1:FB" },
		{ "retry", "1", "2" },
		{ "state", NULL, "1:QQ" },
		{ "pick", NULL, "a/2026-01-05@1" } } },
	/* ---- restart: links rebuilt from the mapping ---- */
	{ "relinked after a restart, a week waits for its days", NULL, {
		{ "req", "1 backfill: a/2026-01-04 a/2026-01-05 a/2026-01-11 a/2026-01-12 ^wk/2026-01-05", NULL },
		{ "relink", "1", NULL },
		{ "pick", NULL, "a/2026-01-04@1 a/2026-01-05@1 a/2026-01-11@1 a/2026-01-12@1" },
		{ "end", "a/2026-01-05 ok", NULL },
		{ "end", "a/2026-01-12 ok", NULL },
		{ "pick", NULL, "-" },
		{ "end", "a/2026-01-11 ok", NULL },
		{ "pick", NULL, "wk/2026-01-05@1" } } },
	/* ---- the gate: paused jobs, throttled warehouses ---- */
	{ "a paused job starts nothing", NULL, {
		{ "pause", "a", NULL },
		{ "req", "1 backfill: a/2026-01-01", NULL },
		{ "req", "2 backfill: b/2026-01-01", NULL },
		{ "pick", NULL, "b/2026-01-01@2" } } },
	{ "a throttled warehouse starts nothing", NULL, {
		{ "throttle", "pg", NULL },
		{ "req", "1 backfill: p1/2026-01-01", NULL },
		{ "req", "2 backfill: a/2026-01-01", NULL },
		{ "pick", NULL, "a/2026-01-01@2" } } },
};

/* clang-format on */

/* ---- the harness ------------------------------------------------------ */

struct world {
	struct config *cfg;
	struct manifest m;
	bool paused[16];
	bool throttled[4];
	bool one_slot; /* several hosts */
	int64_t now;
	char why[512];
};

static bool
paused_cb(void *data, int job)
{
	return ((struct world *)data)->paused[job];
}

static bool
throttled_cb(void *data, int wh)
{
	return ((struct world *)data)->throttled[wh];
}

/* Append the rules that moved items to w->why and forget them. */
static void
world_drain(struct world *w)
{
	static const char *names[] = {
	    [MANIFEST_INPUT_CANCELLED] = "cancelled",
	    [MANIFEST_BLOCKED] = "blocked",
	    [MANIFEST_RELEASED] = "released",
	    [MANIFEST_LANDED] = "landed",
	    [MANIFEST_FAIL_FAST] = "failfast",
	    [MANIFEST_UNCONFIGURED] = "unconfigured",
	    [MANIFEST_OVER_BUDGET] = "overbudget",
	};

	for (size_t i = 0; i < w->m.nchanges; i++) {
		size_t n = strlen(w->why);

		snprintf(w->why + n, sizeof w->why - n, "%s%s", n ? " " : "",
			 names[w->m.changes[i].why]);
	}
	manifest_changes_clear(&w->m);
}

/* Find the item job/key of request id (0: any request, the first). */
static struct item *
world_item(struct world *w, const char *spec, int64_t id)
{
	char job[64], key[CAL_KEY_MAX];

	ck_assert_int_eq(sscanf(spec, "%63[^/]/%31s", job, key), 2);
	for (struct request *rq = w->m.requests.next; rq != &w->m.requests;
	     rq = rq->next)
		for (size_t i = 0; i < rq->n; i++)
			if ((id == 0 || rq->id == id) &&
			    strcmp(rq->items[i]->job_name, job) == 0 &&
			    strcmp(rq->items[i]->key, key) == 0)
				return rq->items[i];
	ck_abort_msg("no item %s", spec);
	return NULL;
}

/* "ID KIND [cap=N] [ff]: ITEM ..." */
static void
world_request(struct world *w, const char *spec)
{
	char head[128], kind[32], *tok, *save, *items;
	const char *colon = strchr(spec, ':');
	struct request *rq;
	long long id;
	int seq = 0;

	ck_assert_ptr_nonnull(colon);
	snprintf(head, sizeof head, "%.*s", (int)(colon - spec), spec);
	ck_assert_int_eq(sscanf(head, "%lld %31s", &id, kind), 2);
	rq = manifest_request_add(&w->m, id, "x", kind, w->now);
	if ((tok = strstr(head, "cap=")) != NULL)
		rq->cap = atoi(tok + 4);
	rq->fail_fast = strstr(head, " ff") != NULL;
	items = strdup(colon + 1);
	for (tok = strtok_r(items, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		bool down = tok[0] == '^';
		char *lt = strchr(tok, '<'), job[64], key[CAL_KEY_MAX];
		struct item *it;

		if (lt)
			*lt = '\0';
		ck_assert_int_eq(sscanf(tok + down, "%63[^/]/%31s", job, key),
				 2);
		it = manifest_item_add(&w->m, rq, seq, job, key, seq, down,
				       MS_QUEUED);
		ck_assert_int_ge(it->job, 0);
		seq++;
		for (char *in = lt ? lt + 1 : NULL; in && *in;
		     in = strchr(in, ',') ? strchr(in, ',') + 1 : NULL)
			manifest_link(rq->items[atoi(in)], it);
	}
	free(items);
}

/* Start run r; append it to out as text. */
static void
world_start(struct world *w, struct run *r, char *out, size_t outsz)
{
	size_t n = strlen(out);
	struct item *e = r->items[0];

	manifest_run_start(&w->m, r);
	n += (size_t)snprintf(out + n, outsz - n, "%s%s/%s@%lld",
			      n ? " " : "", e->job_name, e->key,
			      (long long)e->rq->id);
	if (r->batch && r->nitems > 1)
		n += (size_t)snprintf(out + n, outsz - n, "x%zu", r->nitems);
	if (r->width > 1)
		n += (size_t)snprintf(out + n, outsz - n, "/w%d", r->width);
	for (size_t i = 1; !r->batch && i < r->nitems; i++)
		n += (size_t)snprintf(out + n, outsz - n, "+%lld",
				      (long long)r->items[i]->rq->id);
}

/* Start every run the core picks (deck: the one run of that job handed
 * ahead, pick_next_deck); the runs as text into out. */
static void
world_pick(struct world *w, const char *deck, char *out, size_t outsz)
{
	struct pick_gate g = {paused_cb, throttled_cb, w, w->one_slot};
	int64_t wake = INT64_MAX;
	struct run *r;

	out[0] = '\0';
	if (deck != NULL) {
		r = pick_next_deck(&w->m, &g, config_job_index(w->cfg, deck),
				   w->now, &wake);
		if (r != NULL) {
			ck_assert(r->deck);
			world_start(w, r, out, outsz);
		}
	}
	while (deck == NULL &&
	       (r = pick_next_run(&w->m, &g, w->now, &wake)) != NULL)
		world_start(w, r, out, outsz);
	if (out[0] == '\0')
		snprintf(out, outsz, "-");
}

/* The run of item spec ends with a result, as the shell settles it. */
static void
world_end(struct world *w, const char *spec)
{
	char what[64], res[16];
	struct item *it;
	struct run *r;
	const struct job_def *j;
	enum mstate result;
	bool retry = false;

	ck_assert_int_eq(sscanf(spec, "%63s %15s", what, res), 2);
	it = world_item(w, what, 0);
	for (r = w->m.runs.next; r != &w->m.runs; r = r->next)
		for (size_t i = 0; i < r->nitems; i++)
			if (strcmp(r->items[i]->job_name, it->job_name) == 0 &&
			    strcmp(r->items[i]->key, it->key) == 0)
				goto found;
	ck_abort_msg("%s is not running", what);
found:
	j = &w->cfg->jobs[r->job];
	if (strcmp(res, "ok") == 0) {
		result = MS_SUCCEEDED;
	} else if (strcmp(res, "fail") == 0) {
		retry = manifest_retries(j, r->items[0]->attempts, false);
		result = retry ? MS_QUEUED : MS_FAILED;
	} else {
		r->requeue = strcmp(res, "requeue") == 0;
		result = MS_QUEUED;
	}
	manifest_run_result(&w->m, r, result, retry ? j : NULL, w->now);
	manifest_run_finish(&w->m, r);
	for (size_t i = 0; i < r->nitems; i++)
		if (manifest_final(r->items[i]->state))
			manifest_settle_outs(&w->m, r->items[i]);
	for (size_t i = 0;
	     result == MS_SUCCEEDED && i < (r->batch ? r->nitems : 1); i++)
		manifest_landed(&w->m, r->job_name, r->items[i]->key,
				r->items[0]->rq);
	for (size_t i = 0; result == MS_FAILED && i < r->nitems; i++)
		if (r->items[i]->rq->fail_fast)
			manifest_fail_fast(&w->m, r->items[i]->rq, r->items[i]);
	manifest_run_free(r);
}

/* Each request's states as "ID:LETTERS". */
static void
world_states(struct world *w, char *out, size_t outsz)
{
	static const char letters[] = "QRSFBC";
	size_t n = 0;

	out[0] = '\0';
	for (struct request *rq = w->m.requests.next; rq != &w->m.requests;
	     rq = rq->next) {
		n += (size_t)snprintf(out + n, outsz - n,
				      "%s%lld:", n ? " " : "",
				      (long long)rq->id);
		for (size_t i = 0; i < rq->n; i++)
			n += (size_t)snprintf(out + n, outsz - n, "%c",
					      letters[rq->items[i]->state]);
	}
}

/* Run one step. */
static void
world_step(struct world *w, const struct step *st, const char *name)
{
	char got[512];

	got[0] = '\0';
	if (strcmp(st->op, "req") == 0) {
		world_request(w, st->arg);
	} else if (strcmp(st->op, "pick") == 0) {
		world_pick(w, NULL, got, sizeof got);
	} else if (strcmp(st->op, "slots") == 0) {
		char job[64];
		long long id;

		ck_assert_int_eq(sscanf(st->arg, "%63s %lld", job, &id), 2);
		snprintf(got, sizeof got, "%d %d %d",
			 w->m.job_running[config_job_index(w->cfg, job)],
			 w->m.nrunning,
			 manifest_request_find(&w->m, id)->nruns);
	} else if (strcmp(st->op, "hosts") == 0) {
		w->one_slot = true;
	} else if (strcmp(st->op, "cut") == 0) {
		struct pick_gate g = {paused_cb, throttled_cb, w, w->one_slot};
		int64_t wake = INT64_MAX;
		struct run *r = pick_next_run(&w->m, &g, w->now, &wake);

		ck_assert_ptr_nonnull(r);
		if (r->nitems > (size_t)atoi(st->arg))
			r->nitems = (size_t)atoi(st->arg);
		pick_run_trim(&w->m, r);
		world_start(w, r, got, sizeof got);
	} else if (strcmp(st->op, "deck") == 0) {
		world_pick(w, st->arg, got, sizeof got);
	} else if (strcmp(st->op, "undeck") == 0) {
		struct item *it = world_item(w, st->arg, 0);

		ck_assert_ptr_nonnull(it->run);
		ck_assert(it->run->deck);
		manifest_run_undeck(&w->m, it->run);
		ck_assert(!it->run->deck);
	} else if (strcmp(st->op, "end") == 0) {
		world_end(w, st->arg);
	} else if (strcmp(st->op, "state") == 0) {
		world_states(w, got, sizeof got);
	} else if (strcmp(st->op, "why") == 0) {
		world_drain(w);
		snprintf(got, sizeof got, "%s", w->why[0] ? w->why : "-");
		w->why[0] = '\0';
	} else if (strcmp(st->op, "cancel") == 0) {
		snprintf(
		    got, sizeof got, "%lld",
		    (long long)manifest_cancel(
			&w->m, manifest_request_find(&w->m, atoll(st->arg))));
		for (size_t i = 0;
		     i < manifest_request_find(&w->m, atoll(st->arg))->n; i++)
			manifest_settle_outs(
			    &w->m, manifest_request_find(&w->m, atoll(st->arg))
				       ->items[i]);
	} else if (strcmp(st->op, "over") == 0) {
		struct request *rq = manifest_request_find(&w->m, atoll(st->arg));

		snprintf(got, sizeof got, "%lld",
			 (long long)manifest_over_budget(&w->m, rq, "over budget"));
		ck_assert(rq->over_budget);
	} else if (strcmp(st->op, "gone") == 0) {
		struct item *it = world_item(w, st->arg, 0);

		if (it->run != NULL) {
			struct run *r = it->run;

			manifest_run_finish(&w->m, r);
			for (size_t i = 0; i < r->nitems; i++)
				r->items[i]->run = NULL;
			manifest_run_free(r);
		}
		manifest_set(&w->m, it, MS_CANCELLED);
		manifest_settle_outs(&w->m, it);
	} else if (strcmp(st->op, "relink") == 0) {
		manifest_relink(&w->m,
				manifest_request_find(&w->m, atoll(st->arg)));
	} else if (strcmp(st->op, "retry") == 0) {
		snprintf(
		    got, sizeof got, "%lld",
		    (long long)manifest_retry(
			&w->m, manifest_request_find(&w->m, atoll(st->arg))));
	} else if (strcmp(st->op, "now") == 0) {
		w->now = atoll(st->arg);
	} else if (strcmp(st->op, "pause") == 0) {
		w->paused[config_job_index(w->cfg, st->arg)] = true;
	} else if (strcmp(st->op, "throttle") == 0) {
		for (size_t i = 0; i < w->cfg->nwarehouses; i++)
			if (strcmp(w->cfg->warehouses[i].name, st->arg) == 0)
				w->throttled[i] = true;
	} else if (strcmp(st->op, "blocked_on") == 0) {
		struct item *it = world_item(w, st->arg, 0);

		snprintf(got, sizeof got, "%s",
			 it->blocked_on ? it->blocked_on : "-");
	} else if (strcmp(st->op, "attempts") == 0) {
		snprintf(got, sizeof got, "%d",
			 world_item(w, st->arg, 0)->attempts);
	} else if (strcmp(st->op, "reindex") == 0) {
		manifest_reindex(&w->m, w->cfg);
	} else if (strcmp(st->op, "parts") == 0) {
		int j = config_job_index(w->cfg, st->arg);

		snprintf(got, sizeof got, "%lld %lld %lld",
			 (long long)w->m.job_parts[j][MS_QUEUED],
			 (long long)w->m.job_parts[j][MS_RUNNING],
			 (long long)w->m.job_parts[j][MS_BLOCKED]);
	} else {
		ck_abort_msg("%s: unknown step %s", name, st->op);
	}
	if (strcmp(st->op, "why") != 0)
		world_drain(w);
	if (st->want != NULL)
		ck_assert_msg(strcmp(got, st->want) == 0,
			      "%s: %s %s: got \"%s\", want \"%s\"", name,
			      st->op, st->arg ? st->arg : "", got, st->want);
}

START_TEST(manifest_cases)
{
	const struct mcase *c = &cases[_i];
	const char *yaml = c->yaml ? c->yaml : jobs_yaml;
	struct world w;
	struct err err;

	memset(&w, 0, sizeof w);
	if (config_load_string("/tmp/manifest.yaml", yaml, strlen(yaml), &w.cfg,
			       &err) < 0)
		ck_abort_msg("%s: config: %s", c->name, err.msg);
	manifest_init(&w.m, w.cfg);
	for (size_t i = 0;
	     i < sizeof c->steps / sizeof c->steps[0] && c->steps[i].op != NULL;
	     i++)
		world_step(&w, &c->steps[i], c->name);
	while (w.m.runs.next != &w.m.runs) {
		struct run *r = w.m.runs.next;

		manifest_run_finish(&w.m, r);
		manifest_run_free(r);
	}
	manifest_clear(&w.m);
	config_unref(w.cfg);
}
END_TEST

/* ---- retries and backoff ---------------------------------------------- */

/* clang-format off */
static const struct {
	int retries;
	int64_t backoff_s;
	int attempts;
	bool draining;
	bool retried;
	int64_t wait_ms;
} retry_cases[] = {
	{ 0, 30, 1, false, false, 30000 },
	{ 2, 30, 1, false, true, 30000 },
	{ 2, 30, 2, false, true, 60000 },
	{ 2, 30, 3, false, false, 120000 },
	{ 2, 30, 1, true, false, 30000 },      /* stopping: no retry */
	{ 40, 3600, 30, false, true, 115200000 }, /* no doubling past a day */
};

/* clang-format on */

START_TEST(manifest_retry_cases)
{
	struct job_def j = {.retries = retry_cases[_i].retries,
			    .retry_backoff = retry_cases[_i].backoff_s};

	ck_assert_int_eq(manifest_retries(&j, retry_cases[_i].attempts,
					  retry_cases[_i].draining),
			 retry_cases[_i].retried);
	ck_assert_int_eq(manifest_backoff_ms(&j, retry_cases[_i].attempts),
			 retry_cases[_i].wait_ms);
}
END_TEST

/* SCHED-2: the one cap of a warehouse, for dispatch and for the
 * connections the executor keeps (exec_sql.c). */
START_TEST(test_wh_cap)
{
	struct warehouse_def w = { .kind = WH_POSTGRES, .max_connections = 3 };

	ck_assert_int_eq(pick_wh_cap(&w), 3);
	w.kind = WH_CLICKHOUSE;
	ck_assert_int_eq(pick_wh_cap(&w), 3);
	w.kind = WH_SQLITE; /* one file: no cap */
	ck_assert_int_eq(pick_wh_cap(&w), -1);
}
END_TEST

static Suite *
manifest_suite(void)
{
	Suite *s = suite_create("manifest");
	TCase *tc = tcase_create("rules");

	tcase_add_loop_test(tc, manifest_cases, 0,
			    (int)(sizeof cases / sizeof cases[0]));
	tcase_add_loop_test(tc, manifest_retry_cases, 0,
			    (int)(sizeof retry_cases / sizeof retry_cases[0]));
	tcase_add_test(tc, test_wh_cap);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(manifest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
