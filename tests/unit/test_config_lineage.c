/*
 * test_config_lineage.c - lineage from the SQL in the configuration
 * (config_lineage.c): an undeclared read of another job's table kept in
 * lineage_error at the read's position (inline, literal block, sql_file),
 * refused by config_lineage_refuse; upstream and reads_ignored accept it;
 * reads_ignored of a table not read is a load error; a job's statements
 * reading its own table; checks reading it do not count; other
 * warehouses; each job's reads and writes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#define WH "warehouses:\n  - name: w\n    sqlite: w.db\n" \
	"  - name: v\n    sqlite: v.db\njobs:\n"
#define FCT "  - name: fct\n    warehouse: w\n    partition: day\n" \
	"    table: fct_sales\n" \
	"    sql: INSERT INTO fct_sales SELECT * FROM raw\n"
#define MART "  - name: mart\n    warehouse: w\n    partition: day\n" \
	"    sql: |\n      DELETE FROM mart;\n" \
	"      INSERT INTO mart SELECT * FROM fct_sales\n"

static struct config *
load(const char *text)
{
	struct config *cfg = NULL;
	struct err err = { 0 };
	int rc = config_load_string("inline.yaml", text, strlen(text), &cfg,
				    &err);

	ck_assert_msg(rc == 0, "unexpected error: %s", err.msg);
	return cfg;
}

/* The undeclared read of text, or NULL; the config freed. */
static void
want_lineage(const char *text, const char *msg)
{
	struct config *cfg = load(text);
	struct err err = { 0 };

	if (msg == NULL) {
		ck_assert_msg(cfg->lineage_error == NULL, "unexpected: %s",
			      cfg->lineage_error);
		ck_assert_int_eq(config_lineage_refuse(&cfg, &err), 0);
		config_unref(cfg);
		return;
	}
	ck_assert_ptr_nonnull(cfg->lineage_error);
	ck_assert_str_eq(cfg->lineage_error, msg);
	ck_assert_int_eq(config_lineage_refuse(&cfg, &err), -1);
	ck_assert_ptr_null(cfg);
	ck_assert_int_eq(err.code, EXIT_BAD_INPUT);
	ck_assert_str_eq(err.msg, msg);
}

START_TEST(test_undeclared)
{
	want_lineage(WH FCT MART,
		     "inline.yaml:17:38: job \"mart\" reads fct_sales, which job \"fct\" writes, but does not list it in upstream: a backfill of fct would leave mart stale; add it to upstream, or to reads_ignored: [fct_sales] if mart reads it as a lookup that must not trigger rebuilds");
	want_lineage(WH FCT MART "    upstream: [fct]\n", NULL);
	want_lineage(WH FCT MART "    reads_ignored: [fct_sales]\n", NULL);
	/* another warehouse's fct_sales is another table */
	want_lineage(WH FCT "  - name: mart\n    warehouse: v\n"
		     "    partition: day\n"
		     "    sql: INSERT INTO mart SELECT * FROM fct_sales\n", NULL);
	/* a check reads too (a plain scalar: its column) */
	want_lineage(WH FCT "  - name: mart\n    warehouse: w\n"
		     "    partition: day\n    sql: INSERT INTO mart SELECT 1\n"
		     "    table: mart\n    checks:\n      - name: c\n"
		     "        sql: SELECT count(*) FROM mart JOIN FCT_SALES\n",
		     "inline.yaml:19:45: job \"mart\" reads fct_sales, which job \"fct\" writes, but does not list it in upstream: a backfill of fct would leave mart stale; add it to upstream, or to reads_ignored: [fct_sales] if mart reads it as a lookup that must not trigger rebuilds");
}
END_TEST

START_TEST(test_self)
{
	/* a running total reads its own table */
	want_lineage(WH "  - name: tot\n    warehouse: w\n    partition: day\n"
		     "    table: tot\n    sql: INSERT INTO tot SELECT * FROM tot\n",
		     "inline.yaml:11:40: job \"tot\" reads its own table tot: a repair of one of its partitions would leave the later partitions that read it stale; add {job: tot, lookback: 1} to its upstream if a partition reads its earlier partitions (a running total: a repair then rebuilds every later partition in order), or reads_ignored: [tot] if each partition reads only rows it writes itself");
	/* ... declared by a lookback on itself */
	want_lineage(WH "  - name: tot\n    warehouse: w\n    partition: day\n"
		     "    table: tot\n    sql: INSERT INTO tot SELECT * FROM tot\n"
		     "    upstream: [{job: tot, lookback: 1}]\n", NULL);
	want_lineage(WH "  - name: tot\n    warehouse: w\n    partition: day\n"
		     "    table: tot\n    sql: INSERT INTO tot SELECT * FROM tot\n"
		     "    reads_ignored: [tot]\n", NULL);
	/* its checks and metrics reading it are what checks are for */
	want_lineage(WH FCT "    partition_column: d\n    checks:\n      - name: c\n"
		     "        sql: SELECT count(*) > 0 FROM fct_sales\n"
		     "    metrics:\n      m: (SELECT count(*) FROM fct_sales)\n",
		     NULL);
}
END_TEST

START_TEST(test_ignored_not_read)
{
	struct config *cfg = NULL;
	struct err err = { 0 };
	const char *text = WH FCT MART "    upstream: [fct]\n"
		"    reads_ignored: [fct_sales, raw]\n";

	ck_assert_int_eq(config_load_string("inline.yaml", text, strlen(text),
					    &cfg, &err), -1);
	ck_assert_str_eq(err.msg, "inline.yaml:19:32: job \"mart\": reads_ignored names \"raw\", which its SQL does not read; remove it");
}
END_TEST

START_TEST(test_sql_file)
{
	char dir[] = "/tmp/test_lineage_XXXXXX", path[256], yaml[1024], want[1024];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/mart.sql", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("-- the mart\nINSERT INTO mart\n  SELECT * FROM\n    fct_sales;\n", f);
	fclose(f);
	snprintf(yaml, sizeof yaml, WH FCT "  - name: mart\n    warehouse: w\n"
		 "    partition: day\n    sql_file: %s\n", path);
	snprintf(want, sizeof want, "%s:4:5: job \"mart\" reads fct_sales, which job \"fct\" writes, but does not list it in upstream: a backfill of fct would leave mart stale; add it to upstream, or to reads_ignored: [fct_sales] if mart reads it as a lookup that must not trigger rebuilds", path);
	want_lineage(yaml, want);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Each job's reads and writes, once each, in the order of the text. */
START_TEST(test_reads_writes)
{
	struct config *cfg = load(WH FCT MART "    upstream: [fct]\n"
				  "    table: mart\n");
	const struct job_def *m = config_job(cfg, "mart");
	const struct job_def *f = config_job(cfg, "fct");

	ck_assert_uint_eq(f->nwrites, 1);
	ck_assert_str_eq(f->writes[0], "fct_sales");
	ck_assert_uint_eq(f->nreads, 1);
	ck_assert_str_eq(f->reads[0], "raw");
	ck_assert_uint_eq(m->nwrites, 1);
	ck_assert_str_eq(m->writes[0], "mart");
	ck_assert_uint_eq(m->nreads, 1);
	ck_assert_str_eq(m->reads[0], "fct_sales");
	config_unref(cfg);
}
END_TEST

static Suite *
lineage_suite(void)
{
	Suite *s = suite_create("config_lineage");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_undeclared);
	tcase_add_test(tc, test_self);
	tcase_add_test(tc, test_ignored_not_read);
	tcase_add_test(tc, test_sql_file);
	tcase_add_test(tc, test_reads_writes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(lineage_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
