r"""The test-power bound of differential privacy as a check (HRW Prop. 2.6).

If a mechanism is ``(epsilon, delta)``-DP, any test of ``H: the data is D``
against ``D'`` that rejects on the event ``A`` has power
``P_D'(A) <= e^epsilon P_D(A) + delta``; at level ``gamma`` (``P_D(A) <= gamma``)
the power is at most ``gamma e^epsilon + delta`` (Hall, Rinaldo & Wasserman
2013, Prop. 2.6, a restatement of the DP inequality on ``A``; see
docs/papers/hrw.md#hrw-test-power). A test with more power refutes the claim.

:func:`assert_test_power_bounded` estimates the size ``P_D(A)`` and the power
``P_D'(A)`` of a user's test by Monte Carlo and compares them with
one-sided Clopper–Pearson bounds: it fails only when the **lower** bound on the
power exceeds ``e^epsilon`` times the **upper** bound on the size plus
``delta``. The two bounds hold together with probability at least
``1 - failure_rate`` (``failure_rate / 2`` each, Bonferroni), so a correct
mechanism fails the check with probability at most ``failure_rate``, whatever
the test and the pair. The check cannot prove a claim (one event, one pair):
passing says only that this test did not refute it.

Example:
    >>> import jax.numpy as jnp
    >>> import dpaudit
    >>> from dpaudit.testing import assert_test_power_bounded
    >>> mech = dpaudit.build("laplace-mean", epsilon=1.0, dim=1)
    >>> n = mech.params["n"]
    >>> d, d_prime = jnp.zeros(n), jnp.zeros(n).at[0].set(1.0)
    >>> check = assert_test_power_bounded(mech, d, d_prime, lambda x: x[:, 0] > 0.1, samples=20_000)
    >>> check.power.estimate > check.size.estimate
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from dpaudit.core.checks import check_count, check_delta, check_epsilon
from dpaudit.estimation.bounds import clopper_pearson
from dpaudit.model.mechanism import Mechanism

__all__ = ["PowerCheck", "Proportion", "TestPowerViolation", "assert_test_power_bounded"]

#: Releases drawn per chunk: bounds the memory of one call of ``test`` (2^14 releases).
CHUNK = 1 << 14


class Proportion(NamedTuple):
    """A Monte Carlo proportion with one-sided Clopper–Pearson bounds.

    Attributes:
        count: events observed.
        samples: releases drawn.
        estimate: ``count / samples``.
        lower: lower bound (``failure_rate / 2``).
        upper: upper bound (``failure_rate / 2``).
    """

    count: int
    samples: int
    estimate: float
    lower: float
    upper: float


class PowerCheck(NamedTuple):
    """What :func:`assert_test_power_bounded` measured.

    Attributes:
        size: ``P_D(reject)`` (the test's size under ``H: D``).
        power: ``P_D'(reject)``.
        epsilon, delta: the claim checked.
        bound: ``e^epsilon size.upper + delta``, what a DP mechanism's power stays below.
        level: the stated level ``gamma``, or ``None``.
        level_bound: ``gamma e^epsilon + delta`` (HRW Prop. 2.6), or ``None``.
        failure_rate: the probability that a correct mechanism fails the check.
        refuted: ``power.lower > bound``.
    """

    size: Proportion
    power: Proportion
    epsilon: float
    delta: float
    bound: float
    level: float | None
    level_bound: float | None
    failure_rate: float
    refuted: bool


class TestPowerViolation(AssertionError):
    """A test whose certified power exceeds ``e^epsilon size + delta``: the claim is refuted.

    Attributes:
        check: the :class:`PowerCheck`.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, message: str, check: PowerCheck):
        super().__init__(message)
        self.check = check


def _sampler(mechanism) -> Callable:
    if isinstance(mechanism, Mechanism):
        return lambda data: mechanism.release_distribution(data).sample
    if callable(mechanism):
        return lambda data: lambda key, shape: mechanism(data, key, shape[0])
    raise TypeError(
        "mechanism must be a dpaudit.Mechanism or a sampler(data, key, n) -> n releases, got "
        f"{type(mechanism).__name__}."
    )


def _count_rejections(draw: Callable, test: Callable, key, samples: int) -> int:
    """Rejections of ``test`` among ``samples`` releases, drawn in chunks of :data:`CHUNK`."""
    count, done = 0, 0
    while done < samples:
        size = min(CHUNK, samples - done)
        key, sub = jax.random.split(key)
        reject = np.asarray(test(draw(sub, (size,))))
        if reject.shape != (size,) or reject.dtype != np.bool_:
            raise TypeError(
                f"test must map a batch of {size} releases to {size} booleans (reject H: D), got "
                f"an array of shape {reject.shape} and dtype {reject.dtype}."
            )
        count += int(reject.sum())
        done += size
    return count


