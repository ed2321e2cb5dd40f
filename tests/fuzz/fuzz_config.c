/*
 * fuzz_config.c - libFuzzer target: the configuration loader,
 * config_load_string(), on any bytes.
 *
 * Invariants (FUZZ_CHECK traps when one breaks):
 *  - a refused file gets no configuration and one line of error,
 *    "FILE:..." naming the file, with exit code 2 (or 4: out of memory);
 *  - a loaded one is consistent: every job is found by its name, every
 *    index (warehouse, upstream, downstream, topological order) is in
 *    range, the order holds each job once with its upstream jobs before
 *    it, concurrency is within max_concurrency, start is not after end.
 * The file's folder does not exist, so relative sql_file and
 * password_file paths fail fast instead of reading the machine.
 */
#include "fuzz.h"

#include "config.h"

#define FUZZ_CONFIG_PATH "/nonexistent-backfilld-fuzz/backfilld.yaml"

/* Check what the loader promises about a configuration it accepted. */
static void
fuzz_config_check(const struct config *cfg)
{
	size_t i, k;
	char *seen;
	size_t *pos;

	FUZZ_CHECK(cfg->refs == 1);
	FUZZ_CHECK(cfg->max_concurrency >= 1);
	FUZZ_CHECK(cfg->njobs == 0 || cfg->topo != NULL);
	seen = calloc(cfg->njobs + 1, 1);
	pos = calloc(cfg->njobs + 1, sizeof *pos);
	FUZZ_CHECK(seen != NULL && pos != NULL);
	for (i = 0; i < cfg->njobs; i++) {
		FUZZ_CHECK(cfg->topo[i] >= 0 && (size_t)cfg->topo[i] < cfg->njobs);
		FUZZ_CHECK(!seen[cfg->topo[i]]);
		seen[cfg->topo[i]] = 1;
		pos[cfg->topo[i]] = i;
	}
	for (i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];

		FUZZ_CHECK(j->name != NULL);
		FUZZ_CHECK(config_job_index(cfg, j->name) == (int)i);
		FUZZ_CHECK(config_job(cfg, j->name) == j);
		FUZZ_CHECK(j->grain >= GRAIN_HOUR && j->grain <= GRAIN_MONTH);
		FUZZ_CHECK(j->warehouse >= -1 &&
		    (j->warehouse == -1 || (size_t)j->warehouse < cfg->nwarehouses));
		FUZZ_CHECK(j->concurrency >= 1 &&
		    j->concurrency <= cfg->max_concurrency);
		FUZZ_CHECK(!(j->has_start && j->has_end) || j->start <= j->end);
		FUZZ_CHECK((j->sql != NULL) + (j->command != NULL) == 1);
		FUZZ_CHECK(j->command == NULL || j->command[j->command_len] == NULL);
		FUZZ_CHECK(strlen(j->code_version) == 16);
		for (k = 0; k < j->nupstream; k++) {
			int u = j->upstream_idx[k];

			FUZZ_CHECK(u >= 0 && (size_t)u < cfg->njobs);
			FUZZ_CHECK(strcmp(cfg->jobs[u].name, j->upstream[k]) == 0);
			FUZZ_CHECK(pos[u] < pos[i]);
			/* any grain may feed any other (their intervals
			 * overlap); a job is not its own upstream, and a
			 * window goes back at most 1000 partitions */
			FUZZ_CHECK(u != (int)i);
			FUZZ_CHECK(job_lookback(j, k) >= 0 &&
			    job_lookback(j, k) <= 1000);
		}
		/* a running total's entry on itself: kept apart, 1..1000 */
		FUZZ_CHECK(j->self_lookback >= 0 && j->self_lookback <= 1000);
		FUZZ_CHECK(j->self_lookback == 0 ||
		    j->self_entry <= j->nupstream);
		for (k = 0; k < j->ndownstream; k++)
			FUZZ_CHECK(j->downstream_idx[k] >= 0 &&
			    (size_t)j->downstream_idx[k] < cfg->njobs);
	}
	FUZZ_CHECK(config_job_index(cfg, "") == -1);
	free(seen);
	free(pos);
}

/* libFuzzer's entry point: one input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = NULL;
	struct err err;

	memset(&err, 0, sizeof err);
	if (config_load_string(FUZZ_CONFIG_PATH, (const char *)data, size,
	    &cfg, &err) == 0) {
		FUZZ_CHECK(cfg != NULL);
		fuzz_config_check(cfg);
		FUZZ_CHECK(config_ref(cfg) == cfg);
		config_unref(cfg);
		config_unref(cfg);
		return 0;
	}
	FUZZ_CHECK(cfg == NULL);
	FUZZ_CHECK(err.code == EXIT_BAD_INPUT || err.code == EXIT_INTERNAL);
	FUZZ_CHECK(fuzz_one_line(err.msg));
	FUZZ_CHECK(strncmp(err.msg, FUZZ_CONFIG_PATH,
	    strlen(FUZZ_CONFIG_PATH)) == 0);
	return 0;
}
