"""JSON Schemas of dpaudit's files, shipped with the package.

* ``spec.schema.json`` — an audit spec (a TOML file, read as JSON: tables are
  objects). dpaudit's own loader (:func:`dpaudit.io.spec.load_spec`) checks more
  (that files exist, that a builder accepts its parameters); the schema lets an
  editor or a CI step check the shape before that.
* ``results.schema.json`` — ``results.json`` of a run (schema name
  ``dpaudit.results/1``), white-box and black-box records alike.

Example:
    >>> from dpaudit.io.schemas import schema
    >>> schema("results")["properties"]["schema"]["const"]
    'dpaudit.results/1'
"""

from __future__ import annotations

import json
from importlib import resources

__all__ = ["NAMES", "schema"]

#: The shipped schemas.
NAMES = ("spec", "results")


def schema(name: str) -> dict:
    """A shipped JSON Schema (draft 2020-12), as a dict.

    Args:
        name: ``"spec"`` or ``"results"``.

    Returns:
        The schema.

    Raises:
        ValueError: for another name.
    """
    if name not in NAMES:
        raise ValueError(f"unknown schema {name!r}; dpaudit ships {list(NAMES)}.")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
