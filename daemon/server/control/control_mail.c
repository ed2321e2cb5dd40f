/*
 * control_mail.c - several hosts, on the planner (control_int.h): the
 * requests other nodes forwarded are taken from the mailbox and answered
 * there.  A `wait` whose request is not finished is held (the long poll
 * of control.c's head comment) until it finishes or MAIL_HOLD_MS pass,
 * at most MAIL_HOLD_MAX of them; a streamed answer that pauses (a proof
 * of idempotency) is held until it ends, then answered whole.  An answer
 * the store does not take is tried again later, backing off.
 */
#include "control_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

static int control_mail_answer(struct control *c, int64_t id,
			       const char *from, const struct buf *f);
static void control_mail_stream_pump_cb(uv_idle_t *h);
static void control_hold_cb(uv_timer_t *t);

/* DATA frames of text, into f. */
static void
control_data_frames(struct buf *f, const char *data, size_t len)
{
	size_t off = 0, n;
	struct buf one;

	/* each frame built on its own, then appended: proto_begin starts
	 * its buffer afresh, and f holds the frames of earlier pages */
	buf_init(&one);
	while (off < len) {
		n = control_data_chunk(data + off, len - off);
		proto_begin(&one, PROTO_DATA);
		proto_add_n(&one, "out", data + off, n);
		proto_end(&one);
		buf_add(f, one.data, one.len);
		off += n;
	}
	buf_free(&one);
}

/* A held stream has more (its wake): go on with it next loop turn. */
static void
control_mail_stream_wake(void *data)
{
	struct mail_stream *ms = data;

	ms->woken = true;
	if (!ms->c->closing)
		uv_idle_start(&ms->c->stream_pump, control_mail_stream_pump_cb);
}

/* Pull a stream's pages into ms->f until it pauses (0) or ends (1: the
 * RESPONSE appended, the stream freed). */
static int
control_mail_stream_run(struct mail_stream *ms)
{
	struct buf out, resp;
	int rc;

	do {
		buf_init(&out);
		rc = ms->cs->next(ms->cs, &out);
		/* (the frames' headers take about 16 bytes a MiB) */
		if (ms->f.len + out.len + out.len / 4096 + 4096 <
		    CLUSTER_MAIL_MAX)
			control_data_frames(&ms->f, out.data, out.len);
		else
			ms->too_large = true;
		buf_free(&out);
	} while (rc == 0);
	if (rc == CMD_STREAM_PAUSE)
		return 0;
	buf_init(&resp);
	proto_begin(&resp, PROTO_RESPONSE);
	cmd_stream_end(ms->cs, &resp);
	ms->cs = NULL;
	proto_end(&resp);
	if (ms->too_large) {
		/* never a part of the answer as if it were all of it */
		buf_reset(&ms->f);
		proto_begin(&resp, PROTO_RESPONSE);
		proto_add_int(&resp, "status", EXIT_UNREACHABLE);
		proto_addf(&resp, "err", "the answer is larger than a forwarded"
			   " answer may be (%d MiB): run the command on the"
			   " planner's node, or narrow it",
			   CLUSTER_MAIL_MAX >> 20);
		proto_end(&resp);
	}
	buf_add(&ms->f, resp.data, resp.len);
	buf_free(&resp);
	return 1;
}

/* Free a held stream (its stream too, if not ended: a proof in flight
 * is orphaned, verify.c). */
void
control_mail_stream_free(struct mail_stream *ms)
{
	if (ms->cs != NULL)
		ms->cs->free(ms->cs);
	buf_free(&ms->f);
	free(ms->from);
	free(ms);
}

/* The held streams woken: go on; answer those that ended. */
static void
control_mail_stream_pump_cb(uv_idle_t *h)
{
	struct control *c = h->data;
	struct mail_stream **pp = &c->streams, *ms;

	uv_idle_stop(h);
	while ((ms = *pp) != NULL) {
		if (!ms->woken) {
			pp = &ms->next;
			continue;
		}
		ms->woken = false;
		if (control_mail_stream_run(ms) == 0) {
			pp = &ms->next;
			continue;
		}
		*pp = ms->next;
		sched_flush(c->sched); /* nothing acknowledged uncommitted */
		control_mail_answer(c, ms->mail_id, ms->from, &ms->f);
		control_mail_stream_free(ms);
	}
}

/* Hold a forwarded request's stream that paused until it ends. */
static void
control_mail_stream_hold(struct control *c, const struct cluster_mail *m,
			 struct cmd_stream *cs, struct buf *f, bool too_large)
{
	struct mail_stream *ms = xcalloc(1, sizeof *ms);

