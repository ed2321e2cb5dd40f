/*
 * notify.c - the systemd service manager protocol (sd_notify(3)).
 *
 * The manager passes NOTIFY_SOCKET, the path of a unix datagram socket
 * ("@name" for an abstract one); each datagram holds newline separated
 * VARIABLE=value assignments: READY=1, RELOADING=1, STOPPING=1, STATUS=,
 * WATCHDOG=1.  Everything is a no-op when NOTIFY_SOCKET is unset: the
 * daemon works without a manager.
 *
 * The sender is built in (libsystemd's sd_notify cannot bound a send): one
 * SOCK_DGRAM socket, opened at start and sendto'd the manager's address at
 * each message.  A unix datagram send blocks while the receiver's queue is
 * full (net.unix.max_dgram_qlen datagrams; systemd raises it to 512), and a
 * send happens on the loop thread, so a manager that stops reading must not
 * stop the loop with it.  The rule, one per kind of message:
 *
 *   - READY=1, RELOADING=1, STOPPING=1 (state changes the manager acts on:
 *     a lost READY=1 fails the start at TimeoutStartSec) wait for room up to
 *     NOTIFY_WAIT_MS each (SO_SNDTIMEO, re-set to what is left after an
 *     EINTR), then are dropped;
 *   - STATUS= and WATCHDOG=1 never wait (MSG_DONTWAIT): dropped on a full
 *     queue.  A dropped STATUS= is sent again with the next status, even an
 *     unchanged one; the next WATCHDOG=1 comes half an interval later.
 *
 * So the loop stalls at most NOTIFY_WAIT_MS per state change, and never for
 * the frequent messages.  The first message not sent (full queue, no such
 * socket, ...) is logged once at warning; later ones at debug only.  This
 * is tested by test_notify.py test_unread_socket_keeps_the_loop.
 *
 * The watchdog is a repeating uv_timer_t at half of WATCHDOG_USEC, fed
 * from the loop thread, so a loop stuck in a callback stops feeding it and
 * systemd restarts the service.  The timer is unref'd: it never keeps the
 * loop alive on its own.  WATCHDOG_PID, when set, must be our pid (the
 * variables may have been inherited from a parent that was watched).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "clock_ms.h"
#include "log.h"
#include "notify.h"
#include "xalloc.h"

/* Longest STATUS= text sent; systemd reads at most PIPE_BUF per datagram. */
#define NOTIFY_STATUS_MAX 1024
/* Longest whole message. */
#define NOTIFY_MSG_MAX (NOTIFY_STATUS_MAX + 128)
/* Longest wait of a state change for room in the manager's queue (see the
 * rule above); well under the unit's WatchdogSec=30s. */
#define NOTIFY_WAIT_MS 2000

struct notify {
	uv_loop_t *loop;
	bool enabled;         /* NOTIFY_SOCKET was set and usable */
	char *socket_path;    /* NOTIFY_SOCKET as given, for the log */
	struct sockaddr_un addr;
	socklen_t addr_len;
	int fd;               /* the sending socket, or -1 */
	bool warned;          /* a message not sent was logged already */

	uv_timer_t watchdog;  /* data points back to this struct */
	bool watchdog_on;     /* the timer was initialised */
	uint64_t watchdog_usec;

	char *last_status;    /* last STATUS= text sent, or NULL */
};

/* Parse a decimal unsigned 64-bit value that fills the whole string. */
static int notify_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

/* WATCHDOG_USEC in *usec when the watchdog is asked of this process. */
static bool notify_watchdog_wanted(uint64_t *usec)
{
	const char *pid_s = getenv("WATCHDOG_PID");
	uint64_t pid;

	if (notify_parse_u64(getenv("WATCHDOG_USEC"), usec) < 0 || *usec == 0)
		return false;
	if (pid_s != NULL && *pid_s != '\0') {
		if (notify_parse_u64(pid_s, &pid) < 0 ||
		    pid != (uint64_t)getpid())
			return false;
	}
	return true;
}

