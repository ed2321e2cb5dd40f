/*
 * test_olevent.c - OpenLineage run events (daemon/lib/proto/olevent.h):
 * the spec's required fields and their types (RunEvent 2-0-2, BaseFacet),
 * the facets, the UUIDs and the datasets' names per warehouse.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "olevent.h"

static const struct ol_dataset ins[] = { { "sqlite:///d/dw.db", "src" } };
static const struct ol_dataset outs[] = { { "sqlite:///d/dw.db", "fct" } };

/* The facts of a run of fct's 2026-01-06, type t. */
static struct ol_run_facts
facts(enum ol_type t)
{
	struct ol_run_facts f = {
		.type = t, .run_id = "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3",
		.ns = "etl", .job = "fct", .event_ms = 1767225600123LL,
		.nominal_start = 1767657600, .nominal_end = 1767744000,
		.request_id = 7, .request_kind = "backfill",
		.partition = "2026-01-06", .attempt = 2,
		.code_version = "0123456789abcdef", .inputs = ins, .ninputs = 1,
		.outputs = outs, .noutputs = 1,
	};
	return f;
}

static json_t *
parse(const struct ol_run_facts *f)
{
	char *text = ol_event_json(f);
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	ck_assert_msg(j != NULL, "not JSON: %s", text);
	ck_assert_ptr_null(strchr(text, '\n'));
	free(text);
	return j;
}

