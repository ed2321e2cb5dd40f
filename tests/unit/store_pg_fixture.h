/*
 * store_pg_fixture.h - a PostgreSQL state store for the unit tests
 * (test_store.c, test_store_ops.c), when BACKFILLD_TEST_STATE_PG names a
 * server (libpq's conninfo; BACKFILLD_TEST_STATE_PG_PASSWORD_FILE, when
 * set, is its password_file).  tests/integration/test_store_pg.py starts a
 * throwaway cluster and runs the tests against it.
 *
 * Each store is opened through store_open_pg (the backfilld-pg.so module
 * of the build tree, as the daemon loads it) in a schema of its own, made
 * empty by pgfix_open and dropped by pgfix_close (PGOPTIONS search_path),
 * so cases never see each other's rows.
 */
#ifndef BACKFILLD_STORE_PG_FIXTURE_H
#define BACKFILLD_STORE_PG_FIXTURE_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "store.h"

/* Is a server named (BACKFILLD_TEST_STATE_PG)? */
bool pgfix_available(void);
/* A fresh store in a fresh schema (the test fails when it cannot). */
void pgfix_open(struct store **st);
/* Close st (NULL: already closed) and drop the schema. */
void pgfix_close(struct store *st);
/* Empty the schema again, for a case that opens stores itself. */
void pgfix_reset(void);
/* store_open_pg with the test's conninfo and password_file. */
int pgfix_store_open(struct store **st, struct err *err);
/* A connection of the test's own, on the store's schema. */
PGconn *pgfix_conn(void);
/* Run SQL on a connection of the test's own: the first column of its
 * first row as an integer (-1: no row); the test fails on an error. */
long long pgfix_peek(const char *sql);
/* A symbol of the module (store_pg_fence, ...); the test fails without. */
void *pgfix_symbol(const char *name);
const char *pgfix_conninfo(void);
const char *pgfix_password_file(void);

#endif
