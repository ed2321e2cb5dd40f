/*
 * config_yaml.c - reading YAML into libyaml's node tree with positions, and
 * the one walk of a mapping through its table of keys (cfg_parse_map):
 * every key checked (unknown, duplicate) before any value, then each row's
 * handler phase by phase, in document order within a phase.  netplan's
 * parse.c shape: a row names a key, the node type it expects, what its
 * value must be (for messages), its handler and, for the generic handlers,
 * the offset of the field it fills (config_int.h, struct cfg_key).
 */
#include "config_int.h"

#include <string.h>

#include "xalloc.h"

/* The node with index i of the document. */
yaml_node_t *
cfg_node(struct cfg_parser *p, int i)
{
	return yaml_document_get_node(p->doc, i);
}

/* A scalar node's text. */
const char *
cfg_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* True for a plain scalar meaning null: empty, "~" or "null". */
bool
cfg_is_null(const yaml_node_t *n)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = cfg_text(n);
	return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* Number of items of a sequence node. */
size_t
cfg_seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top -
			n->data.sequence.items.start);
}

/* Item i of a sequence node. */
yaml_node_t *
cfg_seq_item(struct cfg_parser *p, const yaml_node_t *n, size_t i)
{
	return cfg_node(p, n->data.sequence.items.start[i]);
}

/* The first pair of mapping node map whose key is `name`, or NULL. */
static yaml_node_pair_t *
cfg_map_pair(struct cfg_parser *p, const yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *pr;

	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = cfg_node(p, pr->key);

		if (k->type == YAML_SCALAR_NODE && strcmp(cfg_text(k), name) == 0)
			return pr;
	}
	return NULL;
}

/* The value of key `name` in mapping node map, or NULL. */
yaml_node_t *
cfg_map_get(struct cfg_parser *p, const yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *pr = cfg_map_pair(p, map, name);

	return pr != NULL ? cfg_node(p, pr->value) : NULL;
}

/* The key node of key `name` in mapping node map, or NULL. */
yaml_node_t *
cfg_map_key(struct cfg_parser *p, const yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *pr = cfg_map_pair(p, map, name);

	return pr != NULL ? cfg_node(p, pr->key) : NULL;
}

/* Convert a libyaml mark to a 1-based position. */
struct pos
cfg_pos(yaml_mark_t m)
{
	struct pos pos = { (int)m.line + 1, (int)m.column + 1 };

	return pos;
}

/* Check that a mapping's keys are names and none is given twice. */
int
cfg_check_dups(struct cfg_parser *p, const yaml_node_t *map)
{
	yaml_node_pair_t *pr, *q;
	char buf[CFG_QUOTE_MAX * 4 + 16];

	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = cfg_node(p, pr->key);

		if (k->type != YAML_SCALAR_NODE || cfg_is_null(k))
			return cfg_fail(p, k->start_mark,
					"%skeys must be names, got %s", p->pfx,
					cfg_got(k, buf, sizeof buf));
		for (q = map->data.mapping.pairs.start; q < pr; q++) {
			yaml_node_t *k0 = cfg_node(p, q->key);

			if (strcmp(cfg_text(k0), cfg_text(k)) == 0)
				return cfg_fail(p, k->start_mark,
						"duplicate key %s%s%s (first at line %zu); keep one",
						cfg_quote(cfg_text(k), buf, sizeof buf),
						p->ctx[0] ? " in " : "", p->ctx,
						k0->start_mark.line + 1);
		}
	}
	return 0;
}

/* The table row for key `name`, or NULL. */
static const struct cfg_key *
cfg_key_find(const struct cfg_key *table, const char *name)
{
	for (; table->name != NULL; table++)
		if (strcmp(table->name, name) == 0)
			return table;
	return NULL;
}

/* Walk mapping node map with a table: check every key, then run the
 * handlers phase by phase, in document order within a phase. */