/* Fill n->addr from path ("@" = abstract); -errno when it cannot be. */
static int notify_address(struct notify *n, const char *path)
{
	size_t len = strlen(path);

	if ((path[0] != '/' && path[0] != '@') || len < 2)
		return -EAFNOSUPPORT;
	if (len >= sizeof(n->addr.sun_path))
		return -E2BIG;
	memset(&n->addr, 0, sizeof(n->addr));
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, path, len);
	if (n->addr.sun_path[0] == '@')
		n->addr.sun_path[0] = '\0';
	/* Abstract names are counted, not NUL-terminated. */
	n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	return 0;
}

/* Send msg once; wait up to NOTIFY_WAIT_MS for room when wait, else not
 * at all.  0, or -errno (-EAGAIN: the manager's queue stayed full). */
static int notify_sendto(struct notify *n, const char *msg, bool wait)
{
	size_t len = strlen(msg);
	int64_t deadline = 0, left;
	struct timeval tv;
	ssize_t w;

	if (wait)
		deadline = clock_ms(CLOCK_MONOTONIC) + NOTIFY_WAIT_MS; /* UTIL-2 */
	for (;;) {
		if (wait) {
			left = deadline - clock_ms(CLOCK_MONOTONIC);
			if (left <= 0)
				return -EAGAIN;
			/* never 0, which would mean no bound at all */
			tv.tv_sec = (time_t)(left / 1000);
			tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
			if (setsockopt(n->fd, SOL_SOCKET, SO_SNDTIMEO, &tv,
				       sizeof(tv)) < 0)
				return -errno;
		}
		w = sendto(n->fd, msg, len,
			   MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT),
			   (const struct sockaddr *)&n->addr, n->addr_len);
		if (w >= 0)
			return (size_t)w == len ? 0 : -EMSGSIZE;
		if (errno != EINTR)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
}

/* Send one message to the manager, if there is one; wait for room as the
 * rule in the header says.  0 when sent. */
static int notify_send(struct notify *n, const char *msg, bool wait)
{
	size_t name_len;
	int r;

	if (n == NULL || !n->enabled)
		return 0;
	r = notify_sendto(n, msg, wait);
	if (r == 0)
		return 0;
	name_len = strcspn(msg, "=\n");
	if (!n->warned) {
		n->warned = true;
		if (r == -EAGAIN)
			log_warn("notify: %.*s dropped: NOTIFY_SOCKET %s stayed"
				 " full for %d ms (the service manager does not"
				 " read it); later messages not sent are not"
				 " logged", (int)name_len, msg, n->socket_path,
				 wait ? NOTIFY_WAIT_MS : 0);
		else
			log_warn("notify: %.*s not sent to NOTIFY_SOCKET %s: %s"
				 " (the service manager will not see this"
				 " daemon's state); later messages not sent are"
				 " not logged", (int)name_len, msg,
				 n->socket_path, strerror(-r));
	} else {
		log_debug("notify: %.*s not sent: %s", (int)name_len, msg,
			  strerror(-r));
	}
	return r;
}

/* Copy status onto one line (no newline could smuggle in another
 * assignment), cut at NOTIFY_STATUS_MAX bytes on a UTF-8 boundary. */
static void notify_clean_status(const char *status, char *out, size_t size)
{
	size_t i, len = strlen(status);

	if (len > size - 1) {
		len = size - 1;
		/* Do not split a multi-byte sequence. */
		while (len > 0 && ((unsigned char)status[len] & 0xC0) == 0x80)
			len--;
	}
	for (i = 0; i < len; i++)
		out[i] = (status[i] == '\n' || status[i] == '\r') ? ' ' :
			 status[i];
	out[len] = '\0';
}

/* Remember status as sent; true when it differs from the last one. */
static bool notify_status_changed(struct notify *n, const char *clean)
{
	char *copy;

	if (n->last_status != NULL && strcmp(n->last_status, clean) == 0)
		return false;
	copy = xstrdup(clean);
	free(n->last_status);
	n->last_status = copy;
	return true;
}

/* Build "head" or "head\nSTATUS=..." (only when the status changed) and
 * send it; a state change (head) waits for room, a STATUS= alone does not.
 * A STATUS= not sent is forgotten, so that the next one goes out. */
