/*
 * control_int.h - what the files of the control socket share (internal;
 * control.h is the daemon's side).
 *
 *   control.c          the socket: listening, accepting, a connection's
 *                      bounds (the cap, descriptors in reserve, idle),
 *                      its peer's credentials, reading frames and
 *                      writing answers, closing
 *   control_answer.c   a request answered here: the command (cmd_run) or
 *                      `wait` and its PROGRESS frames, a streamed answer
 *                      page by page
 *   control_forward.c  several hosts, a node that is not the planner: a
 *                      request forwarded through the state store, its
 *                      answer passed on
 *   control_mail.c     several hosts, the planner: the forwarded requests
 *                      of the mailbox answered, waits held (the long
 *                      poll), streams that pause held until they end
 *
 * Calls go one way: control.c reads a request and hands it to
 * control_answer.c or control_forward.c; those and control_mail.c send
 * through control.c's client_send family.  The bounds and the forwarding
 * rules are control.c's head comment.
 */
#ifndef BACKFILLD_CONTROL_INT_H
#define BACKFILLD_CONTROL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cluster.h"
#include "control.h"
#include "proto.h"

#define READ_CHUNK 65536
#define PROGRESS_EVERY_MS 100
/* A client's unsent output above which nothing more is produced for it
 * and it is not read. */
#define CONTROL_QUEUE_MAX (256 * 1024)
/* The largest `out` chunk of one DATA frame. */
#define CONTROL_DATA_MAX (1024 * 1024)
/* Connections served at once; more are refused. */
#define CONTROL_MAX_CLIENTS 64
/* Descriptors kept for the daemon's own work, besides two per run. */
#define CONTROL_FD_RESERVE 16
/* An idle connection is closed after this (BACKFILLD_TEST_IDLE_TIMEOUT_MS
 * overrides it, for tests). */
#define CONTROL_IDLE_TIMEOUT_MS 60000
/* At most one log line per this long about refused connections, and one
 * about idle connections closed to make room, each with a count. */
#define CONTROL_RATELOG_MS 10000
/* Forwarded waits: how long the planner holds one, how many at most,
 * how soon a node asks again after an empty answer, and how many
 * failed forwards in a row a wait outlives. */
#define MAIL_HOLD_MS 5000
#define MAIL_HOLD_MAX 256
#define FWD_AGAIN_MS 300
#define FWD_WAIT_TRIES 3
/* A forwarded request that may run a proof of idempotency (verify,
 * --verify, a job with verify: true) is given this long besides the
 * lease, or twice its job's timeout when it has one: the proof runs the
 * partition twice before the planner answers. */
#define FWD_PROOF_MS (3600 * 1000)
/* The planner could not write an answer: it reads the mailbox again
 * after this, doubling up to MAIL_AGAIN_MAX_MS. */
#define MAIL_AGAIN_MS 1000
#define MAIL_AGAIN_MAX_MS 30000
/* Give memory back to the system after a stream of this many bytes. */
#define CONTROL_TRIM_BYTES (4 * 1024 * 1024)

struct client {
	uv_pipe_t pipe;
	struct control *c;
	char *rbuf;
	size_t rlen;
	size_t rcap;
	bool closing;
	bool finishing; /* shutting down after a last answer */
	bool reading;   /* uv_read_start is in effect */
	bool refused;
	uint64_t last_active;      /* uv_now at accept and at each read */   /* over the connection cap: answered and closed */
	int handles;    /* open handles; freed when it drops to 0 */
	void *watch;
	int64_t wait_id;
	uv_timer_t throttle;
	bool pending;
	int64_t last_sent;
	struct sched_progress last;
	bool may_change;
	size_t queued;             /* bytes in uv_write, not yet written */
	struct cmd_stream *stream; /* the answer being streamed, if any */
	struct buf resp;           /* its RESPONSE, sent when it ends */
	size_t streamed;           /* bytes of the stream so far */
	uv_idle_t pump;            /* produces the stream's next page */
	uv_timer_t idle;           /* closes the connection when idle */
	bool forwarding;           /* a request is with the planner */
	bool fwd_wait;             /* ... or is asked again soon */
	char *fwd;                 /* a forwarded wait, asked again */
	size_t fwd_len;
	char *fwd_status;          /* a forwarded status, answered here
				    * if the planner does not */
	size_t fwd_status_len;
	int fwd_fails;             /* ... failed in a row */
	int64_t fwd_ms;            /* how long the planner may take */
	struct client *next, *prev;
};

