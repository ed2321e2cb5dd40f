/*
 * control.h - the control socket: a unix stream socket on the event loop,
 * mode 0660, speaking the protocol of proto.h.  A client's bytes never
 * stop the daemon: a bad frame gets an error RESPONSE and the connection
 * is closed.
 */
#ifndef BACKFILLD_CONTROL_H
#define BACKFILLD_CONTROL_H

#include <uv.h>

#include "cmd.h"
#include "err.h"
#include "scheduler.h"

struct control;

/* Listen on `path` (a stale socket file is replaced; a live daemon on it
 * is an error); `group` (may be NULL) owns the socket. */
int control_new(uv_loop_t *loop, struct sched *s, const char *path,
		const char *group, cmd_reload_fn *reload,
		void *reload_data, struct control **out, struct err *err);
/* Stop accepting and close every connection; free after the loop ran the
 * close callbacks. */
void control_close(struct control *c);

/*
 * Several hosts (docs/several-hosts.md): on a node that is not the
 * planner, requests are forwarded to the planner through the cluster's
 * mailbox (rights are checked here first); `runs` is served here from
 * the shared store.  On the planner, control_mail() answers the mailbox.
 */
struct cluster;
struct cluster_driver;
void control_set_cluster(struct control *c, const struct cluster_driver *drv,
			 struct cluster *cluster);
void control_mail(struct control *c);
void control_free(struct control *c);
/* Before an execv of the daemon (restart in place): the listening socket
 * stays open for the new image, which listens on it at once. */
void control_keep_for_exec(struct control *c);
/* How many clients wait for the planner's answer to a request this node
 * forwarded: a restart in place waits for them a while (main.c), or the
 * answer of a request the planner may already have queued is lost. */
int control_forwarding(const struct control *c);

#endif
