/*
 * store_pg_fixture.c - a PostgreSQL state store for the unit tests
 * (store_pg_fixture.h).
 */
#include "store_pg_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module.h"

static char pgfix_schema[64];

bool
pgfix_available(void)
{
	const char *c = getenv("BACKFILLD_TEST_STATE_PG");

	return c != NULL && *c != '\0';
}

const char *
pgfix_conninfo(void)
{
	return getenv("BACKFILLD_TEST_STATE_PG");
}

const char *
pgfix_password_file(void)
{
	return getenv("BACKFILLD_TEST_STATE_PG_PASSWORD_FILE");
}

/* The server's notices (DROP ... CASCADE) are not the test's output. */
static void
pgfix_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

PGconn *
pgfix_conn(void)
{
	const char *kw[3] = { "dbname", NULL, NULL }, *val[3];
	const char *pwf = pgfix_password_file();
	char pw[256] = "";
	PGconn *c;
	FILE *f;

	val[0] = pgfix_conninfo();
	val[1] = val[2] = NULL;
	if (pwf != NULL && (f = fopen(pwf, "r")) != NULL) {
		if (fgets(pw, sizeof pw, f) != NULL)
			pw[strcspn(pw, "\r\n")] = '\0';
		fclose(f);
		kw[1] = "password";
		val[1] = pw;
	}
	c = PQconnectdbParams(kw, val, 1);
	ck_assert_msg(PQstatus(c) == CONNECTION_OK, "connecting: %s",
		      PQerrorMessage(c));
	PQsetNoticeProcessor(c, pgfix_notice, NULL);
	return c;
}

long long
pgfix_peek(const char *sql)
{
	PGconn *c = pgfix_conn();
	PGresult *r = PQexec(c, sql);
	long long v = -1;

	ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK ||
		      PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql,
		      PQerrorMessage(c));
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	PQfinish(c);
	return v;
}

void
pgfix_reset(void)
{
	char sql[160], opts[96];

	if (pgfix_schema[0] == '\0')
		snprintf(pgfix_schema, sizeof pgfix_schema, "bfd_test_%d",
			 (int)getpid());
	unsetenv("PGOPTIONS");
	snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE;"
		 " CREATE SCHEMA %s", pgfix_schema, pgfix_schema);
	pgfix_peek(sql);
	snprintf(opts, sizeof opts, "-c search_path=%s", pgfix_schema);
	setenv("PGOPTIONS", opts, 1);
	/* the module of this build tree, unless the test names another */
	setenv("BACKFILLD_TEST_MODULE_DIR", STORE_PG_MODULE_DIR, 0);
}

int
pgfix_store_open(struct store **st, struct err *err)
{
	return store_open_pg(pgfix_conninfo(), pgfix_password_file(), st, err);
}

void
pgfix_open(struct store **st)
{
	struct err err;

	pgfix_reset();
	if (pgfix_store_open(st, &err) < 0)
		ck_abort_msg("store_open_pg: %s", err.msg);
}

void
pgfix_close(struct store *st)
{
	char sql[128];

	store_close(st);
	unsetenv("PGOPTIONS");
	snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE",
		 pgfix_schema);
	pgfix_peek(sql);
}

void *
pgfix_symbol(const char *name)
{
	char why[512];
	void *sym = module_symbol(name, "the PostgreSQL state store", why,
				  sizeof why);

	ck_assert_msg(sym != NULL, "%s", why);
	return sym;
}
