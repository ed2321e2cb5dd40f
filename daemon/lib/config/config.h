/*
 * config.h - the configuration file (backfilld.yaml(5); docs/configuration.md,
 * "Configuration"), loaded
 * with libyaml into these structs and validated completely before anyone
 * sees it.  Pure: reads only the file it is given and the sql_file/
 * password_file paths it names.
 *
 * A struct config is immutable once loaded and reference counted: the
 * daemon swaps in a new one on reload while runs in flight keep the one
 * they started with (config_ref/config_unref).
 */
#ifndef BACKFILLD_CONFIG_H
#define BACKFILLD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar.h"
#include "err.h"
#include "reconcile.h"
#include "trend.h"
#include "sqlscan.h"

struct pos {
	int line; /* 1-based; 0 when unknown */
	int col;  /* 1-based */
};

enum wh_kind { WH_SQLITE, WH_POSTGRES, WH_CLICKHOUSE };

/* A warehouse's throttle: while `sql` returns a value above max, no new
 * run starts there; above critical its runs in flight are requeued. */
struct throttle_def {
	char *sql;
	bool has_max;
	double max;
	bool has_critical;
	double critical;
	int64_t every;       /* seconds, default 5 */
	struct pos pos;
};

struct warehouse_def {
	char *name;
	enum wh_kind kind;
	char *path;          /* sqlite: absolute path of the database file */
	char *conninfo;      /* postgres: libpq connection string */
	char *password_file; /* postgres: absolute path, or NULL */
	int max_connections; /* postgres: default min(max_concurrency, 4) */
	struct throttle_def *throttle; /* NULL when absent */
	char **on_throttle;  /* hook argv, NULL-terminated, or NULL */
	size_t on_throttle_len;
	char *file;          /* absolute path of the file that defines it */
	struct pos pos;
	struct pos path_pos; /* sqlite: where its path is in that file */
	char *url;           /* clickhouse: the HTTP interface's URL */
	char *user;          /* clickhouse: the user, or NULL (default) */
	char *cluster;       /* clickhouse: a remote_servers cluster, or NULL */
	char **shards;       /* clickhouse: each shard's URL, in shard_num
			      * order (NULL: from system.clusters) */
	size_t nshards;
};

struct check_def {
	char *name;
	char *sql;
	bool warn;          /* severity: warn (default error) */
	struct pos pos;
};

/* reconcile: a value on another warehouse against one on the job's own,
 * after the write (docs/configuration.md, "Reconciliation"). */
struct reconcile_def {
	char *name;
	char *source_warehouse;  /* its name */
	int source_wh;           /* index into config->warehouses */
	char *source_sql;
	int64_t source_timeout;  /* seconds, default 60 */
	char *target_sql;
	struct reconcile_tolerance tolerance; /* default 0 (exact) */
	bool warn;               /* severity: warn */
	struct pos pos;
};

struct metric_def {
	char *name;
	char *sql;          /* an aggregate expression over the job's table */
	bool has_max_change;
	double max_change;  /* percent */
	bool warn;          /* severity: warn of its max_change and trend
			     * (default error) */
	struct trend_def trend; /* trend: against the job's own history */
	struct pos pos;
};

struct late_data_def {
	char *sql;
	int64_t every; /* seconds */
	struct pos pos;
};

/* A hook (on_failure, on_late, on_refused): argv run without a shell,
 * {job} {partition} {request} {error} substituted in each element. */
struct hook_def {
	char **argv;  /* NULL-terminated, or NULL when the hook is not set */
	size_t argc;
	struct pos pos;
};

enum hook_kind { HOOK_FAILURE, HOOK_LATE, HOOK_REFUSED, HOOK_WARNING,
	HOOK_COUNT };

struct job_def {
	char *name;
	char *file;     /* absolute path of the file that defines it */
	struct pos pos; /* where its mapping starts in that file */

	char *warehouse_name; /* NULL for command jobs without warehouse */
	int warehouse;        /* index into config->warehouses, or -1 */
	enum grain grain;     /* = cal.grain */
	/* The job's calendar (calendar.h): its grain, week_start: and
	 * timezone: (its own, else the top level's); cal.tz is `zone`, a
	 * reference the job holds, NULL for UTC. */
	struct cal cal;
	struct tz *zone;
	bool zone_set;        /* timezone: written on the job itself */

	/* No start: no clock schedule.  A job with upstream runs when its
	 * inputs land; one without upstream and without start is allowed and
	 * runs only for operator backfills (within end, if any). */
	bool has_start;
	part_t start; /* first partition that exists */
	bool has_end;
	part_t end;   /* last partition that exists */
	int64_t ready_after; /* seconds */
	bool catchup;        /* default true */
	int max_catchup;     /* default: config max_catchup */
	int max_backfill;    /* default: config max_backfill */
	int64_t max_backfill_time; /* seconds, a backfill request's budget of
				    * warehouse time (budget.h); default:
				    * config's; 0: none */
	int concurrency;     /* default 1 */
	int retries;         /* default 0 */
	int64_t retry_backoff; /* seconds, default 30 */
	int64_t timeout;       /* seconds, 0 = none */
	bool allow_wall_clock;
	bool batch;          /* batch: true or batch: N */
	int batch_size;      /* batch: N, partitions per run (>= 2); 0 with
			      * batch: true (all of a request at once) */
	bool verify;         /* prove idempotency before every request */
	int64_t keep_runs;   /* seconds; default: config keep_runs */