int
cfg_parse_map(struct cfg_parser *p, yaml_node_t *map,
	      const struct cfg_key *table, void *obj)
{
	yaml_node_pair_t *pr;
	int phase, maxphase = 0;

	if (cfg_check_dups(p, map) < 0)
		return -1;
	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = cfg_node(p, pr->key);
		const struct cfg_key *k = cfg_key_find(table, cfg_text(kn));

		if (k == NULL)
			return cfg_unknown_key(p, kn, table);
		if (k->phase > maxphase)
			maxphase = k->phase;
	}
	for (phase = 0; phase <= maxphase; phase++) {
		for (pr = map->data.mapping.pairs.start;
		     pr < map->data.mapping.pairs.top; pr++) {
			yaml_node_t *kn = cfg_node(p, pr->key);
			yaml_node_t *vn = cfg_node(p, pr->value);
			const struct cfg_key *k = cfg_key_find(table, cfg_text(kn));

			if (k->phase != phase)
				continue;
			if (k->type != YAML_NO_NODE && vn->type != k->type)
				return cfg_bad_value(p, k, vn);
			if (k->fn(p, obj, k, kn, vn) < 0)
				return -1;
		}
	}
	return 0;
}

/*
 * Start loading item i of the warehouses or jobs (what): it must be a
 * mapping (holding `needs`, for the message) with a name:.  Sets *pos and
 * the message context to the item's name (or number when the name is not
 * a scalar: the name's handler says what is wrong with it).
 */
int
cfg_item_begin(struct cfg_parser *p, yaml_node_t *it, size_t i,
	       const char *what, const char *needs, struct pos *pos)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];
	yaml_node_t *nm;

	if (it->type != YAML_MAPPING_NODE)
		return cfg_fail(p, it->start_mark,
				"each %s must be a mapping with %s, got %s",
				what, needs, cfg_got(it, buf, sizeof buf));
	*pos = cfg_pos(it->start_mark);
	nm = cfg_map_get(p, it, "name");
	if (nm == NULL)
		return cfg_fail(p, it->start_mark,
				"%s %zu has no name: every %s needs name: NAME",
				what, i + 1, what);
	if (nm->type == YAML_SCALAR_NODE)
		cfg_set_ctx(p, "%s %s", what,
			    cfg_quote(cfg_text(nm), buf, sizeof buf));
	else
		cfg_set_ctx(p, "%s %zu", what, i + 1);
	return 0;
}

/* Make file i of the configuration the current one: messages, node
 * lookups and relative paths refer to it from now on. */
void
cfg_use(struct cfg_parser *p, size_t i)
{
	struct cfg_src *f = p->srcs[i];

	p->cur = i;
	p->file = f->file;
	p->src = f->text;
	p->srclen = f->len;
	p->doc = f->has_doc ? &f->doc : NULL;
	p->dir = f->dir;
}

/* Name the i-th item of a sequence of named mappings in the context
 * ("check \"c\" of ..." or "check 2 of ..."); returns its name node
 * (NULL when it has none). */
yaml_node_t *
cfg_item_ctx(struct cfg_parser *p, yaml_node_t *it, const char *kind,
	     size_t i, const char *saved)
{
	char buf[CFG_QUOTE_MAX * 4 + 16];
	yaml_node_t *nm = cfg_map_get(p, it, "name");

	if (nm != NULL && nm->type == YAML_SCALAR_NODE && !cfg_is_null(nm))
		cfg_set_ctx(p, "%s %s of %s", kind,
			    cfg_quote(cfg_text(nm), buf, sizeof buf), saved);
	else
		cfg_set_ctx(p, "%s %zu of %s", kind, i + 1, saved);
	return nm;
}

