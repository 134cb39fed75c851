r"""The white-box audit engine, one module per stage.

:func:`dpaudit.audit` (:mod:`dpaudit.whitebox.engine`) reads as the pipeline:

* :mod:`~dpaudit.whitebox.plan` — release laws, noise structure, route,
  exact accounting and compatibility of one audit;
* :mod:`~dpaudit.whitebox.kernels` — per route, a loss kernel
  ``(init, step, release)`` streaming losses into the hockey-stick state of
  :mod:`dpaudit.estimation.pld`;
* :mod:`~dpaudit.whitebox.run` — one direction over its chunks, and the pilot
  run that places the epsilon grid;
* :mod:`~dpaudit.whitebox.certificate` — releases that certify a violation;
* :mod:`~dpaudit.whitebox.summaries` — bounds on ``delta`` and ``epsilon``
  at the claim, curves and diagnostics;
* :mod:`~dpaudit.whitebox.verdict` — every verdict rule, in one pure function;
* :mod:`~dpaudit.whitebox.result` — the records (``AuditResult``, ...);
* :mod:`~dpaudit.whitebox.notions` — a notion claim (zCDP, RDP, GDP, f-DP) judged on one pair.

It imports the layers below (core, accounting, model, estimation), never
:mod:`dpaudit.blackbox`, :mod:`dpaudit.runtime` or the layers above.
"""
