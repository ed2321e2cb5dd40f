/*
 * store_pg.h - the state store on PostgreSQL (store_pg.c), in the
 * backfilld-pg module: the same operations as the SQLite store (store.h),
 * for several nodes sharing one database (docs/several-hosts.md).
 */
#ifndef BACKFILLD_STORE_PG_H
#define BACKFILLD_STORE_PG_H

#include "cluster.h"
#include "store.h"

/* The operations, reached through dlsym (store.c, store_open_pg). */
extern const struct store_ops store_pg_ops;

/*
 * Connect (conninfo as libpq reads it; password_file, when not NULL, holds
 * the password: its contents without the trailing newline) and migrate
 * the schema to the one compiled in, once whichever nodes start together.
 * Reached through dlsym, as store_pg_ops.
 */
int store_pg_open(const char *conninfo, const char *password_file,
		  struct store **out, struct err *err);

/*
 * Fencing (see store_pg.c; reached through dlsym): with generation > 0,
 * every transaction the store opens first checks that the lease row
 * still holds that generation, and fails with "deposed: ..." when it does
 * not; 0 turns the check off.
 */
void store_pg_fence(struct store *st, int64_t generation);

/*
 * The planner's work rows in its own transaction (reached through dlsym;
 * the store must be fenced and a transaction open, store_defer): offer
 * runs (their work rows, NOTIFY bf_work at the commit), and delete the
 * done rows of the results it recorded.  Sent in the turn's batches
 * (store_pg.c), so a run's row and its offer, a result's record and its
 * deletion, commit together; a failure fails the transaction.
 */
int store_pg_offer(struct store *st, const struct cluster_offer *o, size_t n,
		   struct err *err);
int store_pg_forget(struct store *st, const int64_t *ids, size_t n,
		    struct err *err);

#endif
