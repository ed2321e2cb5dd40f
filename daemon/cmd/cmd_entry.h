/*
 * cmd_entry.h - what a command's file defines, and the helpers cmd.c
 * shares with the command files (daemon side; see cmd.h for the callers'
 * side).
 *
 * Each command lives in a cmd_NAME.c that defines a `const struct
 * cmd_entry`: the command's specification (cmdspec.h: its name, flags
 * and arguments, shared with backfillctl) and the function that runs it.
 * cmd.c lists them all, finds the entry of a REQUEST, checks the peer's
 * rights, parses the request's fields once by the specification into a
 * typed request (struct cmdspec_req: strings, integers, flags, dates,
 * lists, each in its command's member of the union), and only then calls
 * exec, so a handler starts from values already checked, never looks a
 * field up, and keeps only the checks that need the configuration or the
 * state (a known job, its grain, bounds and max_backfill).  A handler answers with status,
 * out and err in its struct cmd_res, and changes nothing when it refuses.
 * Output is a human table or JSON (json=1), in the shapes of docs/commands.md.
 */
#ifndef BACKFILLD_CMD_ENTRY_H
#define BACKFILLD_CMD_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "cmd.h"
#include "cmdspec.h"

/* What a handler answers. */
struct cmd_res {
	int status;
	struct buf out;
	struct err err;
	struct buf *frame;         /* NULL: the fields go to request, total */
	struct cmd_stream *stream; /* set by a handler that streams */
	int64_t request, total;
};

/* A command of the daemon: its specification and what runs it. */
struct cmd_entry {
	const struct cmdspec *spec;
	void (*exec)(struct cmd_ctx *ctx, const struct cmdspec_req *req,
		     struct cmd_res *res);
};

/* status on several hosts (cmd_nodes.c): the nodes and warnings; nothing
 * on a single host. */
void cmd_nodes_json(struct cmd_ctx *ctx, struct buf *out);
/* A job's GRAIN cell (jobs, status): its grain, with its week start and
 * zone when they are not Monday and UTC: "week (sunday)",
 * "day (Europe/Berlin)".  buf: at least CMD_GRAIN_MAX bytes. */
#define CMD_GRAIN_MAX 320
const char *cmd_grain_text(const struct job_def *j, char *buf);

/* cmd_shards.c: a partition a ClickHouse Distributed target publishes
 * shard by shard (docs/clickhouse.md, "Beyond one server"). */
#define CMD_SHARDS_NAMED 64
struct cmd_shards {
	int published, of;
	int shard[CMD_SHARDS_NAMED]; /* the shards published, in order */
	char names[256];             /* ... as "1, 2" */
};
/* The shards request's run of job's partition key has published (those
 * recorded by runs up to upto_run; 0: all): false when the job publishes
 * on no cluster's shards or none is recorded. */
bool cmd_shards_read(struct sched *sched, int64_t request, const char *job,
		     const char *key, int64_t upto_run, struct cmd_shards *out);
/* {"published": N, "of": M, "shards": [...], "partial": B}, or null when
 * not known. */
void cmd_shards_json(struct buf *out, const struct cmd_shards *sh,
		     bool known);
/* "partially published: shard 1 of 2", or "published on all 2 shards". */
void cmd_shards_text(const struct cmd_shards *sh, char *buf, size_t size);
/* status: the partitions some shards have published and others not (of
 * job `only`, or all), as lines or the "partially_published" array. */
void cmd_shards_partial(struct cmd_ctx *ctx, const char *only, bool json,
			struct buf *out);
void cmd_nodes_text(struct cmd_ctx *ctx, struct buf *out);

/* Partitions of job j collected by key (backfill's ways of choosing
 * them, cmd_backfill.c): cmd_keys_cb adds one key of the job's grain (a
 * store_key_cb; other text is left out). */
struct cmd_keys {
	const struct job_def *j;
	part_t *parts;
	size_t n, cap;
};
int cmd_keys_cb(const char *key, void *data, struct err *err);
/* Epoch milliseconds as a JSON string of its ISO-8601 UTC time
 * (cal_format_iso_ms), or null when !has (cmd_runs.c). */
void cmd_json_time(struct buf *b, int64_t ms, bool has);

/* reload (cmd_changed.c): per job whose code version changed, the
 * partitions older versions built, `backfill JOB --changed` and its
 * estimate; text lines, or a JSON array.  Judged by d->next's settings
 * (a dry run's file) when it is set, else by the running ones. */
void cmd_changed_report(struct sched *s, const struct config_diff *d,
			bool json, struct buf *out);

/* The entry of command `name`, or NULL. */
const struct cmd_entry *cmd_find(const char *name);
/* Parse a request's fields by its command's specification into *rq, as
 * cmd_run() does before exec: 0, or -1 with err (EXIT_BAD_INPUT); *rq
 * is released with cmdspec_req_free either way. */
int cmd_parse(const struct cmd_entry *ce, const struct proto_msg *msg,
	      struct cmdspec_req *rq, struct err *err);

/* Pages of a stream: about this many bytes of output at most (a page
 * ends after the row that crosses it), and a long `out` is cut into DATA
 * chunks of this size. */
#define CMD_PAGE_BYTES (256 * 1024)

/* Refuse with a status and a message. */
void cmd_fail(struct cmd_res *res, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Take an error as the result. */
void cmd_fail_err(struct cmd_res *res, const struct err *err);
/* The index of the job called name (the request's JOB), or -1 after
 * refusing an unknown one with the configured names. */
int cmd_job(struct cmd_ctx *ctx, const char *name, struct cmd_res *res);
/* n as JSON, or null when !has. */
void cmd_json_count(struct buf *out, bool has, int64_t n);
/* Epoch ms as ISO-8601, or "-" when !has, into buf (CAL_KEY_MAX). */
void cmd_fmt_time(int64_t ms, bool has, char *buf);

/* A text table: rows of ncols cells, printed aligned. */
#define CMD_TABLE_MAX_COLS 16
struct cmd_table {
	size_t ncols;
	char **cells; /* row-major */
	size_t nrows, cap;
	size_t width[CMD_TABLE_MAX_COLS];
};
/* Add a row of ncols strings (NULL: empty). */
void cmd_table_row(struct cmd_table *t, const char *const *cols);
/* Print the rows aligned (last column unpadded) and free them; the
 * widths stay, so that a streamed table printed page by page stays
 * aligned as long as later rows are no wider (widths only grow). */
void cmd_table_print(struct cmd_table *t, struct buf *out);

#endif
