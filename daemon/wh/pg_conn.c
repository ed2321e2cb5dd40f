/*
 * pg_conn.c - the libpq connection shared by the warehouse driver and the
 * state store on PostgreSQL (pg_conn.h).
 *
 * Rules that must always hold:
 *  PGCONN-1. A password read from password_file lives only for the connect: it
 *     is wiped and freed before pg_conn_connect returns.
 *  PGCONN-2. The defaults (connect_timeout, fallback_application_name) come
 *     before dbname, so that a connection string may override them.
 */
#include "pg_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/*
 * Read password_file path into a malloc'd *out: its first line when
 * first_line, else its contents without the trailing newlines.  Errors
 * carry code and start with who ("state store", "warehouse \"w\"").
 */
int
pg_conn_password(const char *who, const char *path, int code,
		 bool first_line, char **out, struct err *err)
{
	char *buf;
	size_t n;
	FILE *f;

	*out = NULL;
	f = fopen(path, "re");
	if (f == NULL)
		return err_set(err, code, "%s: cannot read password_file %s:"
			       " %s", who, path, strerror(errno));
	buf = xcalloc(1, PG_CONN_PASSWORD_MAX + 1);
	n = fread(buf, 1, PG_CONN_PASSWORD_MAX, f);
	if (ferror(f)) {
		explicit_bzero(buf, PG_CONN_PASSWORD_MAX);
		free(buf);
		fclose(f);
		return err_set(err, code, "%s: cannot read password_file %s",
			       who, path);
	}
	fclose(f);
	buf[n] = '\0';
	if (first_line)
		buf[strcspn(buf, "\r\n")] = '\0';
	else
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
	if (first_line ? buf[0] == '\0' : n == 0) {
		free(buf);
		return err_set(err, code, "%s: password_file %s is empty",
			       who, path);
	}
	*out = buf;
	return 0;
}

/* Connect to conninfo with password (NULL: none; wiped and freed here,
 * PGCONN-1); NULL only when libpq could not allocate the connection. */
PGconn *
pg_conn_connect(const char *conninfo, char *password)
{
	const char *kw[5], *val[5];
	PGconn *pg;
	int n = 0;

	/* PGCONN-2 */
	kw[n] = "connect_timeout";
	val[n++] = PG_CONN_TIMEOUT;
	kw[n] = "fallback_application_name";
	val[n++] = "backfilld";
	kw[n] = "dbname";
	val[n++] = conninfo;
	if (password != NULL) {
		kw[n] = "password";
		val[n++] = password;
	}
	kw[n] = NULL;
	val[n] = NULL;
	pg = PQconnectdbParams(kw, val, 1);
	if (password != NULL) {
		explicit_bzero(password, strlen(password));
		free(password);
	}
	pg_conn_cloexec(pg);
	return pg;
}

void
pg_conn_cloexec(PGconn *pg)
{
	int fd = pg != NULL ? PQsocket(pg) : -1;

	if (fd >= 0)
		(void)fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

/* "host H port P" of a connection, for messages (never its password). */
void
pg_conn_where(PGconn *pg, char *buf, size_t len)
{
	const char *h = pg != NULL ? PQhost(pg) : NULL;
	const char *p = pg != NULL ? PQport(pg) : NULL;

	snprintf(buf, len, "host %s port %s", h != NULL && *h != '\0' ? h :
		 "(default)", p != NULL && *p != '\0' ? p : "(default)");
}

/* The connection's last libpq message without its "ERROR:  " or
 * "FATAL:  " (may span lines); "unknown error" when there is none. */
const char *
pg_conn_error(PGconn *pg)
{
	const char *m = pg != NULL ? PQerrorMessage(pg) : NULL;

	if (m == NULL || *m == '\0')
		return "unknown error";
	if (strncmp(m, "ERROR:  ", 8) == 0 || strncmp(m, "FATAL:  ", 8) == 0)
		m += 8;
	return m;
}