/* The key node, of those named, that comes second in the mapping. */
yaml_node_t *
cfg_second_key(struct cfg_parser *p, const yaml_node_t *map,
	       const char *const *names, const char **first)
{
	yaml_node_pair_t *pr;
	size_t i, seen = 0;

	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = cfg_node(p, pr->key);

		for (i = 0; names[i] != NULL; i++) {
			if (strcmp(cfg_text(k), names[i]) != 0)
				continue;
			if (seen++ == 1)
				return k;
			*first = names[i];
		}
	}
	return NULL;
}

/*
 * Refuse YAML nested deeper than CFG_DEPTH_MAX, before loading it: libyaml
 * keeps a stack per flow level that it walks for every token, so its cost
 * grows with the square of the nesting (40,000 '[' take seconds).  Walking
 * the events stops at the first level too deep, so the cost stays linear.
 * A syntax error is left to the load that follows, which reports it.
 */
static int
cfg_check_depth(struct cfg_parser *p)
{
	yaml_parser_t yp;
	yaml_event_t ev;
	int depth = 0, rc = 0;
	bool end = false;

	if (!yaml_parser_initialize(&yp))
		xalloc_exhausted("libyaml");
	yaml_parser_set_input_string(&yp, (const unsigned char *)p->src,
				     p->srclen);
	while (!end && rc == 0 && yaml_parser_parse(&yp, &ev)) {
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > CFG_DEPTH_MAX)
				rc = cfg_fail(p, ev.start_mark,
					      "nesting deeper than %d levels",
					      CFG_DEPTH_MAX);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			end = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&yp);
	return rc;
}

/* True when a scalar node holds a NUL byte (libyaml gives its length). */
static bool
cfg_has_nul(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL;
}

/* Refuse a scalar holding a NUL byte, shown whole and escaped: every C
 * string the loader takes would end at the NUL ("warn\0x" read as
 * "warn"). */
static int
cfg_nul_fail(struct cfg_parser *p, const yaml_node_t *n, const char *key)
{
	char buf[CFG_QUOTE_MAX * 4 + 16], kb[CFG_QUOTE_MAX * 4 + 16];

	cfg_quote_n(cfg_text(n), n->data.scalar.length, buf, sizeof buf);
	if (key == NULL)
		return cfg_fail(p, n->start_mark,
				"a key holds a NUL byte: %s; remove it", buf);
	if (key[0] == '\0')
		return cfg_fail(p, n->start_mark,
				"a value holds a NUL byte: %s; remove it", buf);
	return cfg_fail(p, n->start_mark, "%s holds a NUL byte: %s; remove it",
			cfg_quote(key, kb, sizeof kb), buf);
}

/* The key whose value is node i (directly, or as an item of a sequence
 * that is the value), "" when none; NULL when node i is itself a key. */
static const char *
cfg_key_of(struct cfg_parser *p, int i)
{
	yaml_node_t *n;
	yaml_node_pair_t *pr;
	yaml_node_item_t *it;
	int want = i, round;

	for (round = 0; round < 2; round++) {
		for (n = p->doc->nodes.start; n < p->doc->nodes.top; n++) {
			if (n->type != YAML_MAPPING_NODE)
				continue;
			for (pr = n->data.mapping.pairs.start;
			     pr < n->data.mapping.pairs.top; pr++) {
				yaml_node_t *kn = cfg_node(p, pr->key);

				if (round == 0 && pr->key == want)
					return NULL;
				if (pr->value == want &&
				    kn->type == YAML_SCALAR_NODE)
					return cfg_text(kn);
			}
		}
		/* not a value: the sequence that holds it */
		for (n = p->doc->nodes.start; n < p->doc->nodes.top &&
		     want == i; n++) {
			if (n->type != YAML_SEQUENCE_NODE)
				continue;
			for (it = n->data.sequence.items.start;
			     it < n->data.sequence.items.top; it++)
				if (*it == i) {
					want = (int)(n - p->doc->nodes.start) + 1;
					break;
				}
		}
		if (want == i)
			break;
	}
	return "";
}

