/*
 * module.h - the optional module backfilld-pg.so (libpq and what it
 * brings), loaded on first use so that a daemon on SQLite alone never maps
 * it.  It holds the PostgreSQL warehouse driver (wh_pg_driver, for
 * exec_conn.c), the PostgreSQL state store (store_pg_ops and
 * store_pg_open, for store.c) and the cluster driver (cluster.c).
 *
 * Searched beside the executable (a build tree), then in the install
 * folder; BACKFILLD_TEST_MODULE_DIR (tests only) replaces both.  Loaded
 * with RTLD_NOW | RTLD_LOCAL and never unloaded.  Safe from any thread.
 */
#ifndef BACKFILLD_MODULE_H
#define BACKFILLD_MODULE_H

#include <stddef.h>

/* The address of `symbol` in the module, or NULL with one line in why:
 * "cannot load WHAT PATH: REASON" or "PATH has no SYMBOL: reinstall
 * backfilld" (what: "the PostgreSQL driver", ...). */
void *module_symbol(const char *symbol, const char *what, char *why,
		    size_t whysz);
/* The same from another module of the same folders: backfilld-ch.so
 * holds the ClickHouse warehouse driver (wh_ch_driver; libcurl). */
void *module_symbol_in(const char *file, const char *symbol,
		       const char *what, char *why, size_t whysz);

#endif