def _proportion(count: int, samples: int, alpha: float) -> Proportion:
    lower, upper = clopper_pearson(count, samples, alpha)
    return Proportion(count, samples, count / samples, float(lower), float(upper))


def _check_arguments(mechanism, epsilon, delta, level, failure_rate):
    claim = getattr(mechanism, "claim", None)
    epsilon = claim.epsilon if epsilon is None and claim is not None else epsilon
    delta = claim.delta if delta is None and claim is not None else delta
    if epsilon is None:
        raise ValueError("give epsilon (and delta): a plain sampler carries no claim.")
    check_epsilon(epsilon)
    delta = 0.0 if delta is None else delta
    if delta != 0:
        check_delta(delta)
    if level is not None and not (isinstance(level, float | int) and 0 < level < 1):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}.")
    if not (isinstance(failure_rate, float) and 0 < failure_rate < 1):
        raise ValueError(f"failure_rate must be a float in (0, 1), got {failure_rate!r}.")
    return float(epsilon), float(delta)


def assert_test_power_bounded(
    mechanism: Mechanism | Callable,
    data: Any,
    data_prime: Any,
    test: Callable,
    *,
    level: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    samples: int = 100_000,
    failure_rate: float = 1e-6,
    seed: int = 0,
) -> PowerCheck:
    """Check that ``test`` (rejecting ``H: D``) has power at most ``e^epsilon size + delta`` on ``D'``.

    Args:
        mechanism: a :class:`~dpaudit.Mechanism` (its claim gives the default
            epsilon and delta) or a sampler ``sampler(data, key, n)`` returning ``n``
            releases stacked along the first axis.
        data: the dataset ``D`` of the null hypothesis.
        data_prime: the neighbour ``D'`` (the alternative).
        test: ``test(releases) -> bool array``: True where the test rejects ``H: D``
            (vectorised over the leading axis of a batch of releases).
        level: the level ``gamma`` the test was designed for (optional): the result
            then also reports ``gamma e^epsilon + delta``, and a test whose size is
            certified above ``gamma`` is refused.
        epsilon: the claimed epsilon (default: the mechanism's claim).
        delta: the claimed delta (default: the mechanism's claim, else 0).
        samples: releases drawn under each of ``D`` and ``D'``.
        failure_rate: the probability that the check fails on a mechanism meeting the
            claim (split over the two Clopper–Pearson bounds).
        seed: the seed of the Monte Carlo draws.

    Returns:
        The :class:`PowerCheck` (when the claim is not refuted).

    Raises:
        TestPowerViolation: the certified power exceeds ``e^epsilon size + delta``.
        ValueError / TypeError: invalid arguments, a test that does not return one
            boolean per release, or a test certified not to have level ``gamma``.
    """
    sampler = _sampler(mechanism)
    epsilon, delta = _check_arguments(mechanism, epsilon, delta, level, failure_rate)
    samples = check_count("samples", samples)
    alpha = failure_rate / 2.0
    key_d, key_dp = jax.random.split(jax.random.key(seed))
    size = _proportion(_count_rejections(sampler(data), test, key_d, samples), samples, alpha)
    power = _proportion(
        _count_rejections(sampler(data_prime), test, key_dp, samples), samples, alpha
    )
    if level is not None and size.lower > level:
        raise ValueError(
            f"the test is not of level {level}: its size under D is at least {size.lower:.4g} "
            f"(estimate {size.estimate:.4g}); raise its threshold or state its level."
        )
    bound = math.exp(epsilon) * size.upper + delta
    level_bound = None if level is None else math.exp(epsilon) * level + delta
    check = PowerCheck(
        size,
        power,
        epsilon,
        delta,
        bound,
        level,
        level_bound,
        failure_rate,
        power.lower > bound,
    )
    if check.refuted:
        raise TestPowerViolation(
            f"test power refutes ({epsilon:g}, {delta:g})-DP: power on D' is at least "
            f"{power.lower:.4g} (estimate {power.estimate:.4g}) but a DP mechanism allows at most "
            f"e^epsilon * size + delta = {bound:.4g} (size under D at most {size.upper:.4g}; "
            f"HRW Prop. 2.6); false-alarm probability at most {failure_rate:g}.",
            check,
        )
    return check