	if (!c->stream_init) {
		uv_idle_init(c->loop, &c->stream_pump);
		c->stream_pump.data = c;
		c->stream_init = true;
	}
	ms->c = c;
	ms->mail_id = m->id;
	ms->from = xstrdup(m->from);
	ms->cs = cs;
	ms->f = *f; /* its frames so far: the hold owns them */
	ms->too_large = too_large; /* a page dropped before it paused */
	buf_init(f);
	cs->wake = control_mail_stream_wake;
	cs->wake_data = ms;
	ms->next = c->streams;
	c->streams = ms;
}

/* One forwarded request, answered into f.  Returns 1, f empty, for a
 * wait whose request (*wait_id) is not finished (held, or asked again);
 * 2 for a stream that paused (held: control_mail_stream_hold). */
static int
control_mail_one(struct control *c, const struct cluster_mail *m,
		 const struct proto_msg *req, struct buf *f, int64_t *wait_id)
{
	struct cmd_ctx ctx = {.sched = c->sched, .reload = c->reload,
		.reload_data = c->reload_data, .may_change = true,
		.cluster_drv = c->drv, .cluster = c->cluster,
		.peer = proto_get(req, "peer")};
	struct cmd_stream *stream;
	struct sched_progress p;
	struct err err;
	int64_t id;
	const char *cmd = proto_get(req, "cmd");

	if (cmdspec_is(cmd, CMDSPEC_CONTROL)) { /* wait */
		if (control_wait_id(req, &id, &err) < 0) {
			proto_begin(f, PROTO_RESPONSE);
			proto_add_int(f, "status", EXIT_BAD_INPUT);
			proto_add(f, "err", "wait needs request=N with a"
				  " positive request id");
			proto_end(f);
		} else if (sched_progress(c->sched, id, &p, &err) < 0) {
			proto_begin(f, PROTO_RESPONSE);
			proto_add_int(f, "status", EXIT_BAD_INPUT);
			proto_add(f, "err", err.msg);
			proto_end(f);
		} else if (p.finished) {
			control_wait_done(c->sched, id, &p, f);
		} else {
			*wait_id = id;
			return 1;
		}
		return 0;
	}
	proto_begin(f, PROTO_RESPONSE);
	cmd_run(&ctx, req, f, &stream);
	if (stream != NULL) {
		struct mail_stream ms = { .c = c, .cs = stream };

		buf_reset(f);
		ms.f = *f;
		buf_init(f);
		if (control_mail_stream_run(&ms) == 0) {
			control_mail_stream_hold(c, m, stream, &ms.f,
						 ms.too_large);
			buf_free(&ms.f);
			return 2;
		}
		*f = ms.f;
		return 0;
	}
	proto_end(f);
	return 0;
}

/* Answer a forwarded request: 0, or -1 when the store does not take
 * it (logged at most once per CONTROL_RATELOG_MS, with the count). */
static int
control_mail_answer(struct control *c, int64_t id, const char *from,
		    const struct buf *f)
{
	struct err err;
	int n;

	if (c->drv->mail_answer(c->cluster, id, f->data ? f->data : "",
				f->len, &err) == 0) {
		c->mail_again_ms = 0;
		return 0;
	}
	if ((n = control_ratelog(&c->answer_fails, uv_now(c->loop))) > 0)
		log_warn("control: cannot answer %s's request: %s (%d answers"
			 " not written since the last such line); the mailbox"
			 " is read again later", from, err.msg, n);
	return -1;
}

/* Arm the hold timer for the earliest held wait due. */
static void
control_hold_arm(struct control *c)
{
	uint64_t now = uv_now(c->loop), first = UINT64_MAX;

	for (struct mail_wait *w = c->held; w != NULL; w = w->next)
		if (w->until < first)
			first = w->until;
	if (first == UINT64_MAX)
		uv_timer_stop(&c->hold);
	else
		uv_timer_start(&c->hold, control_hold_cb,
			       first > now ? first - now : 0, 0);
}

/* The scheduler reports a change of a held wait's request. */
static void
control_hold_watch_cb(void *data, const struct sched_progress *p)
{
	struct mail_wait *w = data;

	if (!p->finished)
		return;
	w->watch = NULL; /* a finished request's watch is gone */
	w->until = 0;
	control_hold_arm(w->c);
}

/* Answer the held waits due (all of them when `all`): the final RESPONSE
 * once their request finished, one PROGRESS frame otherwise. */