static void notify_send_with_status(struct notify *n, const char *head,
				    const char *status)
{
	char clean[NOTIFY_STATUS_MAX + 1];
	char msg[NOTIFY_MSG_MAX];

	if (n == NULL || !n->enabled)
		return;
	if (status == NULL) {
		notify_send(n, head, true);
		return;
	}
	notify_clean_status(status, clean, sizeof(clean));
	if (!notify_status_changed(n, clean)) {
		if (head != NULL)
			notify_send(n, head, true);
		return;
	}
	if (head != NULL)
		snprintf(msg, sizeof(msg), "%s\nSTATUS=%s", head, clean);
	else
		snprintf(msg, sizeof(msg), "STATUS=%s", clean);
	if (notify_send(n, msg, head != NULL) < 0) {
		free(n->last_status);
		n->last_status = NULL;
	}
}

/* The watchdog timer fired: tell the manager the loop is alive (never
 * waits: a manager that does not read cannot act on it either). */
static void notify_watchdog_cb(uv_timer_t *t)
{
	notify_send(t->data, "WATCHDOG=1", false);
}

/* Read the environment, open the sending socket and start the watchdog
 * timer when asked. */
struct notify *notify_new(uv_loop_t *loop)
{
	struct notify *n;
	const char *path;
	uint64_t ms;
	int r;

	n = xcalloc(1, sizeof(*n));
	n->loop = loop;
	n->fd = -1;

	path = getenv("NOTIFY_SOCKET");
	if (path == NULL || *path == '\0')
		return n;
	n->socket_path = xstrdup(path);
	r = notify_address(n, path);
	if (r == 0) {
		n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (n->fd < 0)
			r = -errno;
	}
	if (r < 0) {
		n->warned = true;
		log_warn("notify: cannot send to NOTIFY_SOCKET %s: %s (the"
			 " service manager will not see this daemon's state)",
			 path, strerror(-r));
		return n;
	}
	n->enabled = true;

	if (notify_watchdog_wanted(&n->watchdog_usec)) {
		/* Half the interval, as sd_watchdog_enabled(3) advises. */
		ms = n->watchdog_usec / 2000;
		if (ms == 0)
			ms = 1;
		uv_timer_init(loop, &n->watchdog);
		n->watchdog.data = n;
		n->watchdog_on = true;
		uv_timer_start(&n->watchdog, notify_watchdog_cb, ms, ms);
		uv_unref((uv_handle_t *)&n->watchdog);
		log_debug("notify: watchdog every %llu ms",
			  (unsigned long long)ms);
	}
	return n;
}

/* READY=1, with STATUS= when given and changed. */
void notify_ready(struct notify *n, const char *status)
{
	notify_send_with_status(n, "READY=1", status);
}

/* RELOADING=1 with the CLOCK_MONOTONIC time systemd 253+ asks for. */
void notify_reloading(struct notify *n)
{
	char msg[64];
	unsigned long long usec;

	if (n == NULL || !n->enabled)
		return;
	usec = (unsigned long long)clock_us(CLOCK_MONOTONIC); /* UTIL-2 */
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu", usec);
	notify_send(n, msg, true);
}

/* STOPPING=1. */
void notify_stopping(struct notify *n)
{
	notify_send(n, "STOPPING=1", true);
}

/* STATUS=<one line>, only when it changed. */
void notify_status(struct notify *n, const char *status)
{
	if (status != NULL)
		notify_send_with_status(n, NULL, status);
}

/* Stop the watchdog and close its handle (the loop runs the close). */
void notify_close(struct notify *n)
{
	if (n == NULL || !n->watchdog_on)
		return;
	uv_timer_stop(&n->watchdog);
	if (!uv_is_closing((uv_handle_t *)&n->watchdog))
		uv_close((uv_handle_t *)&n->watchdog, NULL);
}

/* Free n (and close its socket) once its handle's close callback has
 * run. */
void notify_free(struct notify *n)
{
	if (n == NULL)
		return;
	if (n->fd >= 0)
		close(n->fd);
	free(n->socket_path);
	free(n->last_status);
	free(n);
}
