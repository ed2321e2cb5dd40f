/*
 * olevent.h - OpenLineage run events (spec 2-0-2) as JSON text (pure).
 *
 * A run of a job is a RunEvent START then one of COMPLETE, FAIL, ABORT
 * (docs/operations.md, "Lineage events (OpenLineage)"), with:
 *   - run.runId: a UUID per run, the same on its START and its end;
 *   - job: the configured namespace and the job's name;
 *   - inputs, outputs: the job's inferred reads and writes (config.h),
 *     named by OpenLineage's dataset naming (ol_dataset_name);
 *   - run facets: nominalTime (the partition's interval, UTC), parent
 *     (the request that caused the run: a downstream run's parent is its
 *     request, named as the request's own job) and backfilld_partition
 *     (request, kind, attempt, partition key, code version, a skip by
 *     early cut-off); errorMessage on a FAIL.
 * The transport (server/base/olsend.h) only carries the text.
 */
#ifndef BACKFILLD_OLEVENT_H
#define BACKFILLD_OLEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define OL_SCHEMA_URL \
	"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
/* The producer: a URI (the spec's format: uri) that claims no URL, as
 * the project has none of its own; the version in it. */
#define OL_PRODUCER "urn:backfilld:" BACKFILLD_VERSION
/* The custom facet's schema, as installed (config/openlineage/). */
#define OL_PARTITION_SCHEMA \
	"file://" BACKFILLD_OL_SCHEMA_DIR "/BackfilldPartitionRunFacet.json" \
	"#/$defs/BackfilldPartitionRunFacet"
/* UUID text and its terminator */
#define OL_UUID_LEN 37

enum ol_type { OL_START, OL_COMPLETE, OL_FAIL, OL_ABORT };

/* A dataset: its namespace (the data source) and its name. */
struct ol_dataset {
	char ns[512];
	char name[512];
};

/* What an event says of one run. */
struct ol_run_facts {
	enum ol_type type;
	const char *run_id;       /* UUID text */
	const char *ns;           /* the job namespace */
	const char *job;
	int64_t event_ms;         /* eventTime */
	int64_t nominal_start;    /* seconds: the interval's first instant */
	int64_t nominal_end;      /* and the first after it */
	int64_t request_id;
	const char *request_kind; /* backfill, schedule, ... */
	const char *partition;    /* the key (a batch: its first) */
	int attempt;
	const char *code_version;
	bool skipped;             /* skipped by early cut-off */
	const char *error;        /* FAIL: the error, or NULL */
	const char *parent_run_id;/* the request's UUID, or NULL */
	const char *parent_job;   /* the request's job */
	const struct ol_dataset *inputs;
	size_t ninputs;
	const struct ol_dataset *outputs;
	size_t noutputs;
};

/* "START", "COMPLETE", "FAIL", "ABORT". */
const char *ol_type_name(enum ol_type t);
/* The event as one line of JSON (no newline), malloc'd. */
char *ol_event_json(const struct ol_run_facts *f);
/* A version 4 UUID from 16 random bytes. */
void ol_uuid_v4(const uint8_t rnd[16], char out[OL_UUID_LEN]);
/* A version 8 UUID that is a function of `text` (two FNV-1a 64 hashes):
 * the same text, the same UUID (a request's, across restarts). */
void ol_uuid_of(const char *text, char out[OL_UUID_LEN]);
/* Table `table` of warehouse w as OpenLineage names it: sqlite://PATH
 * and the table; postgres://HOST:PORT and DB.SCHEMA.TABLE (schema
 * public when unqualified); clickhouse://HOST:PORT and DB.TABLE
 * (database default, or the URL's ?database=, when unqualified). */
void ol_dataset_name(const struct warehouse_def *w, const char *table,
		     struct ol_dataset *out);

#endif
