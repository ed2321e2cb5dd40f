/*
 * control_forward.c - several hosts, on a node that is not the planner
 * (control_int.h): a request is forwarded through the state store with
 * its rights checked here first, and the planner's answer passed on.  A
 * forwarded `wait` is asked again while its request is not finished
 * (one PROGRESS frame an answer), up to FWD_WAIT_TRIES failures in a
 * row; a `status` the planner does not answer is answered here, from
 * this node's memory, saying why.
 */
#include "control_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdspec.h"
#include "log.h"
#include "xalloc.h"

static void client_forward_again_cb(uv_timer_t *t);

/* Several hosts: is this request the planner's to answer?  `status` on
 * a node that cannot reach the state store is answered here, from this
 * node's memory (nobody can be asked); so is one the planner did not
 * answer (client_forward_cb). */
bool
client_forwards(struct client *cl, const struct proto_msg *req)
{
	struct cluster_state st;
	const char *cmd = proto_get(req, "cmd");

	if (cl->c->drv == NULL || req->type != PROTO_REQUEST || cmd == NULL)
		return false;
	cl->c->drv->state(cl->c->cluster, &st);
	if (st.role == CLUSTER_PLANNER)
		return false;
	if (!st.db_ok && strcmp(cmd, "status") == 0)
		return false;
	/* served here: the spec's CMDSPEC_LOCAL (runs reads the shared
	 * store; reload this node's own configuration; logs this node's
	 * log folder) */
	return !cmdspec_is(cmd, CMDSPEC_LOCAL);
}

/* No planner answered a forwarded request: one line, exit 3; a status
 * is answered here instead, from this node's memory, saying why. */
static void
client_forward_fail(struct client *cl, const char *why)
{
	char msg[ERR_MSG_MAX + 256];
	struct cluster_state st;
	struct proto_msg req;
	struct err err;
	size_t used;

	if (cl->fwd_status != NULL) {
		char *raw = cl->fwd_status;

		cl->fwd_status = NULL;
		snprintf(msg, sizeof msg, "the planner could not be asked: %s",
			 why ? why : "no answer");
		if (proto_parse(raw, cl->fwd_status_len, &used, &req,
				&err) > 0) {
			client_handle_here(cl, &req, msg);
			proto_msg_free(&req);
			free(raw);
			return;
		}
		free(raw);
	}
	cl->c->drv->state(cl->c->cluster, &st);
	if (!st.db_ok)
		snprintf(msg, sizeof msg, "state store lost: %.900s; no planner"
			 " can be reached from this node", st.db_error[0] ?
			 st.db_error : why ? why : "unreachable");
	else if (why != NULL &&
		 strncmp(why, "the planner changed", 19) == 0)
		snprintf(msg, sizeof msg, "%.900s", why);
	else
		snprintf(msg, sizeof msg, "no planner answered: %.900s; none"
			 " holds the lease of the shared state store now (see"
			 " the logs of the nodes)", why ? why : "unreachable");
	client_error(cl, EXIT_UNREACHABLE, msg);
}

/* Is this answer one PROGRESS frame (a held wait, not finished)? */
static bool
control_is_progress(const void *resp, size_t len)
{
	struct proto_msg msg;
	struct err err;
	size_t used;
	bool yes;

	if (proto_parse(resp, len, &used, &msg, &err) <= 0)
		return false;
	yes = msg.type == PROTO_PROGRESS && used == len;
	proto_msg_free(&msg);
	return yes;
}

/* A forwarded wait not finished: ask the planner again in `ms`. */
static void
client_forward_again(struct client *cl, uint64_t ms)
{
	cl->fwd_wait = true;
	uv_timer_start(&cl->throttle, client_forward_again_cb, ms, 0);
}

/* The planner's answer to a forwarded request. */
static void
client_forward_cb(void *arg, int status, const void *resp, size_t len,
		  const char *why)
{
	struct client *cl = arg;
	struct buf f;

	cl->forwarding = false;
	if (cl->closing) {
		client_handle_closed_cb((uv_handle_t *)&cl->pipe);
		return;
	}
	if (status < 0 && cl->fwd != NULL && ++cl->fwd_fails < FWD_WAIT_TRIES) {
		log_info("control: a forwarded wait failed (%s); asking the"
			 " planner again", why ? why : "no answer");
		client_forward_again(cl, FWD_AGAIN_MS);
		return;
	}
	if (status < 0) {
		client_forward_fail(cl, why);
	} else if (len == 0 && cl->fwd != NULL) {
		cl->fwd_fails = 0;
		client_forward_again(cl, FWD_AGAIN_MS);
		return;
	} else if (cl->fwd != NULL && control_is_progress(resp, len)) {
		cl->fwd_fails = 0;
		buf_init(&f);
		buf_add(&f, resp, len);
		client_queue(cl, &f);
		client_forward_again(cl, 0);
		return;
	} else {
		buf_init(&f);
		buf_add(&f, resp, len);
		client_queue(cl, &f);
	}
	free(cl->fwd);
	cl->fwd = NULL;
	free(cl->fwd_status);
	cl->fwd_status = NULL;
	client_kick(cl);
}