/* Events of one kind logged at most once per CONTROL_RATELOG_MS. */
struct control_ratelog {
	int count;       /* since the last line */
	uint64_t logged; /* when the last line was written */
	bool ever;       /* a line was written */
};

struct control {
	uv_loop_t *loop;
	uv_pipe_t listener;
	struct sched *sched;
	char *path;
	bool has_group;
	gid_t group;
	cmd_reload_fn *reload;
	void *reload_data;
	struct client clients; /* list head */
	bool closing;
	int nclients;          /* served (not refused) connections */
	uint64_t idle_ms;
	struct control_ratelog refusals; /* connections refused at the cap */
	struct control_ratelog evictions; /* idle ones closed at the cap */
	bool fd_short;         /* in a spell of too few free descriptors */
	int fd_closed;         /* ... idle connections closed in it */
	int fd_refused;        /* ... connections refused in it */
	const struct cluster_driver *drv; /* several hosts, or NULL */
	struct cluster *cluster;
	struct mail_wait *held;  /* planner: forwarded waits held */
	int nheld;
	uv_timer_t hold;         /* answers the held waits due */
	bool hold_init;
	struct mail_stream *streams; /* planner: forwarded streams paused */
	uv_idle_t stream_pump;   /* ... resumes those woken */
	bool stream_init;
	uv_timer_t mail_again;   /* an answer the store refused: later */
	bool mail_again_init;
	uint64_t mail_again_ms;  /* ... backing off */
	struct control_ratelog answer_fails; /* answers the store refused */
};

/* A forwarded request whose answer is a stream that waits for an event
 * (the proof of a verify, verify.c): its pages are kept until it ends,
 * then it is answered whole. */
struct mail_stream {
	struct control *c;
	int64_t mail_id;
	char *from;
	struct cmd_stream *cs;
	struct buf f;    /* its frames so far */
	bool woken;
	bool too_large;  /* a page did not fit CLUSTER_MAIL_MAX: it fails */
	struct mail_stream *next;
};

/* A forwarded wait the planner holds (the long poll above). */
struct mail_wait {
	struct control *c;
	int64_t mail_id;
	int64_t request;
	char *from;
	void *watch;     /* NULL once the request finished */
	uint64_t until;  /* uv_now after which it is answered anyway */
	struct mail_wait *next;
};

/* control.c: a connection */
void client_send(struct client *cl, struct buf *frame);
void client_queue(struct client *cl, struct buf *frame);
void client_send_data(struct client *cl, const char *data, size_t len);
/* Send outside bytes exactly: DATA frames with `bytes` (proto.h). */
void client_send_bytes(struct client *cl, const char *data, size_t len);
void client_error(struct client *cl, int status, const char *msg);
void client_finish(struct client *cl);
void client_close(struct client *cl);
void client_kick(struct client *cl);
void client_handle_closed_cb(uv_handle_t *h);
/* The length of the next DATA frame's `out` of data[0..len). */
size_t control_data_chunk(const char *data, size_t len);
/* Count one event of rl: the number to log now, or 0 (the last line is
 * recent). */
int control_ratelog(struct control_ratelog *rl, uint64_t now);
bool control_peer_may_change(struct control *c, int fd);
void control_peer_name(int fd, char *out, size_t size);

/* control_answer.c: a request answered here */
void client_handle(struct client *cl, const struct proto_msg *req);
void client_handle_here(struct client *cl, const struct proto_msg *req,
			const char *from_memory);
void client_pump_cb(uv_idle_t *h);
void progress_fields(struct buf *f, const struct sched_progress *p);
void control_wait_done(struct sched *s, int64_t id,
		       const struct sched_progress *p, struct buf *f);
/* A request field (cmdspec_get_fn). */
const char *control_req_get(const void *src, const char *field);
/* The request a `wait` names, parsed by its specification: 0, or -1
 * with err. */
int control_wait_id(const struct proto_msg *req, int64_t *id,
		    struct err *err);

/* control_forward.c: a node forwards to the planner */
bool client_forwards(struct client *cl, const struct proto_msg *req);
void client_forward(struct client *cl, const struct proto_msg *req,
		    const char *raw, size_t len);

/* control_mail.c: the planner answers the mailbox */
void control_hold_release(struct control *c, bool all);
void control_mail_stream_free(struct mail_stream *ms);

#endif
