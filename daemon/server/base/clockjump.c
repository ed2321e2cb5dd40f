/*
 * clockjump.c - steps of the wall clock as loop events (clockjump.h).
 *
 * A timerfd on CLOCK_REALTIME armed at an absolute instant with
 * TFD_TIMER_CANCEL_ON_SET is cancelled by the kernel whenever the clock is
 * set discontinuously: a read then fails with ECANCELED.  The watcher
 * polls the descriptor on the loop, calls back, and arms itself again.
 * The instant is ten years ahead: it only has to lie in the future; if it
 * is ever reached the timer is armed again, without a callback.
 */
#include "clockjump.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock_ms.h"
#include "log.h"
#include "xalloc.h"

struct clockjump {
	uv_poll_t poll;
	int fd;
	void (*cb)(void *data);
	void *data;
};

/* Arm the timer ten years ahead of the wall clock; -1 with errno. */
static int
clockjump_arm(int fd)
{
	struct itimerspec its;

	memset(&its, 0, sizeof its);
	its.it_value = clock_read(CLOCK_REALTIME);
	its.it_value.tv_sec += (time_t)10 * 366 * 86400;
	return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
			       &its, NULL);
}

static void
clockjump_poll_cb(uv_poll_t *h, int status, int events)
{
	struct clockjump *cj = h->data;
	uint64_t n;
	ssize_t r;

	(void)events;
	if (status < 0)
		return;
	r = read(cj->fd, &n, sizeof n);
	if (r < 0 && errno == EAGAIN)
		return;
	if (clockjump_arm(cj->fd) < 0)
		log_warn("cannot watch the system clock again: %s",
			 strerror(errno));
	if (r < 0 && errno == ECANCELED) {
		log_notice("the system clock was set: the schedule is computed"
			   " again for the new time");
		cj->cb(cj->data);
	}
}

struct clockjump *
clockjump_start(uv_loop_t *loop, void (*cb)(void *data), void *data)
{
	struct clockjump *cj;
	int fd;

	fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0 || clockjump_arm(fd) < 0) {
		log_warn("cannot watch the system clock for steps (%s): a step"
			 " is noticed at the schedule's next wake-up, at most a"
			 " day later", strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	cj = xcalloc(1, sizeof *cj);
	cj->fd = fd;
	cj->cb = cb;
	cj->data = data;
	if (uv_poll_init(loop, &cj->poll, fd) != 0) {
		close(fd);
		free(cj);
		log_warn("cannot watch the system clock for steps");
		return NULL;
	}
	cj->poll.data = cj;
	uv_poll_start(&cj->poll, UV_READABLE, clockjump_poll_cb);
	uv_unref((uv_handle_t *)&cj->poll);
	return cj;
}

static void
clockjump_closed_cb(uv_handle_t *h)
{
	struct clockjump *cj = h->data;

	close(cj->fd);
	free(cj);
}

void
clockjump_close(struct clockjump *cj)
{
	if (cj == NULL)
		return;
	uv_poll_stop(&cj->poll);
	uv_close((uv_handle_t *)&cj->poll, clockjump_closed_cb);
}
