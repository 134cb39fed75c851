r"""White-box parity: does an implementation's output law match the model it declares?

A mechanism's model says "continuous Laplace"; the implementation's releases are
computed in floats by some sampler. A white-box audit certifies the *model*; if
the implementation does not draw from it (a wrong scale, a sampler defect such
as the Bingham sampler of diffprivlib), the model's pass says nothing about the
code. :func:`check_parity` tests, from samples, whether the implementation's
releases and the model's releases (``reference.sample``) have the same law,
coordinate by coordinate, with a stated level and a stated detectable distance:

* statistic: the two-sample Kolmogorov–Smirnov distance ``K`` of each coordinate
  (``n`` releases of each);
* level: by the Dvoretzky–Kiefer–Wolfowitz inequality with Massart's constant,
  ``P(sup |F_n - F| > sqrt(log(2/a) / (2n))) <= a``; splitting ``alpha`` over the
  two samples and the ``d`` coordinates (Bonferroni), the check says ``"mismatch"``
  when some ``K > t = 2 sqrt(log(4 d / alpha) / (2n))``, which happens with
  probability at most ``alpha`` when the laws are equal;
* power: if some coordinate's true Kolmogorov distance is at least
  ``t + 2 sqrt(log(4 / (1 - power)) / (2n))`` (the *detectable distance*), the
  check says ``"mismatch"`` with probability at least ``power``.

``"consistent"`` is not a proof of equality: it says no difference larger than
the detectable distance is present (at the stated power). Float artefacts
(holes in the reachable doubles) have Kolmogorov distance about ``2^-52`` and are
not parity's business: the float statistics of
:mod:`dpaudit.blackbox.statistics.floats` find those.

Example:
    >>> import jax, numpyro, numpyro.distributions as dist
    >>> import dpaudit
    >>> def model(data):
    ...     numpyro.sample("release", dist.Laplace(data.sum(), 1.0))
    >>> mech = dpaudit.Mechanism("laplace-sum", model, dpaudit.Claim(1.0))
    >>> def wrong_scale(data, n, key):
    ...     return data.sum() + 1.3 * jax.random.laplace(key, (n,))
    >>> res = check_parity(wrong_scale, mech, jax.numpy.zeros(3), samples=20_000)
    >>> res.verdict, res.detectable_distance < 0.05
    ('mismatch', True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np

from dpaudit.core.checks import check_count
from dpaudit.model.mechanism import Mechanism

__all__ = ["ParityResult", "check_parity", "kolmogorov_distance"]


@dataclass(frozen=True)
class ParityResult:
    """The parity check of an implementation against its model.

    Attributes:
        verdict: ``"mismatch"`` (the laws differ, at level ``alpha``) or ``"consistent"``.
        distance: the largest two-sample Kolmogorov distance over coordinates.
        coordinate: the coordinate (flat index) where it was found.
        threshold: the distance above which the check says ``"mismatch"``.
        detectable_distance: a true distance at least this is found with probability
            ``>= power``.
        alpha: the level (probability of ``"mismatch"`` when the laws are equal).
        power: the stated power.
        samples: releases drawn from each of the implementation and the model.
    """

    verdict: str
    distance: float
    coordinate: int
    threshold: float
    detectable_distance: float
    alpha: float
    power: float
    samples: int

    def __str__(self) -> str:
        return (
            f"parity {self.verdict}: Kolmogorov distance {self.distance:.4g} at coordinate "
            f"{self.coordinate} (threshold {self.threshold:.4g} at level {self.alpha:g}; a "
            f"distance >= {self.detectable_distance:.4g} is found with probability >= "
            f"{self.power:g}; {self.samples} releases each)."
        )


def kolmogorov_distance(x: np.ndarray, y: np.ndarray) -> float:
    """``sup_t |F_x(t) - F_y(t)|`` of two samples (exact, ties handled).

    Args:
        x: one sample (1-d).
        y: the other.

    Returns:
        The two-sample Kolmogorov–Smirnov distance.
    """
    x, y = np.sort(np.asarray(x, np.float64)), np.sort(np.asarray(y, np.float64))
    points = np.concatenate([x, y])
    f_x = np.searchsorted(x, points, side="right") / x.size
    f_y = np.searchsorted(y, points, side="right") / y.size
    return float(np.max(np.abs(f_x - f_y)))


def _dkw(level: float, n: int) -> float:
    """Massart's DKW radius: ``P(sup |F_n - F| > r) <= level``."""
    return math.sqrt(math.log(2.0 / level) / (2.0 * n))


def check_parity(
    sampler: Callable,
    reference: Mechanism,
    data,
    *,
    samples: int = 100_000,
    alpha: float = 0.05,
    power: float = 0.95,
    seed: int = 0,
) -> ParityResult:
    """Test whether ``sampler``'s releases on ``data`` follow ``reference``'s model.

    Args:
        sampler: the implementation, ``sampler(data, n, key) -> (n, ...)`` releases.
        reference: the model it declares (:class:`~dpaudit.Mechanism`).
        data: the dataset.
        samples: releases drawn from each.
        alpha: the level.
        power: the power at which the detectable distance is stated.
        seed: seeds both draws (different keys).

    Returns:
        The :class:`ParityResult`.

    Raises:
        TypeError: if ``reference`` is not a Mechanism or ``sampler`` is not callable.
        ValueError: on a bad level, power or count, NaN releases, or releases whose
            shape differs from the model's.
    """
    if not isinstance(reference, Mechanism):
        raise TypeError(f"reference must be a dpaudit.Mechanism, got {type(reference).__name__}.")
    if not callable(sampler):
        raise TypeError("sampler must be a callable (data, n, key) -> releases.")
    for name, value in (("alpha", alpha), ("power", power)):
        if not (isinstance(value, float | int) and 0 < value < 1):
            raise ValueError(f"{name} must be in (0, 1), got {value!r}.")
    n = check_count("samples", samples)
    key_impl, key_model = jax.random.split(jax.random.key(int(seed)))
    impl = np.asarray(sampler(data, n, key_impl), dtype=np.float64).reshape(n, -1)
    model = np.asarray(reference.sample(data, key_model, n), dtype=np.float64).reshape(n, -1)
    if impl.shape != model.shape:
        raise ValueError(
            f"the implementation's releases have {impl.shape[1]} values each but the model's "
            f"have {model.shape[1]}; compare an implementation with the model of its release."
        )
    if np.isnan(impl).any():
        raise ValueError("the implementation returned NaN releases; fix it before the check.")
    d = impl.shape[1]
    distances = [kolmogorov_distance(impl[:, j], model[:, j]) for j in range(d)]
    worst = int(np.argmax(distances))
    threshold = 2 * _dkw(alpha / (2 * d), n)
    detectable = threshold + 2 * _dkw((1 - power) / 2, n)
    return ParityResult(
        verdict="mismatch" if distances[worst] > threshold else "consistent",
        distance=distances[worst],
        coordinate=worst,
        threshold=threshold,
        detectable_distance=detectable,
        alpha=float(alpha),
        power=float(power),
        samples=n,
    )
