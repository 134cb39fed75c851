"""Layer 0, core: what every layer uses and nothing of dpaudit's own.

* :mod:`~dpaudit.core.checks` — argument checks (one-sentence errors);
* :mod:`~dpaudit.core.errors` — exceptions user code raised mid-audit (a crash, exit 3);
* :mod:`~dpaudit.core.serialize` — JSON-ready values;
* :mod:`~dpaudit.core.progress` — progress bars;
* :mod:`~dpaudit.core.executors` — the executor protocol the engines call and
  :mod:`dpaudit.runtime` implements.

The layers, lowest first, and what flows between them: ``docs/design.md``.
"""
