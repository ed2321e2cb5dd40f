/*
 * ctl_wire.h - backfillctl's connection to the daemon (ctl_wire.c).
 */
#ifndef BACKFILLD_CTL_WIRE_H
#define BACKFILLD_CTL_WIRE_H

#include "buf.h"
#include "err.h"
#include "proto.h"

/* The fd of a connection to the socket at path, or -1 with err. */
int ctl_connect(const char *path, struct err *err);
/* Send a whole frame: 0, or -1 with err (exit 3). */
int ctl_send(int fd, const char *path, const struct buf *frame,
	     struct err *err);
/* The next frame into msg, later bytes kept in `in`: 0, or -1 with err. */
int ctl_recv(int fd, const char *path, struct buf *in, struct proto_msg *msg,
	     struct err *err);
/* The RESPONSE's status as the exit code, or -1 with err. */
int ctl_status(const struct proto_msg *msg, const char *path,
	       struct err *err);

#endif
