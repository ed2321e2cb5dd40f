/*
 * pg_conn.h - opening a libpq connection the way both PostgreSQL users in
 * the backfilld-pg module do (wh_pg.c, the warehouse driver, and
 * store_pg.c, the state store): conninfo, a password_file read at each
 * connect and never kept, one connect timeout and application name.
 */
#ifndef BACKFILLD_PG_CONN_H
#define BACKFILLD_PG_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

#include "err.h"

#define PG_CONN_TIMEOUT "10"      /* seconds, libpq's connect_timeout */
#define PG_CONN_PASSWORD_MAX 4096 /* bytes of a password_file read */

int pg_conn_password(const char *who, const char *path, int code,
		     bool first_line, char **out, struct err *err);
PGconn *pg_conn_connect(const char *conninfo, char *password);
/* Make pg's socket close-on-exec (after a connect or a PQreset): no
 * command run inherits a connection (NULL, or no socket: nothing). */
void pg_conn_cloexec(PGconn *pg);
const char *pg_conn_error(PGconn *pg);
void pg_conn_where(PGconn *pg, char *buf, size_t len);

#endif