/* How long the planner may take to answer req: the lease and 2 s, and
 * for a request that runs a proof first, FWD_PROOF_MS or twice its job's
 * timeout more (a planner that goes away meanwhile fails it sooner: the
 * cluster sees the lease move, cluster.h). */
static int64_t
client_forward_ms(struct client *cl, const struct proto_msg *req)
{
	const struct config *cfg = sched_config(cl->c->sched);
	const struct cmdspec *cs = cmdspec_find(proto_get(req, "cmd"));
	const struct job_def *j = NULL;
	int64_t ms = (cfg->lease + 2) * 1000;
	struct cmdspec_req rq;
	struct err err;
	bool proof = false;

	/* a request its specification refuses is answered at once */
	if (cs != NULL && cmdspec_parse(cs, control_req_get, req, false, &rq,
					&err) == 0) {
		if (cs == &cmdspec_verify) {
			j = config_job(cfg, rq.part.job);
			proof = true;
		} else if (cs == &cmdspec_backfill || cs == &cmdspec_rerun) {
			j = config_job(cfg, rq.backfill.job);
			proof = rq.backfill.verify || (j != NULL && j->verify &&
							!rq.backfill.dry_run);
		}
	}
	if (cs != NULL)
		cmdspec_req_free(&rq);
	if (proof)
		ms += j != NULL && j->timeout > 0 ? 2 * j->timeout * 1000 :
		      FWD_PROOF_MS;
	return ms;
}

/* Send a request to the planner. */
static void
client_forward_send(struct client *cl, const void *req, size_t len)
{
	const struct config *cfg = sched_config(cl->c->sched);
	struct err err;
	int64_t ms = cl->fwd_ms > 0 ? cl->fwd_ms : (cfg->lease + 2) * 1000;

	cl->forwarding = true;
	if (cl->c->drv->forward(cl->c->cluster, req, len, ms,
				client_forward_cb, cl, &err) < 0) {
		cl->forwarding = false;
		client_forward_fail(cl, err.msg);
		free(cl->fwd);
		cl->fwd = NULL;
	}
}

/* A forwarded wait: ask the planner again. */
static void
client_forward_again_cb(uv_timer_t *t)
{
	struct client *cl = t->data;

	cl->fwd_wait = false;
	if (!cl->closing && cl->fwd != NULL)
		client_forward_send(cl, cl->fwd, cl->fwd_len);
	if (!cl->closing && !cl->forwarding)
		client_kick(cl);
}

/* Forward one request to the planner, its rights checked here. */
void
client_forward(struct client *cl, const struct proto_msg *req,
	       const char *raw, size_t len)
{
	uv_os_fd_t fd = -1;

	if (uv_fileno((uv_handle_t *)&cl->pipe, &fd) == 0)
		cl->may_change = control_peer_may_change(cl->c, fd);
	if (cmd_request_mutates(req) && !cl->may_change) {
		client_error(cl, EXIT_BAD_INPUT, "permission denied: this"
			     " command changes state and needs root, the"
			     " daemon's user or the socket's group");
		return;
	}
	if (cmdspec_is(proto_get(req, "cmd"), CMDSPEC_CONTROL)) {
		free(cl->fwd);
		cl->fwd = xmalloc(len);
		memcpy(cl->fwd, raw, len);
		cl->fwd_len = len;
		cl->fwd_fails = 0;
	} else if (strcmp(proto_get(req, "cmd"), "status") == 0) {
		free(cl->fwd_status);
		cl->fwd_status = xmalloc(len);
		memcpy(cl->fwd_status, raw, len);
		cl->fwd_status_len = len;
	}
	cl->fwd_ms = client_forward_ms(cl, req);
	if (cmd_request_mutates(req)) {
		/* the planner records the peer's name (mark): this node
		 * says who it is, over any peer= the client sent */
		struct buf f;
		char peer[128];

		control_peer_name(fd, peer, sizeof peer);
		buf_init(&f);
		proto_begin(&f, PROTO_REQUEST);
		for (size_t i = 0; i < req->nfields; i++)
			if (strcmp(req->fields[i].key, "peer") != 0)
				proto_add_n(&f, req->fields[i].key,
					    req->fields[i].value,
					    req->fields[i].value_len);
		proto_addf(&f, "peer", "%s@%s", peer,
			   sched_config(cl->c->sched)->node);
		proto_end(&f);
		client_forward_send(cl, f.data, f.len);
		buf_free(&f);
		return;
	}
	client_forward_send(cl, raw, len);
}
