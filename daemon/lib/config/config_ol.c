/*
 * config_ol.c - openlineage: where the daemon sends its OpenLineage run
 * events (docs/configuration.md, "openlineage"): url: an HTTP endpoint
 * (Marquez: http://HOST:5000/api/v1/lineage) or file: a JSON-lines file,
 * one of the two; namespace: (default backfilld), timeout: (default 5s),
 * queue: (events waiting at most, default 1000).
 */
#include "config_int.h"

#include <string.h>

#include "xalloc.h"

const struct cfg_key cfg_ol_keys[] = {
	{ "url", YAML_SCALAR_NODE, cfg_h_str, CFG_OFF(config, ol_url), 0,
	  "an http:// or https:// URL", 0 },
	{ "file", YAML_SCALAR_NODE, cfg_h_path, CFG_OFF(config, ol_file), 0,
	  "a file path", 0 },
	{ "namespace", YAML_SCALAR_NODE, cfg_h_str,
	  CFG_OFF(config, ol_namespace), 0, "a job namespace", 0 },
	{ "timeout", YAML_SCALAR_NODE, cfg_h_posduration,
	  CFG_OFF(config, ol_timeout), 0, CFG_POSDURATION, 0 },
	{ "queue", YAML_SCALAR_NODE, cfg_h_int, CFG_OFF(config, ol_queue),
	  1, CFG_POSINT, 0 },
	{ NULL, YAML_NO_NODE, NULL, 0, 0, NULL, 0 }
};

/* openlineage: url: or file: (one of them), and the rest. */
int
cfg_h_openlineage(struct cfg_parser *p, void *obj, const struct cfg_key *k,
		  yaml_node_t *key, yaml_node_t *val)
{
	struct config *cfg = obj;

	cfg_set_ctx(p, "%s", "openlineage");
	if (cfg_parse_map(p, val, cfg_ol_keys, obj) < 0)
		return -1;
	cfg_set_ctx(p, "%s", "");
	if ((cfg->ol_url == NULL) == (cfg->ol_file == NULL))
		return cfg_fail(p, val->start_mark,
				"openlineage needs one of url: (the consumer's"
				" endpoint, Marquez: http://HOST:5000/api/v1/"
				"lineage) or file: (a JSON-lines file)");
	if (cfg->ol_url != NULL && strncmp(cfg->ol_url, "http://", 7) != 0 &&
	    strncmp(cfg->ol_url, "https://", 8) != 0) {
		yaml_node_t *u = cfg_map_key(p, val, "url");

		return cfg_fail(p, u != NULL ? u->start_mark : val->start_mark,
				"openlineage url must start with http:// or"
				" https://");
	}
	if (cfg->ol_namespace == NULL)
		cfg->ol_namespace = xstrdup(OL_DEFAULT_NAMESPACE);
	if (cfg->ol_timeout == 0)
		cfg->ol_timeout = OL_DEFAULT_TIMEOUT;
	if (cfg->ol_queue == 0)
		cfg->ol_queue = OL_DEFAULT_QUEUE;
	return 0;
}
