/*
 * fuzz_runresult.c - libFuzzer target: the result of a run on another
 * node, runresult_parse() (jansson underneath) and runresult_format().
 *
 * Invariants (FUZZ_CHECK traps when one breaks):
 *  - a refused text leaves the defaults (nothing allocated) and an
 *    error, exit code EXIT_BAD_INPUT: one line for a JSON text (an
 *    earlier worker's key=value line is quoted as it is: the log escapes
 *    it, text.h);
 *  - an accepted one holds the bounds of runresult.h: at most
 *    RUNRESULT_MAX_CHECKS checks, each named, with a detail, names and
 *    details at most RUNRESULT_STR_MAX bytes, parts below
 *    RUNRESULT_MAX_PARTS; at most RUNRESULT_MAX_PARTS guards of at most
 *    RUNRESULT_MAX_METRICS metrics; checksums shorter than
 *    RUNRESULT_SUM_MAX; rows_changed -1 or more;
 *  - what it read, written again, reads back, and is written the same
 *    a second time (the format is a fixed point).
 */
#include "fuzz.h"

#include "runresult.h"

/* The bounds of an accepted result. */
static void
fuzz_runresult_bounded(const struct runresult *r)
{
	FUZZ_CHECK(r->rows_changed >= -1);
	FUZZ_CHECK(r->nchecks <= RUNRESULT_MAX_CHECKS);
	FUZZ_CHECK((r->nchecks == 0) == (r->checks == NULL));
	for (size_t i = 0; i < r->nchecks; i++) {
		const struct runresult_check *c = &r->checks[i];

		FUZZ_CHECK(c->name != NULL && c->detail != NULL);
		FUZZ_CHECK(strlen(c->name) <= RUNRESULT_STR_MAX);
		FUZZ_CHECK(strlen(c->detail) <= RUNRESULT_STR_MAX);
		FUZZ_CHECK(c->part < RUNRESULT_MAX_PARTS);
	}
	FUZZ_CHECK(r->nguards <= RUNRESULT_MAX_PARTS);
	FUZZ_CHECK(r->nguards == 0 || r->guards != NULL);
	for (size_t p = 0; p < r->nguards; p++) {
		const struct runresult_guard *g = &r->guards[p];

		FUZZ_CHECK(g->nmetrics <= RUNRESULT_MAX_METRICS);
		FUZZ_CHECK((g->nmetrics == 0) == (g->metrics == NULL));
		FUZZ_CHECK(memchr(g->sum_before, '\0', RUNRESULT_SUM_MAX));
		FUZZ_CHECK(memchr(g->sum_after, '\0', RUNRESULT_SUM_MAX));
		FUZZ_CHECK(!g->has_changes || g->changes >= 0);
	}
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct runresult r, again;
	struct buf once, twice;
	struct err err;
	char *text = fuzz_strndup(data, size);

	memset(&err, 0, sizeof err);
	if (runresult_parse(text, &r, &err) == -1) {
		FUZZ_CHECK(err.code == EXIT_BAD_INPUT);
		FUZZ_CHECK(err.msg[0] != '\0');
		if (text[strspn(text, " \t\n\r")] == '{')
			FUZZ_CHECK(fuzz_one_line(err.msg));
		FUZZ_CHECK(r.checks == NULL && r.nchecks == 0);
		FUZZ_CHECK(r.guards == NULL && r.nguards == 0);
		FUZZ_CHECK(r.rows_changed == -1 && !r.timed_out &&
			   !r.not_started && !r.cancelled &&
			   !r.committed_before);
		free(text);
		return 0;
	}
	fuzz_runresult_bounded(&r);
	buf_init(&once);
	buf_init(&twice);
	runresult_format(&r, &once);
	FUZZ_CHECK(runresult_parse(once.data, &again, &err) == 0);
	fuzz_runresult_bounded(&again);
	FUZZ_CHECK(again.nchecks == r.nchecks && again.nguards == r.nguards);
	FUZZ_CHECK((again.guards == NULL) == (r.guards == NULL));
	for (size_t p = 0; p < r.nguards; p++)
		FUZZ_CHECK(again.guards[p].has_changes ==
			   r.guards[p].has_changes &&
			   (!r.guards[p].has_changes ||
			    again.guards[p].changes == r.guards[p].changes));
	runresult_format(&again, &twice);
	FUZZ_CHECK(once.len == twice.len &&
		   memcmp(once.data, twice.data, once.len) == 0);
	buf_free(&once);
	buf_free(&twice);
	runresult_clear(&again);
	runresult_clear(&r);
	free(text);
	return 0;
}
