/*
 * chstage.h - the engine of a ClickHouse job's stage table
 * (docs/clickhouse.md, "Replicated targets").
 *
 * The stage is created AS the live table, so that it has its columns, and
 * REPLACE PARTITION wants the same structure, partition key and ordering
 * on both sides.  A Replicated*MergeTree target cannot lend its engine as
 * it is: its ZooKeeper path and replica name would make the stage a
 * second replica of the live table (18.16 refuses: "Replica ... already
 * exists", code 253) or, on another path, replicate the stage's rows.
 * The stage gets the same engine without replication instead: the
 * MergeTree of the same family, with the engine's other arguments and the
 * PARTITION BY, ORDER BY, SAMPLE BY and SETTINGS clauses unchanged; the
 * REPLACE then publishes once on the replica the daemon talks to and the
 * other replicas follow.  Pure: no I/O.
 */
#ifndef BACKFILLD_CHSTAGE_H
#define BACKFILLD_CHSTAGE_H

/*
 * From engine_full (system.tables) of a live table: 0 when the engine is
 * not replicated (the stage is created AS the table with its engine,
 * *out NULL); 1 with *out (malloc'd) the engine clause for the stage when
 * it is ReplicatedX('path', 'replica'[, args]) [clauses] or ReplicatedX
 * [clauses] (a newer server's default path): X[(args)] [clauses]; -1
 * (*out NULL) for a Replicated engine whose arguments do not start with
 * two string literals, or whose list does not end.
 */
int chstage_engine(const char *engine_full, char **out);
/* CREATE TABLE IF NOT EXISTS `stage` AS `live` ENGINE = (chstage_engine
 * of engine_full), malloc'd; NULL when engine_full is no Replicated
 * engine chstage_engine reads (the names are plain: chsql_ident_ok). */
char *chstage_create(const char *stage, const char *live,
		     const char *engine_full);

#endif
