"""OpenLineage events validated against the spec's own JSON schemas
(tests/openlineage/: RunEvent 2-0-2 and the facets nominalTime 1-0-1,
parent 1-0-1, errorMessage 1-0-1) and backfilld_partition against the
schema backfilld ships (config/openlineage/), with python3-jsonschema:
every $ref resolved from these local files, never from the network."""
import json
import os
import re
import warnings

import jsonschema

import harness as h

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SPEC = os.path.join(ROOT, "tests", "openlineage")
OURS = os.path.join(ROOT, "config", "openlineage", "BackfilldPartitionRunFacet.json")
FACETS = {"nominalTime": "NominalTimeRunFacet.json", "parent": "ParentRunFacet.json",
          "errorMessage": "ErrorMessageRunFacet.json"}
# RFC 3986's scheme ":" then something: what format "uri" asks (the
# checker of jsonschema needs rfc3987 for it, which may be missing)
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")


def _load(path):
    with open(path) as f:
        return json.load(f)


_SPEC = _load(os.path.join(SPEC, "OpenLineage.json"))
_FACET_SCHEMAS = {k: _load(os.path.join(SPEC, v)) for k, v in FACETS.items()}
_OURS = _load(OURS)
_STORE = {s["$id"]: s for s in [_SPEC, _OURS] + list(_FACET_SCHEMAS.values())}


def _validator(schema):
    cls = jsonschema.validators.validator_for(schema)
    fc = jsonschema.FormatChecker()
    try:
        from referencing import Registry, Resource
        reg = Registry().with_resources((k, Resource.from_contents(v))
                                        for k, v in _STORE.items())
        return cls(schema, registry=reg, format_checker=fc)
    except ImportError:   # jsonschema < 4.18 (Debian 12's 4.10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            res = jsonschema.RefResolver.from_schema(schema, store=_STORE)
        return cls(schema, resolver=res, format_checker=fc)


# the RunEvent itself (the spec's root is a oneOf of the three events,
# whose error would not say which field is wrong)
_EVENT = _validator({"$schema": _SPEC["$schema"], "$ref": _SPEC["$id"] + "#/$defs/RunEvent"})
_FACET = {k: _validator(v) for k, v in _FACET_SCHEMAS.items()}
_FACET["backfilld_partition"] = _validator(_OURS)


def errors(ev):
    """The event's errors against the schemas (empty: valid)."""
    out = ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message)
           for e in _EVENT.iter_errors(ev)]
    for name, f in ev.get("run", {}).get("facets", {}).items():
        if name not in _FACET:
            out.append("run.facets.%s: no schema to check it against" % name)
            continue
        out += ["run.facets.%s: %s" % (name, e.message)
                for e in _FACET[name].iter_errors({name: f})]
        for k in ("_producer", "_schemaURL"):
            if not URI.match(f.get(k, "")):
                out.append("run.facets.%s.%s is not a URI: %r" % (name, k, f.get(k)))
    if not URI.match(ev.get("producer", "")):
        out.append("producer is not a URI: %r" % ev.get("producer"))
    return out


def validate(ev):
    """Fail the test unless ev is valid; returns it."""
    e = errors(ev)
    h.check(not e, "an event against the OpenLineage schemas: %s\n%s" % ("; ".join(e),
                                                                       json.dumps(ev)))
    return ev