	char *sql;         /* inline sql or the contents of sql_file */
	char *sql_file;    /* absolute path, or NULL */
	char **command;    /* argv, NULL-terminated, or NULL */
	size_t command_len;
	struct check_def *checks;
	size_t nchecks;
	struct reconcile_def *reconciles;
	size_t nreconciles;

	char **upstream;   /* names */
	size_t nupstream;
	int *upstream_idx; /* indices into config->jobs */
	int *upstream_lookback; /* per entry: {job, lookback: N}, or NULL (0) */
	int *downstream_idx; /* jobs that name this one in upstream */
	size_t ndownstream;
	/* {job: ITSELF, lookback: N} (a running total, DESIGN "A job in its
	 * own upstream"): N >= 1, 0 when the job does not read itself.  The
	 * entry is taken out of upstream[] (config_graph.c), so every walk
	 * of the graph (topological order, downstream lists, staleness, the
	 * schedule's "no upstream") sees no loop; lineage.h and plan.h read
	 * it here. */
	int self_lookback;
	size_t self_entry; /* its position in upstream: as written */

	/* lineage from the SQL (config_lineage.c, sqltables.h): the tables
	 * the job's statements, checks and metrics read (its own left out)
	 * and the tables it writes (its table, then its statements'), each
	 * once; reads_ignored as written */
	char **reads;
	size_t nreads;
	char **writes;
	size_t nwrites;
	char **reads_ignored;
	size_t nreads_ignored;

	/* guardrails */
	char *table;
	char *partition_column;
	char **key;
	size_t nkey;
	int64_t min_rows;
	struct metric_def *metrics;
	size_t nmetrics;
	struct late_data_def *late_data; /* NULL when absent */

	/* freshness (docs/configuration.md, "Freshness and hooks") */
	int64_t deadline;    /* seconds, 0 = none */
	struct hook_def hooks[HOOK_COUNT]; /* indexed by enum hook_kind */

	char code_version[17]; /* hex of a 64-bit hash of the definition */

	/* several hosts (docs/several-hosts.md): the nodes that may run this
	 * job; NULL (nnodes 0) when any node may */
	char **nodes;
	size_t nnodes;

	/* ClickHouse (docs/clickhouse.md): publish an empty stage partition,
	 * emptying the live one; default false (refused) */
	bool allow_empty;
	/* ClickHouse: table is a Distributed table, as the check of the
	 * partition keys found it on the server (exec_check_partition_keys,
	 * at start and before a reload's configuration is used); false when
	 * not reached.  Not from the file. */
	bool distributed;
};

struct config {
	int refs;
	char *path; /* absolute path of the file */
	char *dir;  /* its folder */
	char file_hash[17]; /* over the file and every file it includes */
	size_t nfiles;      /* files read: the file and its includes */

	/* The state store: an SQLite file (state_db, the default) or, for
	 * several hosts, a PostgreSQL database (state: postgres:).  Exactly
	 * one of state_db and state_conninfo is set. */
	char *state_db;
	char *state_conninfo;      /* state: postgres: libpq connection string */
	char *state_password_file; /* state: password_file: absolute, or NULL */
	char *node;    /* this daemon's name among the nodes: default host name */
	int64_t lease; /* seconds, default 10: a silent node keeps its role
			* and its runs this long */
	/* over the files like file_hash, without node:'s value: nodes that
	 * share one configuration have the same one */
	char cluster_hash[17];
	char *socket;
	char *socket_group; /* NULL: the daemon's own group */
	/* where state_db's and socket_group's values are (line 0: not in
	 * the file), for what the daemon checks of them on the host */
	struct pos state_db_pos, socket_group_pos;
	char *log_level;    /* NULL: info */
	int max_concurrency; /* default 4 */
	int max_catchup;     /* default 31 */
	int max_backfill;    /* default 366 */
	struct tz *zone;     /* timezone: the jobs' default zone; NULL: UTC */
	bool build_future;   /* default false: backfill and rerun refuse a
			      * partition whose interval has not closed
			      * (schedule.h); true: they build it */
	int64_t max_backfill_time; /* seconds, default 0 (none): the jobs'
				    * default budget (budget.h) */
	int64_t shutdown_grace; /* seconds, default 30 */
	int64_t keep_runs;      /* seconds, default 365d: finished runs kept */
	int64_t hook_timeout;   /* seconds, default 30: a hook is killed after */
	int hook_concurrency;   /* hooks running at once (daemon/lib/hookq.h) */
	int hook_queue;         /* hooks waiting for room, at most */
	char *metrics_file;     /* Prometheus text format, or NULL */
	char *report_file;      /* the HTML report page, or NULL */
	/* openlineage (config_ol.c): the run events' endpoint or file
	 * (one of them; both NULL: none), job namespace, timeout
	 * (seconds), queue (events waiting at most) */
	char *ol_url;
	char *ol_file;
	char *ol_namespace;
	int64_t ol_timeout;
	int ol_queue;
#define OL_DEFAULT_NAMESPACE "backfilld"
#define OL_DEFAULT_TIMEOUT 5
#define OL_DEFAULT_QUEUE 1000
	/* http_listen (docs/http.md): the read-only HTTP endpoint's
	 * address as written (NULL: off), its numeric host and port, and
	 * whether the host is a loopback address */
	char *http_listen;
	char http_host[46];
	int http_port;
	bool http_loopback;

