/*
 * cmd_nodes.c - status on several hosts (docs/several-hosts.md): the
 * nodes of the shared state store, and the warnings about them (nodes on
 * different configurations, a job pinned to no live node, a state store
 * that cannot be reached).  Nothing on a single host.
 */
#include "cmd_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar.h"
#include "cluster.h"
#include "json.h"
#include "lease.h"
#include "text.h"
#include "xalloc.h"

struct nodes_view {
	struct cluster_node *nodes;
	size_t n;
	int64_t now_ms;
	struct lease_node *live; /* not stopped */
	size_t nlive;
	struct cluster_state st;
	bool ok; /* the nodes table was read */
};

/* Read the nodes table; false on a single host. */
static bool
nodes_view_load(struct cmd_ctx *ctx, struct nodes_view *v)
{
	struct err err;

	memset(v, 0, sizeof *v);
	if (ctx->cluster_drv == NULL)
		return false;
	ctx->cluster_drv->state(ctx->cluster, &v->st);
	if (ctx->cluster_drv->nodes(ctx->cluster, &v->nodes, &v->n, &v->now_ms,
				    &err) < 0)
		return true;
	v->ok = true;
	v->live = xcalloc(v->n + 1, sizeof *v->live);
	for (size_t i = 0; i < v->n; i++) {
		const struct cluster_node *x = &v->nodes[i];

		if (strcmp(x->role, "stopped") == 0)
			continue;
		v->live[v->nlive++] = (struct lease_node){x->name,
			x->incarnation, x->last_seen_ms, x->running,
			x->config_hash, x->role};
	}
	return true;
}

/* Free what nodes_view_load read. */
static void
nodes_view_free(struct nodes_view *v)
{
	free(v->nodes);
	free(v->live);
}

/* Each warning line, through cb. */
static void
nodes_warnings(struct cmd_ctx *ctx, const struct nodes_view *v,
	       void (*cb)(const char *line, void *data), void *data)
{
	const struct config *cfg = sched_config(ctx->sched);
	char line[1024];

	if (!v->st.db_ok) {
		snprintf(line, sizeof line, "state store lost: %s; this node"
			 " claims no work until it is back", v->st.db_error);
		cb(line, data);
	}
	if (!v->ok)
		return;
	if (lease_config_mismatch(v->live, v->nlive, v->now_ms, cfg->lease,
				  line, sizeof line))
		cb(line, data);
	for (size_t i = 0; i < cfg->njobs; i++) {
		const struct job_def *j = &cfg->jobs[i];

		if (!lease_job_stranded(j->nodes, j->nnodes, v->live, v->nlive,
					v->now_ms, cfg->lease))
			continue;
		snprintf(line, sizeof line, "job %s may run only on nodes that"
			 " are not running (nodes:); its runs wait", j->name);
		cb(line, data);
	}
}

/* A warning as a JSON string. */
static void
nodes_warn_json(const char *line, void *data)
{
	struct buf *out = data;

	if (out->len > 0 && out->data[out->len - 1] != '[')
		buf_addstr(out, ", ");
	json_str(out, line);
}

/* A warning as a text line. */
static void
nodes_warn_text(const char *line, void *data)
{
	buf_addstr(data, "warning: ");
	text_escape_str(data, line);
	buf_addstr(data, "\n");
}

void
cmd_nodes_json(struct cmd_ctx *ctx, struct buf *out)
{
	struct nodes_view v;
	char seen[CAL_KEY_MAX];

	if (!nodes_view_load(ctx, &v))
		return;
	buf_addstr(out, ", \"nodes\": [");
	for (size_t i = 0; i < v.n; i++) {
		const struct cluster_node *x = &v.nodes[i];

		buf_addstr(out, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
		json_str(out, x->name);
		buf_addstr(out, ", \"role\": ");
		json_str(out, x->role);
		cal_format_iso_ms(x->last_seen_ms, seen);
		buf_addstr(out, ", \"last_seen\": ");
		json_str(out, seen);
		buf_printf(out, ", \"running\": %d, \"config_hash\": ",
			   x->running);
		json_str(out, x->config_hash);
		buf_addstr(out, "}");
	}
	buf_addstr(out, "], \"warnings\": [");
	nodes_warnings(ctx, &v, nodes_warn_json, out);
	buf_addstr(out, "]");
	nodes_view_free(&v);
}

void
cmd_nodes_text(struct cmd_ctx *ctx, struct buf *out)
{
	struct nodes_view v;
	char seen[CAL_KEY_MAX];

	if (!nodes_view_load(ctx, &v))
		return;
	for (size_t i = 0; i < v.n; i++) {
		const struct cluster_node *x = &v.nodes[i];

		cal_format_iso_ms(x->last_seen_ms, seen);
		buf_addstr(out, "node ");
		text_escape_str(out, x->name); /* another host's word */
		buf_printf(out, ": %s, last seen %s, %d running,"
			   " configuration %s\n", x->role, seen,
			   x->running, x->config_hash);
	}
	nodes_warnings(ctx, &v, nodes_warn_text, out);
	nodes_view_free(&v);
}
