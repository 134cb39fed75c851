"""Layer 6, io: what dpaudit reads and writes.

* :mod:`~dpaudit.io.spec` — audit specs (TOML): schema, loading, resolution;
* :mod:`~dpaudit.io.report` — reports (Markdown, HTML, JSON, JUnit);
* :mod:`~dpaudit.io.plot` — figures; :mod:`~dpaudit.io.schemas` — JSON schemas;
* :mod:`~dpaudit.io.datasets` — dataset generators named by specs.

It imports the engines and the layers below, never :mod:`dpaudit.runtime` or
:mod:`dpaudit.cli`.
"""
