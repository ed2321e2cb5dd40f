/* sql_embedded.h - the state store's migrations, compiled in from sql/. */
#ifndef BACKFILLD_SQL_EMBEDDED_H
#define BACKFILLD_SQL_EMBEDDED_H

struct sql_migration {
	int version;      /* PRAGMA user_version once applied */
	const char *name; /* file name in sql/ */
	const char *sql;
};

extern const struct sql_migration sql_migrations[];
extern const int sql_migrations_count;

#endif
