"""Implementations on finite computers: float samplers with their flaws, and the fixes.

Black-box samplers ``sampler(data, n, key) -> releases`` (records on the first axis of
``data``, the count or sum of records as the query) and the summaries property tests run:

* :mod:`mechanisms.implementations.samplers` — the textbook float Laplace and Gaussian
  (flawed: Mironov 2012), Mironov's snapping mechanism, and the exact discrete Laplace and
  Gaussian samplers of Canonne, Kamath and Steinke (2020) (the correct controls);
* :mod:`mechanisms.implementations.sums` — bounded sums as libraries implement them: a float
  sum, a fixed-width integer sum, a sum clamped after summing, and the checked sum.
"""

from mechanisms.implementations import samplers, sums

__all__ = ["samplers", "sums"]
