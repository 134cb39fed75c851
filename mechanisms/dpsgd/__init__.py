r"""DP-SGD: noisy clipped-gradient descent for logistic regression (Abadi et al. 2016).

T steps of Poisson-subsampled, per-example-clipped, Gaussian-noised gradient sums
of a logistic regression on the Wisconsin breast-cancer data (scikit-learn's
``load_breast_cancer``: 569 records, 30 features, standardised with the data set's
own means and deviations, plus one extra feature that is 0 for every real record).
Step ``t`` releases

``r_t = sum_{i in B_t} clip_C(grad l(theta_t; z_i)) + N(0, s^2 I)``,  ``s = noise_multiplier C``,

with ``B_t`` a Poisson sample (each record with probability ``q``), and updates
``theta_{t+1} = theta_t - lr r_t / (q n)``; the release is the whole trajectory
``(r_1, ..., r_T)``. The claim is the exact (numerically conservative) accounting of
``T`` compositions of the Poisson-subsampled Gaussian mechanism with
``mu = C / s`` (:func:`dpaudit.accounting.subsampling.subsampled_accounting`) under add/remove
adjacency.

**White-box model on the worst-case pair.** The audited pair is ``D`` (the data)
and ``D' = D + z*`` with a *canary* ``z* = (x*, 1)``, ``x* = 4 C e_31`` along the extra
feature. The model marginalises the canary's batch membership exactly (per step a
two-component Gaussian mixture ``(1-q) N(g_t, s^2) + q N(g_t + c_t, s^2)``) and
conditions on the batch membership of every other record, drawn from a public seed
(data-independent randomness shared by ``D`` and ``D'``): by joint convexity of the
hockey-stick divergence a conditional pass stays sound, and the conditional law is
what the standard DP-SGD analysis bounds. The release law is adaptive (``theta_t``
depends on ``r_{<t}``) and its density is evaluated along the trajectory
(:class:`DPSGDTrajectory`). Given the past, each step's privacy loss is the
subsampled-Gaussian loss with ``mu_t = ||c_t|| / s``; the canary's clipped gradient
has norm exactly ``C`` while ``theta_31 < ln(3) / (4 C)``, which the small learning
rate keeps for all but a ``< 1e-12`` fraction of trajectories (bound in
:func:`canary_escape_probability`). So the loss law is the ``T``-fold composition and
the accounting is exact for this pair.

Faulty variants: ``faulty/dpsgd-noise-batch`` calibrates the noise to the expected
batch size instead of the clipping norm (``s = noise_multiplier C / (q n)``, a mean's
sensitivity applied to a sum) and ``faulty/dpsgd-ignores-steps`` claims the epsilon of
one step for all ``T``. Their true guarantees come from the same accounting.
"""

from __future__ import annotations

import functools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import scipy.special
from jax import lax
from numpyro.distributions import Distribution, constraints

import dpaudit
from dpaudit.accounting.composition import GaussianComponent
from dpaudit.accounting.subsampling import subsampled_accounting
from dpaudit.core.checks import check_count, check_delta, check_positive, is_concrete
from dpaudit.model.densities import law_jit
from mechanisms.faulty import register_pair

__all__ = [
    "CONFIGURATION",
    "DPSGDTrajectory",
    "breast_cancer_records",
    "breast_cancer_table",
    "canary",
    "canary_escape_probability",
    "clipped_gradient_sum",
    "clipped_gradients",
    "dpsgd_accounting",
    "example_pair",
]

# The extra feature that only the canary uses, and the canary's size along it: with
# ||x*|| = 4 C the clipped gradient (sigmoid(theta.x*) - 1) x* has norm >= C exactly while
# 4 C theta_31 <= ln 3, i.e. theta_31 <= 0.27 / C.
_CANARY_SCALE = 4.0
# Public seed of the batch membership of the records other than the canary.
_DEFAULT_SEED = 20161024


