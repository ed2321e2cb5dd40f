/*
 * httpd.h - the read-only HTTP endpoint (http_listen, docs/http.md): a TCP
 * listener on the daemon's loop serving /metrics, /report, /status and
 * /healthz, one request per connection.  Nothing it serves changes state.
 */
#ifndef BACKFILLD_HTTPD_H
#define BACKFILLD_HTTPD_H

#include <uv.h>

#include "config.h"
#include "err.h"
#include "metrics.h"
#include "scheduler.h"

struct httpd;
struct cluster;
struct cluster_driver;

/* An endpoint that listens nowhere yet; drv and cluster are NULL on one
 * host (several hosts: /healthz and /status ask the cluster's state). */
struct httpd *httpd_new(uv_loop_t *loop, struct sched *s, struct metrics *m,
			const struct cluster_driver *drv,
			struct cluster *cluster);
/*
 * Listen where cfg's http_listen says (at start and after each reload):
 * nothing to do when it is where it listens already; off when cfg has no
 * http_listen; otherwise the new address is bound first and the old
 * listener closed only then.  Returns 0, or -1 with err when the new
 * address cannot be bound (the old listener, if any, goes on).
 */
int httpd_configure(struct httpd *h, const struct config *cfg,
		    struct err *err);
/* Stop listening and close every connection (shutdown). */
void httpd_close(struct httpd *h);
/* Free, once the loop ran the close callbacks. */
void httpd_free(struct httpd *h);

#endif
