/*
 * olcurl.h - one HTTP POST of a JSON body through libcurl, for the
 * OpenLineage transport (olsend.c).  Built into backfilld-ch.so, the
 * module that already links libcurl (meson.build): a daemon without
 * openlineage: url: (or a ClickHouse warehouse) never maps libcurl.
 * olsend.c finds it with module_symbol_in (module.h).  Called from the
 * sender's thread only.
 */
#ifndef BACKFILLD_OLCURL_H
#define BACKFILLD_OLCURL_H

#include <stddef.h>

/* The outcome of one POST. */
enum olcurl_result {
	OLCURL_OK,        /* a 2xx answer */
	OLCURL_RETRY,     /* no connection, a timeout, a 5xx or a 429 */
	OLCURL_REFUSED    /* another status: sending it again cannot help */
};

/* POST body (len bytes, Content-Type: application/json) to url within
 * timeout_s seconds; why gets one line unless OLCURL_OK. */
typedef enum olcurl_result (*olcurl_post_fn)(const char *url,
					     const char *body, size_t len,
					     long timeout_s, char *why,
					     size_t whysz);
enum olcurl_result olcurl_post(const char *url, const char *body, size_t len,
			       long timeout_s, char *why, size_t whysz);

#endif