def breast_cancer_records(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` breast-cancer records, standardised, with the extra zero feature.

    The records are scikit-learn's (a development dependency: ``pip install dpaudit[dev]``),
    read from the CSV file it ships (:func:`breast_cancer_table`), so building a DP-SGD
    mechanism does not import scikit-learn (about 1 s CPU: scipy.stats, pandas, ...).

    Args:
        n: how many records (1..569).

    Returns:
        ``(X, y)``: ``(n, 31)`` float features and ``(n,)`` labels in ``{0, 1}``.

    Raises:
        ValueError: if scikit-learn is missing or ``n`` is out of range.
    """
    data, target = breast_cancer_table()
    if not 1 <= n <= data.shape[0]:
        raise ValueError(f"n must lie in [1, {data.shape[0]}], got {n!r}.")
    x = (data - data.mean(axis=0)) / data.std(axis=0)
    x = np.hstack([x[:n], np.zeros((n, 1))])
    return x, target[:n].astype(np.float64)


#: The data set's shape, as the first line of scikit-learn's ``breast_cancer.csv`` states it.
_BREAST_CANCER_SHAPE = (569, 30)


@functools.cache
def breast_cancer_table() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's breast-cancer data ``(data, target)``, as ``load_breast_cancer`` gives it.

    Read from ``sklearn/datasets/data/breast_cancer.csv`` (the file ``load_breast_cancer``
    parses: a header ``569,30,malignant,benign``, then 30 features and the label per line)
    without importing scikit-learn; any other layout falls back to ``load_breast_cancer``.
    The same decimal strings parsed to float64 give the same numbers bit for bit.

    Returns:
        ``(data, target)``: ``(569, 30)`` float64 features and ``(569,)`` integer labels
        (read-only copies are shared within the process).

    Raises:
        ValueError: if scikit-learn is not installed.
    """
    import importlib.util
    from pathlib import Path

    found = importlib.util.find_spec("sklearn")  # finds the package without importing it
    if found is None or found.origin is None:
        raise ValueError(
            "the DP-SGD example data set needs scikit-learn: pip install 'dpaudit[dev]'."
        )
    path = Path(found.origin).parent / "datasets" / "data" / "breast_cancer.csv"
    try:
        with path.open(encoding="utf-8") as csv_file:
            header = csv_file.readline().split(",")
            table = np.loadtxt(csv_file, delimiter=",", dtype=np.float64, ndmin=2)
        shape = (int(header[0]), int(header[1]))
    except (OSError, ValueError, IndexError):
        shape, table = None, None
    if shape != _BREAST_CANCER_SHAPE or table.shape != (shape[0], shape[1] + 1):
        from sklearn.datasets import load_breast_cancer  # another layout: scikit-learn's reader

        bunch = load_breast_cancer()
        data, target = np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target)
    else:
        data, target = table[:, :-1], table[:, -1].astype(int)
    data.setflags(write=False)
    target.setflags(write=False)
    return data, target


def canary(clip: float = 1.0, dim: int = 31) -> tuple[np.ndarray, float]:
    """The canary record ``(4 C e_last, 1)`` whose membership the white-box audit tests.

    Args:
        clip: the clipping norm ``C``.
        dim: the number of features (the canary uses the last one).

    Returns:
        ``(x*, y*)``.
    """
    x = np.zeros(dim)
    x[-1] = _CANARY_SCALE * clip
    return x, 1.0


def canary_escape_probability(steps, q, noise_std, clip, learning_rate, n) -> float:
    """Upper bound on the probability that the canary's clipped gradient ever falls below ``C``.

    Only the canary and the noise move ``theta_31``: after ``t`` steps
    ``theta_31 = lr/(q n) (C k_t - s S_t)`` with ``k_t <= t`` inclusions and ``S_t`` a sum of
    ``t`` standard normals, so by a union bound over steps
    ``P <= sum_t Phi_bar((0.27 q n / (lr C) - C t) / (s sqrt(t)))``.

    Args:
        steps, q, noise_std, clip, learning_rate, n: the mechanism's parameters.

    Returns:
        The bound.
    """
    threshold = math.log(3.0) / (_CANARY_SCALE * clip) * q * n / learning_rate
    t = np.arange(1, steps + 1, dtype=np.float64)
    z = (threshold - clip * t) / (noise_std * np.sqrt(t))
    return float(min(1.0, np.sum(scipy.special.ndtr(-z))))


def dpsgd_accounting(noise_multiplier: float, q: float, steps: int, *, lower: bool = True):
    """The accounting of ``steps`` Poisson-subsampled Gaussian steps with ``mu = 1/noise_multiplier``.

    The grid spacing is ``1e-4 max(1, mu)``: the loss range of one step grows like
    ``mu^2``, so a fixed relative resolution keeps large-``mu`` (faulty) configurations
    cheap; every spacing gives an upper curve.

    Args:
        noise_multiplier: ``s / C``.
        q: the sampling probability.
        steps: ``T``.
        lower: also compute the lower curve.

    Returns:
        An :class:`~dpaudit.accounting.profiles.ExactAccounting`.
    """
    mu = 1.0 / noise_multiplier
    return _subsampled_gaussian(mu, q, int(steps), 1e-4 * max(1.0, mu), lower)


@functools.lru_cache(maxsize=8)
def _subsampled_gaussian(mu: float, q: float, steps: int, discretization: float, lower: bool):
    """:func:`subsampled_accounting` of ``steps`` Poisson-subsampled Gaussian steps, computed
    once per process for each distinct argument tuple (a pure function of them; the record
    is frozen): a builder's claim, its known flaw and the audit's exact accounting ask for
    the same curves, and the catalogue and RDP specs of one configuration share them."""
    return subsampled_accounting(
        GaussianComponent(mu), q, steps, discretization=discretization, lower=lower
    )


@functools.lru_cache(maxsize=32)
def _epsilon_upper(noise_multiplier: float, q: float, steps: int, delta: float) -> float:
    """``dpsgd_accounting(noise_multiplier, q, steps, lower=False).epsilon_upper(delta)``,
    computed once per process for each distinct argument tuple."""
    return dpsgd_accounting(noise_multiplier, q, steps, lower=False).epsilon_upper(delta)


def clipped_gradients(theta, x, y, clip):
    """Per-example logistic-loss gradients ``(sigmoid(x.theta) - y) x``, clipped to norm ``C``."""
    grads = (jax.nn.sigmoid(x @ theta) - y)[..., None] * x
    norms = jnp.sqrt(jnp.sum(grads * grads, axis=-1, keepdims=True))
    return grads * jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-300))


def clipped_gradient_sum(theta, x, y, mask, clip):
    """``sum_i mask_i clip_C(grad l(theta; z_i))``: the clipped gradients summed, as matrix products.

    The logistic-loss gradient of record ``i`` is ``d_i x_i`` with ``d_i = sigmoid(x_i.theta) -
    y_i``, so its norm is ``|d_i| ||x_i||`` and the clipped sum is ``x^T w`` with ``w_i =
    mask_i d_i min(1, C / (|d_i| ||x_i||))``: two matrix-vector products instead of the
    ``(m, d)`` per-record gradients of :func:`clipped_gradients` (the same sum up to
    round-off; vmapped over trajectories, the products are matrix products).

    Args:
        theta: ``(d,)`` parameters.
        x: ``(m, d)`` features.
        y: ``(m,)`` labels.
        mask: ``(m,)`` batch membership weights (1/0).
        clip: the clipping norm ``C``.

    Returns:
        The ``(d,)`` sum.
    """
    residual = jax.nn.sigmoid(x @ theta) - y
    norms = jnp.abs(residual) * jnp.sqrt(jnp.sum(x * x, axis=-1))
    weights = mask * residual * jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-300))
    return weights @ x


#: The algorithm's configuration (compared by privacy_accounting); it and the scalars the
#: programs use are fields of the trajectory law (arrays: one program for every configuration).
CONFIGURATION = ("q", "clip", "noise_std", "learning_rate", "denominator")
_SCALARS = (*CONFIGURATION, "step_size", "minus_half_precision", "log_membership", "log_normaliser")


def _program_scalars(q, clip, noise_std, learning_rate, denominator, event) -> dict:
    """The law's scalar fields, computed on the host in double precision.

    Each derived scalar is the value the programs used when the constants were baked into
    them (the densities' normalisers were computed in Python; XLA rewrote ``lr r / (q n)``
    into ``r (lr (1 / (q n)))`` by folding the constants, and with ``lr`` and ``q n`` as
    arguments it would divide), so the programs with the constants as arguments round
    exactly as the constant ones did (measured; the noise ``s z`` rounds alike either way).
    """
    q, clip, noise_std = float(q), float(clip), float(noise_std)
    learning_rate, denominator = float(learning_rate), float(denominator)
    steps, dim = event
    inv = 0.5 / noise_std**2
    const = -0.5 * dim * math.log(2 * math.pi * noise_std**2)
    return {
        "q": q, "clip": clip, "noise_std": noise_std, "learning_rate": learning_rate,
        "denominator": denominator,
        "step_size": learning_rate * (1.0 / denominator),
        "minus_half_precision": -inv,
        "log_membership": np.array([math.log1p(-q), math.log(q)]),
        "log_normaliser": steps * const,
    }  # fmt: skip


class DPSGDTrajectory(Distribution):
    """The law of a DP-SGD trajectory ``(r_1, ..., r_T)`` given the other records' batches.

    The algorithm's constants are arrays among the law's fields, never constants baked into
    a program: every configuration of one shape (``T``, records, features) shares the
    compiled draws and densities. The scalars the programs use are computed here, on the
    host as the constant programs used them (``lr (1 / (q n))`` of the update as XLA folded
    it, the densities' normalisers), so the draws and densities are bit for bit those of the
    constant programs.

    Args:
        x, y: ``(m, d)`` features and ``(m,)`` labels of the records.
        masks: ``(T, m)`` batch membership (1/0) of every record except the target.
        target_x, target_y: the record whose membership is marginalised.
        target_in: 1.0 when the target is in the data set, else 0.0.
        q, clip, noise_std, learning_rate, denominator: the algorithm's constants
            (``denominator = q n``), Python numbers.
    """

    arg_constraints = {}
    support = constraints.real_vector
    pytree_data_fields = ("x", "y", "masks", "target_x", "target_y", "target_in", *_SCALARS)

    def __init__(self, x, y, masks, target_x, target_y, target_in, *, q, clip, noise_std,
                 learning_rate, denominator, validate_args=None):  # fmt: skip
        self.x, self.y = jnp.asarray(x, jnp.float64), jnp.asarray(y, jnp.float64)
        self.masks = jnp.asarray(masks, jnp.float64)
        self.target_x = jnp.asarray(target_x, jnp.float64)
        self.target_y = jnp.asarray(target_y, jnp.float64)
        self.target_in = jnp.asarray(target_in, jnp.float64)
        event = (self.masks.shape[0], self.x.shape[-1])
        scalars = _program_scalars(q, clip, noise_std, learning_rate, denominator, event)
        for name, value in scalars.items():
            setattr(self, name, jnp.asarray(value, jnp.float64))
        super().__init__(batch_shape=(), event_shape=event, validate_args=validate_args)

    def _means(self, theta, mask):
        """``g_t`` (the other records' clipped gradient sum) and ``c_t`` (the target's)."""
        # the batch's sum as two matrix products (the per-record gradients, an (m, d) array
        # per trajectory and step, made the draws and densities 4-6x slower)
        g = clipped_gradient_sum(theta, self.x, self.y, mask, self.clip)
        c = clipped_gradients(theta, self.target_x, self.target_y, self.clip)
        return g, c * self.target_in

    def _next(self, theta, release):
        # XLA folded lr * r / (q n) with constant lr and q n into r * (lr * (1 / (q n)))
        return theta - release * self.step_size

    def sample(self, key, sample_shape=()):
        """Trajectories, drawn by running the algorithm.

        Args:
            key, sample_shape: as :meth:`numpyro.distributions.Distribution.sample`.

        Returns:
            ``sample_shape + (T, d)`` releases.
        """
        return _sample_trajectories(self, key, tuple(sample_shape))

    def _sample_one(self, key):
        steps, dim = self.event_shape
        k_noise, k_in = jax.random.split(key)
        noise = self.noise_std * jax.random.normal(k_noise, (steps, dim))
        included = jax.random.bernoulli(k_in, self.q, (steps,)).astype(jnp.float64)

        def step(theta, inputs):
            mask, z, b = inputs
            g, c = self._means(theta, mask)
            release = g + b * c + z
            return self._next(theta, release), release

        _, releases = lax.scan(step, jnp.zeros(dim), (self.masks, noise, included))
        return releases

    def log_prob(self, value):
        """Log density of trajectories (the chain rule along the trajectory).

        Args:
            value: releases with shape ``(..., T, d)``.

        Returns:
            The log densities, shape ``value.shape[:-2]``.
        """
        value = jnp.asarray(value, dtype=jnp.float64)
        if not any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(self)):
            if not isinstance(value, jax.core.Tracer):
                # evaluated eagerly (the plan's check that a model's randomness is traced
                # compares two traces' densities): one compiled program per shape, where the
                # eager scan over a new closure compiled anew in every audit
                return _log_prob_trajectories(self, value)
        return self._log_prob_all(value)

    def _log_prob_all(self, value):
        batch = value.shape[:-2]
        flat = value.reshape((-1, *self.event_shape))
        return jax.vmap(self._log_prob_one)(flat).reshape(batch)

    def _log_prob_one(self, releases):
        dim = self.event_shape[1]
        minus_inv = self.minus_half_precision

        def step(theta, inputs):
            mask, release = inputs
            g, c = self._means(theta, mask)
            resid = release - g
            out = minus_inv * jnp.sum(resid * resid)
            inside = minus_inv * jnp.sum((resid - c) ** 2)
            mixed = jax.nn.logsumexp(self.log_membership + jnp.stack([out, inside]))
            return self._next(theta, release), jnp.where(self.target_in > 0, mixed, out)

        _, terms = lax.scan(step, jnp.zeros(dim), (self.masks, releases))
        return jnp.sum(terms) + self.log_normaliser

    def privacy_accounting(self, other, *, discretization: float = 1e-4):
        """Exact accounting of the pair (this law, ``other``) when they differ by the target.

        Args:
            other: the law on the neighbouring data set.
            discretization: grid spacing of the PLDs (times ``max(1, mu)``, as in
                :func:`dpsgd_accounting`).

        Returns:
            The :class:`~dpaudit.accounting.profiles.ExactAccounting` of ``T`` subsampled Gaussian
            steps with ``mu = C / s`` (both orders), or ``None`` when the two laws are not
            "with and without the target" of one configuration.
        """
        if type(other) is not DPSGDTrajectory or self.event_shape != other.event_shape:
            return None
        fields = (*CONFIGURATION, "target_in")
        if not all(is_concrete(getattr(law, k)) for law in (self, other) for k in fields):
            return None
        mine, theirs = ({k: float(getattr(law, k)) for k in fields} for law in (self, other))
        if any(mine[k] != theirs[k] for k in CONFIGURATION):
            return None
        if mine["target_in"] + theirs["target_in"] != 1.0:
            return None
        mu = mine["clip"] / mine["noise_std"]
        return _subsampled_gaussian(
            mu, mine["q"], int(self.event_shape[0]), discretization * max(1.0, mu), True
        )


@partial(law_jit, static_argnames=("sample_shape",))
def _sample_trajectories(law: DPSGDTrajectory, key, sample_shape: tuple):
    # One compiled program per law shape and sample shape, the law a jit argument: run
    # eagerly, the vmapped scan compiled anew on every call (the model's trace draws a
    # trajectory each time the release law is read: dpsgd-logistic-rdp compiled it 10 times).
    # law_jit, not jax.jit: numpyro flattens the law's fields in the order of a Python set
    # (per-process string hashing), so with jax.jit this program - and every program that
    # calls it (the pre-audit draw, the audit's draws and loss steps) - had a new
    # persistent-cache key in each process and a filled cache missed them all.
    keys = jax.random.split(key, math.prod(sample_shape) or 1)
    draws = jax.vmap(law._sample_one)(keys)
    return draws.reshape(sample_shape + law.event_shape)


@law_jit
def _log_prob_trajectories(law: DPSGDTrajectory, value):
    return law._log_prob_all(value)


def _check(steps, q, noise_multiplier, clip, learning_rate, n, delta):
    check_count("steps", steps)
    check_count("n", n)
    if isinstance(q, bool) or not isinstance(q, int | float) or not 0 < q <= 1:
        raise ValueError(f"the sampling probability q must lie in (0, 1], got {q!r}.")
    check_positive("noise_multiplier", noise_multiplier)
    check_positive("clip", clip)
    check_positive("learning_rate", learning_rate)
    check_delta(delta)


def _model(n, steps, q, clip, noise_std, learning_rate, seed):
    """The numpyro model: records -> the trajectory law given the other records' batches."""
    uniforms = np.random.default_rng(seed).uniform(size=(steps, n))
    target_x, target_y = canary(clip)

    def model(data):
        x, y = (jnp.asarray(a, dtype=jnp.float64) for a in data)
        if x.ndim != 2 or x.shape[1] != target_x.size or y.shape != x.shape[:1]:
            raise ValueError(
                f"DP-SGD records are (X, y) with X of shape (m, {target_x.size}) and y of "
                f"shape (m,), got {x.shape} and {y.shape}."
            )
        is_target = jnp.all(x == target_x, axis=1) & (y == target_y)
        if is_concrete(is_target) and (
            int(np.sum(np.asarray(is_target))) > 1 or int(np.sum(~np.asarray(is_target))) > n
        ):
            raise ValueError(
                f"the mechanism was built for at most n = {n} records plus the canary once."
            )
        # Both data sets padded to n + 1 records (zero rows, never in a batch): the laws on D
        # and D + canary then have the same array shapes, so both directions of the audit
        # share one compiled loss step instead of compiling one each.
        pad = max(0, n + 1 - x.shape[0])
        real = jnp.arange(x.shape[0] + pad) < x.shape[0]
        x = jnp.concatenate([x, jnp.zeros((pad, x.shape[1]))])
        y = jnp.concatenate([y, jnp.zeros(pad)])
        is_target = jnp.concatenate([is_target, jnp.zeros(pad, bool)])
        rank = jnp.clip(jnp.cumsum(~is_target) - 1, 0, n - 1)
        masks = (jnp.asarray(uniforms)[:, rank] < q) & ~is_target & real
        numpyro.sample(
            "release",
            DPSGDTrajectory(
                x, y, masks, target_x, target_y, jnp.any(is_target).astype(jnp.float64),
                q=q, clip=clip, noise_std=noise_std, learning_rate=learning_rate,
                denominator=q * n,
            ),
        )  # fmt: skip

    return model


def _mechanism(name, *, steps, q, noise_multiplier, clip, learning_rate, n, delta, noise_std,
               claim_steps, known_flaw=None):  # fmt: skip
    epsilon = _epsilon_upper(noise_multiplier, q, claim_steps, delta)
    return dpaudit.Mechanism(
        name=name,
        model=_model(n, steps, q, clip, noise_std, learning_rate, _DEFAULT_SEED),
        claim=dpaudit.Claim(
            epsilon=epsilon,
            delta=delta,
            adjacency="add-remove",
            sensitivity=clip,
            sensitivity_norm="l2",
            reference="Abadi et al. 2016 (DP-SGD); exact PLD accounting (dpaudit.subsampling)",
        ),
        params={
            "steps": steps,
            "q": q,
            "noise_multiplier": noise_multiplier,
            "clip": clip,
            "learning_rate": learning_rate,
            "n": n,
            "delta": delta,
            "noise_std": noise_std,
        },
        description=(
            "DP-SGD on logistic regression (breast cancer): T Poisson-subsampled, clipped, "
            "Gaussian-noised gradient sums; membership of a canary record audited."
        ),
        known_flaw=known_flaw,
    )


@dpaudit.register("dpsgd-logistic", example={"steps": 20, "q": 0.1, "n": 100})
def dpsgd_logistic(
    steps: int = 20,
    q: float = 0.1,
    noise_multiplier: float = 1.0,
    clip: float = 1.0,
    learning_rate: float = 0.05,
    n: int = 100,
    delta: float = 1e-5,
) -> dpaudit.Mechanism:
    """DP-SGD (logistic regression), claimed with the exact subsampled-Gaussian accounting.

    Args:
        steps: the number of steps ``T``.
        q: the Poisson sampling probability.
        noise_multiplier: ``s / C``.
        clip: the per-example clipping norm ``C``.
        learning_rate: the step size (the update divides the noisy sum by ``q n``).
        n: the public number of records (besides a possible canary).
        delta: the claimed delta; epsilon is the accounting's ``epsilon(delta)``.

    Returns:
        The :class:`~dpaudit.Mechanism`.

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    _check(steps, q, noise_multiplier, clip, learning_rate, n, delta)
    return _mechanism(
        "dpsgd-logistic", steps=steps, q=q, noise_multiplier=noise_multiplier, clip=clip,
        learning_rate=learning_rate, n=n, delta=delta, noise_std=noise_multiplier * clip,
        claim_steps=steps,
    )  # fmt: skip


_FAULTY_EXAMPLE = {"steps": 20, "q": 0.25, "noise_multiplier": 0.8, "n": 40}


@dpaudit.register("faulty/dpsgd-ignores-steps", example=_FAULTY_EXAMPLE, faulty=True)
def dpsgd_ignores_steps(steps: int = 20, q: float = 0.25, noise_multiplier: float = 0.8,
                        clip: float = 1.0, learning_rate: float = 0.05, n: int = 40,
                        delta: float = 1e-5) -> dpaudit.Mechanism:  # fmt: skip
    """DP-SGD whose accounting ignores the number of steps (claims one step's epsilon).

    Args:
        steps, q, noise_multiplier, clip, learning_rate, n, delta: as :func:`dpsgd_logistic`.

    Returns:
        The :class:`~dpaudit.Mechanism`, with its true guarantee in ``known_flaw``.

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    _check(steps, q, noise_multiplier, clip, learning_rate, n, delta)
    true_epsilon = _epsilon_upper(noise_multiplier, q, steps, delta)
    flaw = dpaudit.KnownFlaw(
        reason=(
            f"the privacy accountant composes 1 step instead of T = {steps}; the exact "
            f"T-step epsilon at delta = {delta:g} is {true_epsilon:.4g}."
        ),
        true_epsilon=true_epsilon,
        true_delta=delta,
        visible_on="the data set with and without the canary record.",
    )
    return _mechanism(
        "faulty/dpsgd-ignores-steps", steps=steps, q=q, noise_multiplier=noise_multiplier,
        clip=clip, learning_rate=learning_rate, n=n, delta=delta,
        noise_std=noise_multiplier * clip, claim_steps=1, known_flaw=flaw,
    )  # fmt: skip


@dpaudit.register("faulty/dpsgd-noise-batch", example=_FAULTY_EXAMPLE, faulty=True)
def dpsgd_noise_batch(steps: int = 20, q: float = 0.25, noise_multiplier: float = 0.8,
                      clip: float = 1.0, learning_rate: float = 0.05, n: int = 40,
                      delta: float = 1e-5) -> dpaudit.Mechanism:  # fmt: skip
    """DP-SGD with noise calibrated to the batch size: ``s = noise_multiplier C / (q n)``.

    Args:
        steps, q, noise_multiplier, clip, learning_rate, n, delta: as :func:`dpsgd_logistic`.

    Returns:
        The :class:`~dpaudit.Mechanism`, with its true guarantee in ``known_flaw``.

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    _check(steps, q, noise_multiplier, clip, learning_rate, n, delta)
    batch = q * n
    true_epsilon = _epsilon_upper(noise_multiplier / batch, q, steps, delta)
    flaw = dpaudit.KnownFlaw(
        reason=(
            f"the noise is noise_multiplier C / (q n) (the sensitivity of the batch mean) but "
            f"is added to the gradient sum, {batch:g} times too little; the exact epsilon at "
            f"delta = {delta:g} is {true_epsilon:.4g}."
        ),
        true_epsilon=true_epsilon,
        true_delta=delta,
        visible_on="the data set with and without the canary record.",
    )
    return _mechanism(
        "faulty/dpsgd-noise-batch", steps=steps, q=q, noise_multiplier=noise_multiplier,
        clip=clip, learning_rate=learning_rate, n=n, delta=delta,
        noise_std=noise_multiplier * clip / batch, claim_steps=steps, known_flaw=flaw,
    )  # fmt: skip


def example_pair(name: str, seed: int = 0):
    """``(D, D + canary)``: the first ``n`` breast-cancer records without and with the canary.

    Args:
        name: a DP-SGD catalogue name (its example ``n`` and ``clip`` are used).
        seed: unused (the data set is fixed; the batches come from the public seed).

    Returns:
        ``((X, y), (X', y'))``.
    """
    params = dpaudit.model.registry.entry(name).example
    n = int(params.get("n", 100))
    x, y = breast_cancer_records(n)
    cx, cy = canary(float(params.get("clip", 1.0)))
    return (x, y), (np.vstack([x, cx]), np.append(y, cy))


for _name in ("faulty/dpsgd-ignores-steps", "faulty/dpsgd-noise-batch"):
    register_pair(_name)(lambda _name=_name: example_pair(_name))
