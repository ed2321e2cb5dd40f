/*
 * olcurl.c - one HTTP POST through libcurl (see olcurl.h).  An easy
 * handle per call: events are rare (two a run), a connection kept open
 * to the consumer would buy nothing worth its state.
 */
#include "olcurl.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t olcurl_once = PTHREAD_ONCE_INIT;

static void
olcurl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The answer's body is not read. */
static size_t
olcurl_discard_cb(char *p, size_t size, size_t n, void *data)
{
	(void)p;
	(void)data;
	return size * n;
}

enum olcurl_result
olcurl_post(const char *url, const char *body, size_t len, long timeout_s,
	    char *why, size_t whysz)
{
	struct curl_slist *hd = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	enum olcurl_result r;
	long status = 0;
	CURLcode rc;
	CURL *c;

	pthread_once(&olcurl_once, olcurl_init);
	c = curl_easy_init();
	if (c == NULL) {
		snprintf(why, whysz, "cannot start libcurl");
		return OLCURL_RETRY;
	}
	hd = curl_slist_append(hd, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, olcurl_discard_cb);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(why, whysz, "%s", errbuf[0] ? errbuf :
			 curl_easy_strerror(rc));
		r = OLCURL_RETRY;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300)
			r = OLCURL_OK;
		else
			r = status >= 500 || status == 429 ? OLCURL_RETRY :
				OLCURL_REFUSED;
		if (r != OLCURL_OK)
			snprintf(why, whysz, "HTTP status %ld", status);
	}
	curl_slist_free_all(hd);
	curl_easy_cleanup(c);
	return r;
}
