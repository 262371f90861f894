# SPDX-License-Identifier: Apache-2.0
"""Validators for the JSON Schemas in data/schemas (installed in share/gpuvs/schemas), whose relative `$ref`s name
the folder's other files (common.schema.json#/$defs/...): with the `referencing` library where jsonschema has it
(4.18 and later, Debian 13), else jsonschema's RefResolver (4.10, Debian 12)."""
import json
import pathlib

import jsonschema


def _registry(folder):
    """The folder's schemas by address, or None where jsonschema has no `referencing` (before 4.18)."""
    try:
        import referencing
        import referencing.jsonschema
    except ImportError:
        return None
    base = folder.as_uri() + "/"
    spec = referencing.jsonschema.DRAFT202012
    return referencing.Registry().with_resources(
        (base + p.name, referencing.Resource.from_contents(json.loads(p.read_text()), default_specification=spec))
        for p in folder.glob("*.schema.json"))


def validator(folder, name):
    """A Draft 2020-12 validator of folder/name."""
    folder = pathlib.Path(folder).resolve()
    base = folder.as_uri() + "/"
    schema = json.loads((folder / name).read_text())
    registry = _registry(folder)
    if registry is None:
        return jsonschema.Draft202012Validator(schema, resolver=jsonschema.RefResolver(base_uri=base + name, referrer=schema))
    # The root gets the file's address as its id, so that its relative references resolve beside it.
    return jsonschema.Draft202012Validator(dict(schema, **{"$id": base + name}), registry=registry)


def resolve(folder, name, ref):
    """What `ref`, written in folder/name, points at: an exception where it points nowhere."""
    folder = pathlib.Path(folder).resolve()
    base = folder.as_uri() + "/"
    registry = _registry(folder)
    if registry is None:
        schema = json.loads((folder / name).read_text())
        return jsonschema.RefResolver(base_uri=base + name, referrer=schema).resolve(ref)[1]
    return registry.resolver(base_uri=base + name).lookup(ref).contents


def errors(folder, name, doc):
    """Each error, and for a oneOf what each alternative found (the message alone quotes the whole document)."""
    out = []
    for e in validator(folder, name).iter_errors(doc):
        out.append(f"{e.json_path}: {e.message[:200]}")
        out.extend(f"  {c.json_path}: {c.message[:200]}" for c in (e.context or []))
    return out


def main():
    """python3 json_schemas.py FOLDER NAME < DOCUMENT: exit 1 naming each error."""
    import sys
    found = errors(sys.argv[1], sys.argv[2], json.load(sys.stdin))
    if found:
        sys.exit(f"{sys.argv[2]} refuses the document: " + "; ".join(found))


if __name__ == "__main__":
    main()