static const char *
str(json_t *o, const char *path)
{
	json_t *v = o;
	char buf[256], *save, *k;

	snprintf(buf, sizeof buf, "%s", path);
	for (k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
		v = json_object_get(v, k);
	ck_assert_msg(json_is_string(v), "%s is no string", path);
	return json_string_value(v);
}

/* The required fields of RunEvent, with their types. */
START_TEST(test_required_fields)
{
	struct ol_run_facts f = facts(OL_START);
	json_t *j = parse(&f), *facets;

	ck_assert_str_eq(str(j, "eventType"), "START");
	ck_assert_str_eq(str(j, "eventTime"), "2026-01-01T00:00:00.123Z");
	ck_assert_str_eq(str(j, "schemaURL"), OL_SCHEMA_URL);
	ck_assert_str_eq(str(j, "producer"), "urn:backfilld:" BACKFILLD_VERSION);
	ck_assert_str_eq(str(j, "run.runId"), f.run_id);
	ck_assert_str_eq(str(j, "job.namespace"), "etl");
	ck_assert_str_eq(str(j, "job.name"), "fct");
	ck_assert(json_is_array(json_object_get(j, "inputs")));
	ck_assert_str_eq(str(json_array_get(json_object_get(j, "inputs"), 0),
			     "name"), "src");
	ck_assert_str_eq(str(json_array_get(json_object_get(j, "outputs"), 0),
			     "namespace"), "sqlite:///d/dw.db");
	facets = json_object_get(json_object_get(j, "run"), "facets");
	/* every facet a BaseFacet: _producer and _schemaURL */
	const char *name;
	json_t *fc;
	json_object_foreach(facets, name, fc) {
		ck_assert_msg(json_is_string(json_object_get(fc, "_producer")),
			      "%s", name);
		ck_assert_msg(json_is_string(json_object_get(fc, "_schemaURL")),
			      "%s", name);
	}
	ck_assert_ptr_null(json_object_get(facets, "parent"));
	ck_assert_ptr_null(json_object_get(facets, "errorMessage"));
	json_decref(j);
}
END_TEST

/* nominalTime, the custom facet, the parent. */
START_TEST(test_facets)
{
	struct ol_run_facts f = facts(OL_COMPLETE);
	json_t *j, *bp;

	f.parent_run_id = "11111111-2222-8333-8444-555555555555";
	f.parent_job = "fct_root";
	f.skipped = true;
	j = parse(&f);
	ck_assert_str_eq(str(j, "run.facets.nominalTime.nominalStartTime"),
			 "2026-01-06T00:00:00.000Z");
	ck_assert_str_eq(str(j, "run.facets.nominalTime.nominalEndTime"),
			 "2026-01-07T00:00:00.000Z");
	ck_assert_str_eq(str(j, "run.facets.parent.run.runId"),
			 f.parent_run_id);
	ck_assert_str_eq(str(j, "run.facets.parent.job.name"), "fct_root");
	ck_assert_str_eq(str(j, "run.facets.parent.job.namespace"), "etl");
	bp = json_object_get(json_object_get(json_object_get(j, "run"),
					     "facets"), "backfilld_partition");
	ck_assert_int_eq(json_integer_value(json_object_get(bp, "request")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(bp, "attempt")), 2);
	ck_assert(json_is_true(json_object_get(bp, "skipped")));
	ck_assert_str_eq(str(bp, "partition"), "2026-01-06");
	ck_assert_str_eq(str(bp, "requestKind"), "backfill");
	ck_assert_str_eq(str(bp, "codeVersion"), "0123456789abcdef");
	/* its schema as installed, its producer the event's */
	ck_assert_str_eq(str(bp, "_schemaURL"), "file://"
			 BACKFILLD_OL_SCHEMA_DIR "/BackfilldPartitionRunFacet.json"
			 "#/$defs/BackfilldPartitionRunFacet");
	ck_assert_str_eq(str(bp, "_producer"), str(j, "producer"));
	json_decref(j);
}
END_TEST

/* FAIL carries its error (escaped); ABORT's name. */
START_TEST(test_fail_abort)
{
	struct ol_run_facts f = facts(OL_FAIL);
	json_t *j;

	f.error = "no such table: \"src\"\n";
	j = parse(&f);
	ck_assert_str_eq(str(j, "eventType"), "FAIL");
	ck_assert_str_eq(str(j, "run.facets.errorMessage.message"), f.error);
	json_decref(j);
	f = facts(OL_ABORT);
	f.ninputs = f.noutputs = 0;
	j = parse(&f);
	ck_assert_str_eq(str(j, "eventType"), "ABORT");
	ck_assert_int_eq(json_array_size(json_object_get(j, "inputs")), 0);
	json_decref(j);
}
END_TEST

/* Version and variant bits; a named UUID is stable and tells texts
 * apart. */
START_TEST(test_uuids)
{
	uint8_t r[16];
	char a[OL_UUID_LEN], b[OL_UUID_LEN];

	memset(r, 0xff, sizeof r);
	ol_uuid_v4(r, a);
	ck_assert_str_eq(a, "ffffffff-ffff-4fff-bfff-ffffffffffff");
	memset(r, 0, sizeof r);
	ol_uuid_v4(r, a);
	ck_assert_str_eq(a, "00000000-0000-4000-8000-000000000000");
	ol_uuid_of("backfilld etl request 7 1767225600000", a);
	ol_uuid_of("backfilld etl request 7 1767225600000", b);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(a[14], '8');
	ck_assert(strchr("89ab", a[19]) != NULL);
	ol_uuid_of("backfilld etl request 8 1767225600000", b);
	ck_assert_str_ne(a, b);
}
END_TEST

/* The datasets' names per warehouse (OpenLineage's naming). */
START_TEST(test_dataset_names)
{
	struct warehouse_def w;
	struct ol_dataset d;

	memset(&w, 0, sizeof w);
	w.kind = WH_SQLITE;
	w.path = "/var/lib/dw.db";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "sqlite:///var/lib/dw.db");
	ck_assert_str_eq(d.name, "fct");

	w.kind = WH_POSTGRES;
	w.conninfo = "host=db1 port=5433 dbname=dw user=etl";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "postgres://db1:5433");
	ck_assert_str_eq(d.name, "dw.public.fct");
	ol_dataset_name(&w, "mart.sales", &d);
	ck_assert_str_eq(d.name, "dw.mart.sales");
	w.conninfo = "dbname='dw'";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "postgres://localhost:5432");
	ck_assert_str_eq(d.name, "dw.public.fct");
	/* a Unix socket's directory as host: this host's server */
	w.conninfo = "host=/run/postgresql port=5439 dbname=etl";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "postgres://localhost:5439");
	ck_assert_str_eq(d.name, "etl.public.fct");
	w.conninfo = "postgresql://etl@db2/sales?sslmode=require";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "postgres://db2:5432");
	ck_assert_str_eq(d.name, "sales.public.fct");

	w.kind = WH_CLICKHOUSE;
	w.url = "http://ch1:8123";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "clickhouse://ch1:8123");
	ck_assert_str_eq(d.name, "default.fct");
	w.url = "https://ch2/?database=dw";
	ol_dataset_name(&w, "fct", &d);
	ck_assert_str_eq(d.ns, "clickhouse://ch2:8443");
	ck_assert_str_eq(d.name, "dw.fct");
	ol_dataset_name(&w, "other.fct", &d);
	ck_assert_str_eq(d.name, "other.fct");
}
END_TEST

static Suite *
olevent_suite(void)
{
	Suite *s = suite_create("olevent");
	TCase *tc = tcase_create("olevent");

	tcase_add_test(tc, test_required_fields);
	tcase_add_test(tc, test_facets);
	tcase_add_test(tc, test_fail_abort);
	tcase_add_test(tc, test_uuids);
	tcase_add_test(tc, test_dataset_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(olevent_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