/* Refuse the first scalar (in document order) that holds a NUL byte,
 * before any handler reads one as a C string.  Linear in the nodes: an
 * alias is one node however often it is used. */
static int
cfg_check_nul(struct cfg_parser *p)
{
	yaml_node_t *n;

	for (n = p->doc->nodes.start; n < p->doc->nodes.top; n++)
		if (cfg_has_nul(n))
			return cfg_nul_fail(p, n, cfg_key_of(p,
					    (int)(n - p->doc->nodes.start) + 1));
	return 0;
}

/* Refuse a setting (a key of the top level's table) in an included file,
 * saying where it belongs. */
static int
cfg_inc_setting(struct cfg_parser *p, const yaml_node_t *root)
{
	yaml_node_pair_t *pr;
	char buf[CFG_QUOTE_MAX * 4 + 16];

	for (pr = root->data.mapping.pairs.start;
	     pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = cfg_node(p, pr->key);

		if (kn->type == YAML_SCALAR_NODE &&
		    cfg_key_find(cfg_inc_keys, cfg_text(kn)) == NULL &&
		    cfg_key_find(cfg_top_keys, cfg_text(kn)) != NULL)
			return cfg_fail(p, kn->start_mark,
					"%s is a setting of the main configuration file, not of an included one (which holds only jobs:, warehouses: and include:); move it to %s",
					cfg_quote(cfg_text(kn), buf, sizeof buf),
					p->srcs[0]->file);
	}
	return 0;
}

/*
 * Parse the current file into its document and walk its top level: the
 * settings table for the main file, cfg_inc_keys for an included one (an
 * empty included file holds nothing; an empty main file is an error).
 */
int
cfg_parse_file(struct cfg_parser *p, bool included)
{
	struct cfg_src *f = p->srcs[p->cur];
	yaml_parser_t yp;
	yaml_document_t extra;
	yaml_node_t *root, *x;
	char buf[CFG_QUOTE_MAX * 4 + 16];
	int rc = -1;

	if (cfg_check_depth(p) < 0)
		return -1;
	if (!yaml_parser_initialize(&yp))
		xalloc_exhausted("libyaml");
	yaml_parser_set_input_string(&yp, (const unsigned char *)p->src,
				     p->srclen);
	if (!yaml_parser_load(&yp, &f->doc)) {
		rc = cfg_yaml_error(p, &yp);
		yaml_parser_delete(&yp);
		return rc;
	}
	f->has_doc = true;
	p->doc = &f->doc;
	root = yaml_document_get_root_node(&f->doc);
	if (root == NULL) {
		if (included)
			rc = 0;
		else
			cfg_fail_at(p, 1, 1,
				    "the configuration is empty: expected a mapping with warehouses: and jobs:");
		goto out;
	}
	if (!yaml_parser_load(&yp, &extra)) {
		cfg_yaml_error(p, &yp);
		goto out;
	}
	x = yaml_document_get_root_node(&extra);
	if (x != NULL) {
		cfg_fail(p, extra.start_mark,
			 "a second YAML document; the configuration is one document");
		yaml_document_delete(&extra);
		goto out;
	}
	yaml_document_delete(&extra);
	if (root->type != YAML_MAPPING_NODE) {
		cfg_fail(p, root->start_mark, included ?
			 "an included file must be a mapping with jobs: (and warehouses:), got %s" :
			 "the top level must be a mapping of settings (state_db:, warehouses:, jobs:, ...), got %s",
			 cfg_got(root, buf, sizeof buf));
		goto out;
	}
	cfg_set_ctx(p, "%s", "");
	if (cfg_check_nul(p) < 0)
		goto out;
	if (!included) {
		rc = cfg_parse_map(p, root, cfg_top_keys, p->cfg);
		goto out;
	}
	if (cfg_inc_setting(p, root) == 0)
		rc = cfg_parse_map(p, root, cfg_inc_keys, p->cfg);
out:
	yaml_parser_delete(&yp);
	return rc;
}
