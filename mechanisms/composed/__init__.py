"""Composed mechanisms: programs of several noisy releases, audited as whole traces.

Each entry releases several numpyro sample sites (``Mechanism.release_sites``)
and is audited on the joint law of all of them (docs/whole-trace.md):

* :mod:`.queries` — k Laplace or k Gaussian queries released together at k
  sites, their budget split by basic (or, for Laplace, advanced) composition;
  faulty variants give every query the whole budget.
* :mod:`.functional_pair` — a mean curve (ICLP noise) and a covariance
  (Gaussian-process noise) released together, claimed by composition; a faulty
  variant calibrates the covariance noise to half its sensitivity.
* :mod:`.roc` — BMR's ROC as two ECDF release sites (sequential composition),
  and a faulty variant that assumes parallel composition.
* :mod:`.svt` — the sparse vector technique as an adaptive program: latent
  threshold noise (marginalised), one release site per answer; a faulty variant
  whose query noise ignores the cutoff.
"""

from mechanisms.composed import functional_pair, queries, roc, svt

__all__ = ["functional_pair", "queries", "roc", "svt"]
