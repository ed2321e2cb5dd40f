/* err.c - filling and prefixing struct err. */
#include "err.h"

#include <stdio.h>
#include <string.h>

int
err_setv(struct err *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL)
		return -1;
	err->code = code;
	err->kind = ERR_NONE;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	return -1;
}

int
err_set(struct err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_setv(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

int
err_interrupted(struct err *err)
{
	err_set(err, EXIT_WORK_FAILED, "interrupted");
	if (err != NULL)
		err->kind = ERR_INTERRUPTED;
	return -1;
}

void
err_prefix(struct err *err, const char *fmt, ...)
{
	char head[256], old[ERR_MSG_MAX];
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	err->kind = ERR_NONE;
	memcpy(old, err->msg, sizeof old);
	snprintf(err->msg, sizeof err->msg, "%.255s: %.*s", head,
		 (int)(sizeof err->msg - sizeof head - 3), old);
}

void
err_clear(struct err *err)
{
	if (err == NULL)
		return;
	err->code = 0;
	err->kind = ERR_NONE;
	err->msg[0] = '\0';
}