	struct warehouse_def *warehouses;
	size_t nwarehouses;
	struct job_def *jobs;
	size_t njobs;
	int *topo; /* job indices, every upstream before its downstream */
	/* The first undeclared read of another job's table (DESIGN.md,
	 * "Lineage from the SQL"), "FILE:LINE:COL: job ..." as a load error
	 * would say it, or NULL: --check-config and a reload refuse the
	 * configuration with it, a start logs it as a warning and runs. */
	char *lineage_error;
};

/*
 * Load and validate FILE.  On error returns -1 with err->code EXIT_BAD_INPUT
 * and err->msg "FILE:LINE:COLUMN: message" (one line, naming what to do).
 * On success *out holds a config with one reference.
 */
int config_load(const char *path, struct config **out, struct err *err);
/* Same, from a string; `path` names it in messages and anchors relative
 * paths. */
int config_load_string(const char *path, const char *text, size_t len,
		       struct config **out, struct err *err);
/*
 * The socket path of configuration FILE as backfillctl --config reads it:
 * the top-level socket: only (resolved against FILE's folder), the rest
 * unchecked, so that a file the daemon would refuse still names the
 * socket of the daemon that runs.  *socket is NULL when the file names
 * none (the caller uses the default).  A file that is not YAML has its
 * "socket:" line read alone, and warn (empty otherwise) says so with the
 * position of the YAML error.  Returns -1 with err (EXIT_BAD_INPUT) when
 * the file cannot be read or socket: is not a path.
 */
int config_socket(const char *path, char **socket, char *warn, size_t wsize,
		  struct err *err);
int config_socket_string(const char *path, const char *text, size_t len,
			 char **socket, char *warn, size_t wsize,
			 struct err *err);
/* A configuration with an undeclared read (lineage_error) refused: -1
 * with err (EXIT_BAD_INPUT) and *cfg unreferenced and NULL; else 0. */
int config_lineage_refuse(struct config **cfg, struct err *err);
struct config *config_ref(struct config *cfg);
void config_unref(struct config *cfg);

/* The config key of a hook kind: on_failure, on_late, on_refused. */
const char *hook_kind_name(enum hook_kind k);

/* Job by name, or NULL. */
const struct job_def *config_job(const struct config *cfg, const char *name);
/* A job's calendar (grain, week_start:, timezone:): the one accessor
 * every rule relating its partitions goes through. */
static inline const struct cal *
job_cal(const struct job_def *j)
{
	return &j->cal;
}
/* The lookback of upstream entry u (DESIGN "Dependencies are windows"):
 * partition P reads the upstream partitions overlapping P's interval
 * extended back by this many partitions of the job's own calendar. */
static inline int
job_lookback(const struct job_def *j, size_t u)
{
	return j->upstream_lookback != NULL ? j->upstream_lookback[u] : 0;
}
/* A job's calendar as the state store records it (jobs.calendar): ""
 * for UTC with Monday weeks, else "ZONE" or "ZONE sunday".  A job with
 * built partitions keeps it (startup_check_calendars). */
#define CONFIG_CAL_NAME_MAX 128
void config_cal_name(const struct job_def *j, char *buf, size_t size);
int config_job_index(const struct config *cfg, const char *name);

/* The SQL dialect of a job's warehouse (sqlscan.h), SQLite's when it has
 * none. */
enum sqlscan_dialect config_job_dialect(const struct config *cfg,
					const struct job_def *j);

/* A SQLite warehouse's file, read-only and never created: 0 when it is an
 * SQLite database (empty, or its header says "SQLite format 3") or cannot
 * be opened (a missing file is startup.c's, a permission the daemon's
 * user may have), else -1 with why ("it is not an SQLite database (25
 * bytes that do not start with SQLite's header)", "it is not a regular
 * file"). */
int config_wh_sqlite_header(const char *path, char *why, size_t n);

/* True when this daemon shares a PostgreSQL state store with other nodes. */
bool config_is_cluster(const struct config *cfg);

#define CONFIG_LEASE_DEFAULT 10                  /* seconds */
#define CONFIG_INCLUDE_FILES 1000                /* files read, at most */
#define CONFIG_INCLUDE_DEPTH 8                   /* include nesting */
#define CONFIG_TOTAL_BYTES (32 * 1024 * 1024)    /* YAML of all files */

/* Default config path when none is given: /etc/backfilld/backfilld.yaml */
#define CONFIG_DEFAULT_PATH "/etc/backfilld/backfilld.yaml"

#endif