void
control_hold_release(struct control *c, bool all)
{
	uint64_t now = uv_now(c->loop);
	struct mail_wait **pp = &c->held, *w;
	struct sched_progress p;
	struct err err;
	struct buf f;

	sched_flush(c->sched); /* a finish is answered once committed */
	while ((w = *pp) != NULL) {
		if (!all && w->until > now) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		c->nheld--;
		if (w->watch != NULL)
			sched_unwatch(c->sched, w->watch);
		buf_init(&f);
		if (sched_progress(c->sched, w->request, &p, &err) < 0) {
			proto_begin(&f, PROTO_RESPONSE);
			proto_add_int(&f, "status", err.code);
			proto_add(&f, "err", err.msg);
			proto_end(&f);
		} else if (p.finished) {
			control_wait_done(c->sched, w->request, &p, &f);
		} else {
			proto_begin(&f, PROTO_PROGRESS);
			proto_add_int(&f, "request", w->request);
			progress_fields(&f, &p);
			proto_end(&f);
		}
		control_mail_answer(c, w->mail_id, w->from, &f);
		buf_free(&f);
		free(w->from);
		free(w);
	}
	control_hold_arm(c);
}

/* Hold timer. */
static void
control_hold_cb(uv_timer_t *t)
{
	control_hold_release(t->data, false);
}

/* Hold a forwarded wait until its request finishes or MAIL_HOLD_MS pass.
 * Returns -1 when no more may be held. */
static int
control_hold(struct control *c, const struct cluster_mail *m,
	     int64_t request)
{
	struct mail_wait *w;

	if (c->nheld >= MAIL_HOLD_MAX || c->closing)
		return -1;
	if (!c->hold_init) {
		uv_timer_init(c->loop, &c->hold);
		c->hold.data = c;
		c->hold_init = true;
	}
	w = xcalloc(1, sizeof *w);
	w->c = c;
	w->mail_id = m->id;
	w->request = request;
	w->from = xstrdup(m->from);
	w->until = uv_now(c->loop) + MAIL_HOLD_MS;
	w->watch = sched_watch(c->sched, request, control_hold_watch_cb, w);
	if (w->watch == NULL)
		w->until = 0; /* finished meanwhile: answered next turn */
	w->next = c->held;
	c->held = w;
	c->nheld++;
	control_hold_arm(c);
	return 0;
}

/* The mailbox again, after an answer the store refused. */
static void
control_mail_again_cb(uv_timer_t *t)
{
	control_mail(t->data);
}

/*
 * Answer the requests waiting in the mailbox, oldest first.  An answer
 * the store does not take (a full disk, the connection lost) ends the
 * pass: its request stays in the mailbox, unanswered, and the mailbox is
 * read again MAIL_AGAIN_MS later, doubling up to MAIL_AGAIN_MAX_MS (or
 * at the next request's wake-up), never at once: the same request taken
 * and refused again and again would hold the loop.
 */
void
control_mail(struct control *c)
{
	struct cluster_mail *m;
	struct proto_msg msg;
	struct err err;
	size_t used;
	struct buf f;
	int64_t id;
	int held, rc;
	bool refused = false;

	if (c->closing)
		return;
	while (!refused && c->drv != NULL &&
	       c->drv->mail_take(c->cluster, &m, &err) == 0 && m != NULL) {
		buf_init(&f);
		held = -1;
		if (proto_parse(m->req, m->len, &used, &msg, &err) > 0) {
			rc = control_mail_one(c, m, &msg, &f, &id);
			if (rc == 2)
				held = 0;
			else if (rc == 1)
				held = control_hold(c, m, id);
			proto_msg_free(&msg);
		} else {
			proto_begin(&f, PROTO_RESPONSE);
			proto_add_int(&f, "status", EXIT_BAD_INPUT);
			proto_add(&f, "err", "a forwarded request that is not"
				  " one frame");
			proto_end(&f);
		}
		if (held < 0) {
			/* nothing is acknowledged uncommitted (scheduler.c,
			 * SCHED-7) */
			sched_flush(c->sched);
			refused = control_mail_answer(c, m->id, m->from,
						      &f) < 0;
		}
		buf_free(&f);
		c->drv->mail_free(m);
	}
	if (!refused)
		return;
	if (!c->mail_again_init) {
		uv_timer_init(c->loop, &c->mail_again);
		c->mail_again.data = c;
		c->mail_again_init = true;
	}
	c->mail_again_ms = c->mail_again_ms == 0 ? MAIL_AGAIN_MS :
		c->mail_again_ms * 2 > MAIL_AGAIN_MAX_MS ? MAIL_AGAIN_MAX_MS :
		c->mail_again_ms * 2;
	uv_timer_start(&c->mail_again, control_mail_again_cb,
		       c->mail_again_ms, 0);
}
