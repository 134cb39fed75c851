r"""Hall, Rinaldo & Wasserman (2013), Sec. 4.1.2: a KDE whose bandwidth is chosen privately.

A data-driven bandwidth is a release too: its budget must be composed with the
KDE's. HRW's rule of thumb is

.. math::
    \hat h = \Big(\frac{4}{(d+1)\,n}\Big)^{1/(d+4)}\,\frac{\mathrm{IQR}}{1.34}

with the interquartile range made private (they point to Dwork & Lei's
propose-test-release IQR). dpaudit releases a private *scale* instead: the Gini
mean difference

.. math::
    G(D) = \frac{1}{n(n-1)}\sum_{i\ne j}|x_i-x_j|

has global replace-one sensitivity exactly ``2/n`` on ``[0, 1]`` (replacing
``x_1`` changes the ``2(n-1)`` ordered terms that contain it by at most
``|x_1 - x_1'| <= 1`` each; equality for ``D = (0, ..., 0)``, ``D' = (1, 0,
..., 0)``), so ``Lap(2/(n epsilon_scale))`` noise makes it
``epsilon_scale``-DP with no propose-test-release step. For Gaussian data
``E G = 2 sigma / sqrt(pi)`` while ``IQR / 1.34 ~ sigma``, so the rule reads
``h = (4/((d+1) n))^{1/(d+4)} (sqrt(pi)/2) G~``, clipped to a public interval
``[h_min, h_max]`` (``d = 1``; HRW print ``d + 1`` where Scott's normal
reference rule has ``d + 2``: a post-processing choice, privacy is unaffected).

The rule's bandwidth is rounded (in log scale) to a public geometric ladder of
``J`` bandwidths between ``h_min`` and ``h_max`` (post-processing of the scale
release; it lets the noise factors be computed once per ladder bandwidth
instead of once per release). The KDE is then released on a public grid
``g_1..g_m`` of ``[0, 1]`` (end points included) with HRW's Gaussian-process
noise *for the released bandwidth*:

.. math::
    \tilde f = f_{D,h}(g) + s_h\,(G_h(g) + \sqrt{\eta}\,W),\qquad
    s_h = c(\delta)\,\Delta_h/\epsilon_{\mathrm{kde}},\quad
    \Delta_h = \frac{\sqrt2}{n\sqrt{2\pi}\,h},

``G_h ~ GP(0, exp(-(x-y)^2/(2h^2)))`` and ``W`` independent standard normal
(a nugget ``eta = 1e-6``: data-independent extra noise, post-processing of
HRW's release, which keeps the ``m x m`` covariance ``K_h + eta I``
invertible for every ``h`` in ``[h_min, h_max]``). Given the released scale
the KDE release is ``(epsilon_kde, delta)``-DP (HRW Sec. 4.1, classical
calibration, ``epsilon_kde <= 1``). The site ``"kde"`` holds this release in
the whitening coordinates of its noise, ``W_h tilde f`` with ``W_h = (s_h
chol(K_h + eta I))^{-1}``, i.e. ``N(W_h f_{D,h}(g), I)``: a bijection fixed by
the released bandwidth, so the privacy is that of ``tilde f``
(:func:`whitened_to_curve` maps it back). By adaptive composition the pair is
``(epsilon_scale + epsilon_kde, delta)``-DP, which ``hrw-private-bandwidth-kde``
claims. The two sites are ``"scale"`` and ``"kde"``; the law of ``"kde"``
depends on the released ``"scale"``, so the audit evaluates the joint density
by the chain rule (docs/whole-trace.md).

Accounting of the audited pair (declared by the model, read through
:meth:`dpaudit.model.sites.JointRelease.privacy_accounting`): the scale site is a Laplace
pair with ``a = |G(D) - G(D')| / b``; given the scale, the KDE site is a Gaussian pair
with ``mu_j = ||W_j (f_{D,h_j} - f_{D',h_j})||`` at the ladder bandwidth ``h_j`` it
rounds to. By the dominating-pair rule for adaptive composition
(docs/whole-trace.md, "Adaptive sites with bounded conditional pairs") the joint
curve lies between Laplace(``a``) composed with the Gaussian of ``min_j mu_j`` and
with that of ``max_j mu_j``, the extremes over **all** ``J`` ladder bandwidths
(:func:`bandwidth_pair_parameters`, :func:`adaptive_pair_accounting`).

Exact guarantee (used for the faulty variant). For one pair the joint
hockey-stick divergence is
``delta(eps) = int p_D(s) delta_{mu(h(s))}(eps - L_scale(s)) ds`` (the Gaussian
curve of the KDE site at the shifted epsilon, averaged over the scale release).
Every pair has Laplace loss shift ``a <= epsilon_scale`` and Gaussian
``mu <= epsilon_kde / c(delta)`` (grid Mahalanobis norm <= RKHS norm), and the
curve grows with both, so the supremum over pairs is at most
:func:`laplace_gaussian_epsilon` ``(epsilon_scale, epsilon_kde / c(delta))``;
the pair ``(0, ..., 0)`` vs ``(1, 0, ..., 0)`` attains it up to the rare
releases whose bandwidth leaves ``h_min`` (measured in
``tests/mechanisms/test_private_bandwidth.py``).

Registered: ``hrw-private-bandwidth-kde`` (claims the composed budget) and
``faulty/hrw-bandwidth-budget-ignored`` (the same release claiming only the
KDE's budget: the bandwidth's epsilon is not counted).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

import dpaudit
from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, compose_accounting
from dpaudit.accounting.profiles import gaussian_curve
from dpaudit.core.checks import check_count, check_delta, check_epsilon
from dpaudit.model.noise import classical_gaussian_multiplier
from mechanisms.faulty import register_pair
from mechanisms.hrw.release import check_points, check_positive_number

__all__ = [
    "BANDWIDTH_NUGGET",
    "adaptive_pair_accounting",
    "bandwidth_ladder",
    "bandwidth_pair_parameters",
    "gini_mean_difference",
    "gini_sensitivity",
    "kde_grid_mahalanobis",
    "ladder_index",
    "laplace_gaussian_delta",
    "laplace_gaussian_epsilon",
    "rule_of_thumb_bandwidth",
    "whitened_to_curve",
]

#: Relative nugget ``eta`` of the KDE site's covariance ``s_h^2 (K_h + eta I)``: large
#: enough that the 16-point Gram matrix of the widest bandwidth (condition number
#: ~ 1e17 without it) factors in float64, small enough that the Mahalanobis shift of
#: the worst pair stays within 1e-5 of the RKHS bound (it can only lower it).
BANDWIDTH_NUGGET = 1e-6

#: Safety margins of the declared accounting's parameters. ``a`` is one subtraction and
#: one division of float64 values the model itself uses (a few ulps: 1e-12 relative is
#: far above). ``mu_j`` is the norm of the difference of two whitened means computed here
#: outside ``jit``; the audited density recomputes them under XLA, whose fused operation
#: order can move each ``|mean| <= ~1e3`` coordinate by ~1e-13: 1e-9 relative plus
#: 1e-12 absolute covers both, rounded outward (``mu_max`` up, ``mu_min`` down).
_A_RTOL = 1e-12
_MU_RTOL, _MU_ATOL = 1e-9, 1e-12

_EXAMPLE = {"epsilon_scale": 0.5, "epsilon_kde": 0.5, "delta": 1e-3, "n": 50, "grid_size": 16}
_FAULTY_EXAMPLE = {**_EXAMPLE, "epsilon_scale": 2.0}


def gini_mean_difference(data) -> jnp.ndarray:
    """``G = sum_{i != j} |x_i - x_j| / (n (n - 1))`` via the sorted sample (O(n log n)).

    ``sum_{i<j} (x_(j) - x_(i)) = sum_k (2k - n - 1) x_(k)`` for the order statistics
    ``x_(1) <= ... <= x_(n)`` (``k = 1..n``).

    Args:
        data: ``(n,)`` values, ``n >= 2``.

    Returns:
        The Gini mean difference (a JAX scalar; traceable).
    """
    x = jnp.sort(jnp.asarray(data, dtype=jnp.float64))
    n = x.shape[0]
    weights = 2.0 * jnp.arange(1, n + 1) - n - 1
    return 2.0 * jnp.sum(weights * x) / (n * (n - 1))


def gini_sensitivity(n: int) -> float:
    """Replace-one sensitivity ``2 / n`` of the Gini mean difference of ``n`` records in ``[0, 1]``.

    Args:
        n: the public number of records (``>= 2``).

    Returns:
        ``2 / n``.
    """
    n = check_count("n", n)
    if n < 2:
        raise ValueError(f"the Gini mean difference needs n >= 2 records, got n={n}.")
    return 2.0 / n


def rule_of_thumb_bandwidth(scale, n: int, h_min: float, h_max: float):
    """HRW's rule of thumb ``(4/(2n))^{1/5} sigma`` (``d = 1``), ``sigma = (sqrt(pi)/2) G``.

    Args:
        scale: the (released) Gini mean difference ``G``.
        n: the public number of records.
        h_min, h_max: the public interval the bandwidth is clipped to.

    Returns:
        ``clip((2/n)^{1/5} (sqrt(pi)/2) scale, h_min, h_max)`` (traceable).
    """
    factor = (4.0 / (2.0 * n)) ** 0.2 * math.sqrt(math.pi) / 2.0
    return jnp.clip(factor * scale, h_min, h_max)


def _gram_np(grid: np.ndarray, h: float) -> np.ndarray:
    return np.exp(-0.5 * ((grid[:, None] - grid[None, :]) / h) ** 2)


def bandwidth_ladder(h_min: float, h_max: float, n_bandwidths: int) -> np.ndarray:
    """The public bandwidths ``h_min (h_max/h_min)^{j/(J-1)}``, ``j = 0..J-1`` (geometric).

    Args:
        h_min, h_max: the interval.
        n_bandwidths: ``J`` (``1`` gives ``[h_min]``).

    Returns:
        ``(J,)`` bandwidths.
    """
    if n_bandwidths == 1:
        return np.array([h_min])
    return h_min * (h_max / h_min) ** (np.arange(n_bandwidths) / (n_bandwidths - 1))


def ladder_index(h, h_min: float, h_max: float, n_bandwidths: int):
    """Index of the ladder bandwidth nearest to ``h`` in log scale (``h`` in ``[h_min, h_max]``).

    Args:
        h: bandwidth(s), already clipped to ``[h_min, h_max]``.
        h_min, h_max, n_bandwidths: the ladder (:func:`bandwidth_ladder`).

    Returns:
        Integer index/indices (traceable).
    """
    if n_bandwidths == 1 or h_max == h_min:
        return jnp.zeros(jnp.shape(h), dtype=jnp.int32)
    t = jnp.log(h / h_min) / math.log(h_max / h_min) * (n_bandwidths - 1)
    return jnp.clip(jnp.round(t), 0, n_bandwidths - 1).astype(jnp.int32)


def _kde(x, grid, h):
    diff = grid[:, None] - x[None, :]
    return jnp.sum(jnp.exp(-0.5 * (diff / h) ** 2), axis=1) / (
        x.shape[0] * math.sqrt(2 * math.pi) * h
    )


def kde_grid_mahalanobis(a: float, b: float, h: float, grid_size: int) -> float:
    """``||(K_h + eta I)^{-1/2} (k_a - k_b)||_2`` on the grid: one record moved from ``a`` to ``b``.

    ``k_a = (exp(-(g_j - a)^2 / (2 h^2)))_j``; the KDE difference divided by its
    sensitivity ``Delta_h`` is ``(k_a - k_b) / sqrt(2)``, so the Gaussian ``mu`` of
    the KDE site is this value times ``epsilon_kde / (sqrt(2) c(delta))``. At most
    ``sqrt(2)`` (the RKHS bound); computed in numpy with a symmetric solve.

    Args:
        a, b: the replaced record's two values in ``[0, 1]``.
        h: the bandwidth.
        grid_size: the number of grid points (``linspace(0, 1, grid_size)``).

    Returns:
        The norm.
    """
    grid = np.linspace(0.0, 1.0, grid_size)
    gram = _gram_np(grid, h) + BANDWIDTH_NUGGET * np.eye(grid_size)
    diff = np.exp(-0.5 * ((grid - a) / h) ** 2) - np.exp(-0.5 * ((grid - b) / h) ** 2)
    return float(math.sqrt(max(float(diff @ np.linalg.solve(gram, diff)), 0.0)))


def whitened_to_curve(mechanism: dpaudit.Mechanism, release) -> tuple[np.ndarray, np.ndarray]:
    """The bandwidth and the released KDE grid values ``tilde f`` from a release vector.

    Args:
        mechanism: a mechanism of this module.
        release: ``(..., 1 + m)`` releases (``scale`` then the whitened ``kde`` site).

    Returns:
        ``(h, curve)``: ``(...,)`` ladder bandwidths and ``(..., m)`` grid values
        ``s_h chol(K_h + eta I) y`` of the whitened site ``y``.
    """
    p = mechanism.params
    x = np.asarray(release, dtype=np.float64)
    h = rule_of_thumb_bandwidth(x[..., 0], p["n"], p["h_min"], p["h_max"])
    j = np.asarray(ladder_index(h, p["h_min"], p["h_max"], p["n_bandwidths"]))
    bandwidths = np.asarray(p["bandwidths"])
    grid = np.linspace(0.0, 1.0, p["grid_size"])
    c = classical_gaussian_multiplier(p["delta"])
    out = np.empty((*x.shape[:-1], p["grid_size"]))
    for k, hk in enumerate(bandwidths):
        s = c * math.sqrt(2.0) / (p["n"] * math.sqrt(2 * math.pi) * hk * p["epsilon_kde"])
        chol = s * np.linalg.cholesky(_gram_np(grid, hk) + BANDWIDTH_NUGGET * np.eye(len(grid)))
        out[j == k] = x[..., 1:][j == k] @ chol.T
    return bandwidths[j], out


def laplace_gaussian_delta(epsilon: float, a: float, mu: float) -> float:
    r"""Exact ``delta(epsilon)`` of a Laplace release with loss bound ``a`` composed with a Gaussian ``mu``.

    The Laplace loss (``t ~ Lap(0, 1)``, shift ``a`` in scale units) is ``a`` for
    ``t <= 0`` (probability 1/2), ``a - 2t`` on ``(0, a)`` (density ``e^{-t}/2``)
    and ``-a`` for ``t >= a`` (probability ``e^{-a}/2``); the composition's curve is
    ``E[delta_mu(epsilon - L)]`` with the exact Gaussian curve ``delta_mu``
    (:func:`dpaudit.accounting.profiles.gaussian_curve`, any real argument). The middle
    part is integrated by adaptive quadrature (absolute error ~1e-13).

    Args:
        epsilon: the epsilon.
        a: the Laplace loss bound (``epsilon`` of the Laplace release), ``>= 0``.
        mu: the Gaussian parameter, ``>= 0``.

    Returns:
        ``delta(epsilon)``.
    """
    import scipy.integrate  # on use: loading the catalogue does not need it

    def gauss(e):
        return float(gaussian_curve(e, mu))

    ends = 0.5 * gauss(epsilon - a) + 0.5 * math.exp(-a) * gauss(epsilon + a)
    if a == 0:
        return ends
    middle, _ = scipy.integrate.quad(
        lambda t: 0.5 * math.exp(-t) * gauss(epsilon - a + 2 * t), 0.0, a, epsabs=1e-14
    )
    return ends + middle


def laplace_gaussian_epsilon(delta: float, a: float, mu: float) -> float:
    """Smallest epsilon with :func:`laplace_gaussian_delta` ``<= delta`` (brentq, rounded up).

    Args:
        delta: the target delta in ``(0, 1)``.
        a: the Laplace loss bound.
        mu: the Gaussian parameter.

    Returns:
        The epsilon (``0`` if ``delta(0) <= delta``).
    """
    import scipy.optimize  # on use: loading the catalogue does not need it

    check_delta(delta)

    def excess(e):
        return laplace_gaussian_delta(e, a, mu) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = a + 1.0
    while excess(hi) > 0:
        hi *= 2.0
    root = scipy.optimize.brentq(excess, 0.0, hi, xtol=1e-13, rtol=1e-13)
    return float(root + 1e-12)  # a bracket's width above the root: on the safe (large) side


def bandwidth_pair_parameters(mechanism: dpaudit.Mechanism, data, data_prime):
    """The Laplace shift ``a`` of the scale site and the KDE site's ``mu_j`` at every ladder bandwidth.

    ``a = |G(D) - G(D')| / b`` (the scale site is ``Lap(G(D), b)``); ``mu_j =
    ||W_j (f_{D,h_j}(g) - f_{D',h_j}(g))||_2``, the shift of the whitened KDE site given
    that the released scale rounds to ladder bandwidth ``h_j`` (its law is ``N(W_j
    f_{D,h_j}(g), I)``), computed for **all** ``J`` bandwidths with the model's own
    whitening table (every bandwidth has positive probability: the Laplace scale has
    full support). No safety margin is applied here (:func:`adaptive_pair_accounting`
    does).

    Args:
        mechanism: a mechanism of this module.
        data, data_prime: the two datasets (``(n,)`` or ``(n, 1)`` values in ``[0, 1]``).

    Returns:
        ``(a, mus)``: a float and a ``(J,)`` numpy array.
    """
    return mechanism.model.privacy_parameters(data, data_prime)


def adaptive_pair_accounting(a: float, mus, *, discretization: float = 1e-4):
    """Accounting of Laplace(``a``) followed by a Gaussian site whose ``mu`` depends on it.

    Dominating-pair rule for adaptive composition (docs/whole-trace.md): the joint
    curve is ``E_{s ~ P_D}[delta_{mu(s)}(epsilon - L_scale(s))]`` and the Gaussian curve
    ``delta_mu(e)`` is nondecreasing in ``mu`` at every real ``e``, so the curve lies
    between the non-adaptive compositions of ``Lap(a)`` with ``N(mu_min)`` and with
    ``N(mu_max)``. The upper curve is the numerical upper curve of the latter, the lower
    curve the numerical lower curve of the former (exact when every ``mu_j`` is equal).

    Args:
        a: the Laplace loss parameter of the first site (``>= 0``).
        mus: the Gaussian ``mu`` of the second site for every value the first can take
            (here: every ladder bandwidth).
        discretization: grid spacing of the numerical curves.

    Returns:
        An :class:`~dpaudit.accounting.profiles.ExactAccounting` (family ``"composed"``, or
        ``"laplace"`` when every ``mu`` is 0) whose ``mu`` is the rounded-up ``mu_max``.
    """
    mus = np.asarray(mus, dtype=np.float64)
    a_up, a_down = a * (1 + _A_RTOL), a * (1 - _A_RTOL)
    mu_max = float(np.max(mus)) * (1 + _MU_RTOL) + _MU_ATOL
    mu_min = max(float(np.min(mus)) * (1 - _MU_RTOL) - _MU_ATOL, 0.0)
    if float(np.max(mus)) == 0.0:
        mu_max = mu_min = 0.0  # the KDE means coincide at every bandwidth: exactly no loss
    upper = compose_accounting(
        [LaplaceComponent(a_up), GaussianComponent(mu_max)],
        discretization=discretization,
        lower=False,
    )
    lower = compose_accounting(
        [LaplaceComponent(a_down), GaussianComponent(mu_min)], discretization=discretization
    )
    return dataclasses.replace(upper, lower_pld=lower.lower_pld, reverse_lower_pld=None)


def _checked(epsilon_scale, epsilon_kde, delta, n, grid_size, h_min, h_max, n_bandwidths):
    check_epsilon(epsilon_scale)
    check_epsilon(epsilon_kde)
    if epsilon_kde > 1:
        raise ValueError(
            f"epsilon_kde = {epsilon_kde} > 1: HRW's classical calibration is proven for "
            "epsilon <= 1 only; lower epsilon_kde."
        )
    check_delta(delta)
    n = check_count("n", n)
    gini_sensitivity(n)
    grid_size = check_count("grid_size", grid_size)
    h_min, h_max = check_positive_number("h_min", h_min), check_positive_number("h_max", h_max)
    if h_min > h_max:
        raise ValueError(f"h_min = {h_min} must be at most h_max = {h_max}.")
    n_bandwidths = check_count("n_bandwidths", n_bandwidths)
    return n, grid_size, h_min, h_max, n_bandwidths


def _bandwidth_kde(name, epsilon_scale, epsilon_kde, delta, sizes, claim, flaw):
    n, grid_size, h_min, h_max, n_bandwidths = _checked(epsilon_scale, epsilon_kde, delta, *sizes)
    c = classical_gaussian_multiplier(delta)
    scale_b = gini_sensitivity(n) / epsilon_scale
    grid = np.linspace(0.0, 1.0, grid_size)
    bandwidths = bandwidth_ladder(h_min, h_max, n_bandwidths)
    noise = [
        c * math.sqrt(2.0) / (n * math.sqrt(2 * math.pi) * h * epsilon_kde) for h in bandwidths
    ]
    # whitening factors W_j = (s_j chol(K_j + eta I))^{-1}, one per bandwidth of the ladder:
    # the density then needs a gather and a matmul, no factorisation per release
    whiten = np.stack(
        [
            np.linalg.inv(
                s * np.linalg.cholesky(_gram_np(grid, h) + BANDWIDTH_NUGGET * np.eye(grid_size))
            )
            for h, s in zip(bandwidths, noise, strict=True)
        ]
    )
    table = (jnp.asarray(bandwidths), jnp.asarray(whiten), jnp.asarray(grid))
    # the ladder's ends as an array, a constant of every program (ladder_index branches on
    # them in Python); as floats they would be jit arguments (dpaudit.core.closures) and
    # the model, untraceable with them, would be a new program on every build
    ends = np.array([h_min, h_max])

    def model(data):
        x = check_points("KDE data", data, dim=1, n=n)[:, 0]
        scale = numpyro.sample("scale", dist.Laplace(gini_mean_difference(x), scale_b))
        low, high = ends
        j = ladder_index(rule_of_thumb_bandwidth(scale, n, low, high), low, high, n_bandwidths)
        h, w, g = table[0][j], table[1][j], table[2]
        numpyro.sample("kde", dist.Normal(w @ _kde(x, g, h), 1.0).to_event(1))

    def privacy_parameters(data, data_prime):
        x, xp = (check_points("KDE data", d, dim=1, n=n)[:, 0] for d in (data, data_prime))
        a = abs(float(gini_mean_difference(x)) - float(gini_mean_difference(xp))) / scale_b
        means = jax.vmap(lambda h, w: w @ _kde(x, table[2], h) - w @ _kde(xp, table[2], h))
        return a, np.linalg.norm(np.asarray(means(table[0], table[1])), axis=1)

    def privacy_accounting(data, data_prime, *, discretization=1e-4):
        # the hook of dpaudit.model.sites.JointRelease.privacy_accounting (adaptive sites)
        a, mus = privacy_parameters(data, data_prime)
        return adaptive_pair_accounting(a, mus, discretization=discretization)

    model.privacy_parameters = privacy_parameters
    model.privacy_accounting = privacy_accounting

    params = {
        "epsilon_scale": epsilon_scale,
        "epsilon_kde": epsilon_kde,
        "delta": delta,
        "n": n,
        "grid_size": grid_size,
        "h_min": h_min,
        "h_max": h_max,
        "n_bandwidths": n_bandwidths,
        "bandwidths": bandwidths.tolist(),
        "dim": 1,
        "scale_noise": scale_b,
        "mu_bound": epsilon_kde / c,
    }
    return dpaudit.Mechanism(
        name=name,
        model=model,
        claim=claim,
        params=params,
        release_site=("scale", "kde"),
        known_flaw=flaw,
        description=(
            f"Gaussian KDE of n={n} records in [0,1] on a {grid_size}-point grid, bandwidth by "
            f"HRW's rule of thumb from a private Gini scale (Laplace, epsilon {epsilon_scale:g}) "
            f"clipped to [{h_min:g}, {h_max:g}], then GP noise for that bandwidth (epsilon "
            f"{epsilon_kde:g}, delta {delta:g}); released sites: scale, kde."
        ),
    )


@dpaudit.register("hrw-private-bandwidth-kde", example=_EXAMPLE)
def hrw_private_bandwidth_kde(
    *,
    epsilon_scale: float = 0.5,
    epsilon_kde: float = 0.5,
    delta: float = 1e-3,
    n: int = 50,
    grid_size: int = 16,
    h_min: float = 0.05,
    h_max: float = 0.5,
    n_bandwidths: int = 16,
) -> dpaudit.Mechanism:
    """Private rule-of-thumb bandwidth, then the KDE released with GP noise for it (HRW Sec. 4.1.2).

    Two release sites, ``"scale"`` (the private Gini scale) and ``"kde"`` (the
    grid values); claimed at the composed budget ``(epsilon_scale + epsilon_kde,
    delta)``.

    Args:
        epsilon_scale: the scale release's epsilon (Laplace, pure).
        epsilon_kde: the KDE release's epsilon (classical calibration, ``<= 1``).
        delta: the KDE release's (and the claim's) delta.
        n: the public number of records in ``[0, 1]`` (``>= 2``).
        grid_size: the number of grid points (``linspace(0, 1, grid_size)``).
        h_min, h_max: the public interval of the bandwidth.
        n_bandwidths: the size ``J`` of the public bandwidth ladder
            (:func:`bandwidth_ladder`); the rule's bandwidth is rounded to it.

    Returns:
        The :class:`~dpaudit.Mechanism`.

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    claim = dpaudit.Claim(
        epsilon=epsilon_scale + epsilon_kde,
        delta=delta,
        reference="Hall, Rinaldo & Wasserman 2013, Sec. 4.1-4.1.2; adaptive basic composition",
    )
    return _bandwidth_kde(
        "hrw-private-bandwidth-kde",
        epsilon_scale, epsilon_kde, delta, (n, grid_size, h_min, h_max, n_bandwidths), claim, None,
    )  # fmt: skip


@dpaudit.register("faulty/hrw-bandwidth-budget-ignored", example=_FAULTY_EXAMPLE, faulty=True)
def hrw_bandwidth_budget_ignored(
    *,
    epsilon_scale: float = 2.0,
    epsilon_kde: float = 0.5,
    delta: float = 1e-3,
    n: int = 50,
    grid_size: int = 16,
    h_min: float = 0.05,
    h_max: float = 0.5,
    n_bandwidths: int = 16,
) -> dpaudit.Mechanism:
    """The private-bandwidth KDE claiming only the KDE's budget: the bandwidth's epsilon not counted.

    The default gives the scale the larger share (``epsilon_scale = 2``), as an
    author who believes the bandwidth is free might.

    Args:
        epsilon_scale, epsilon_kde, delta, n, grid_size, h_min, h_max, n_bandwidths: as
            :func:`hrw_private_bandwidth_kde`; the claim is ``(epsilon_kde, delta)``.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon`` is the exact epsilon at
        ``delta`` of Laplace(``epsilon_scale``) composed with the Gaussian
        ``mu = epsilon_kde / c(delta)`` (:func:`laplace_gaussian_epsilon`).
    """
    _checked(epsilon_scale, epsilon_kde, delta, n, grid_size, h_min, h_max, n_bandwidths)
    mu = epsilon_kde / classical_gaussian_multiplier(delta)
    flaw = dpaudit.KnownFlaw(
        reason=(
            f"the bandwidth is computed from a scale released with epsilon {epsilon_scale:g} "
            "that the claim does not count: the two releases compose to Laplace("
            f"{epsilon_scale:g}) with a Gaussian of mu = {mu:.4g}."
        ),
        true_epsilon=laplace_gaussian_epsilon(delta, epsilon_scale, mu),
        true_delta=delta,
        visible_on="one record moved from 0 to 1 with every other record at 0",
    )
    claim = dpaudit.Claim(
        epsilon=epsilon_kde, delta=delta, reference="the KDE's budget alone (bandwidth ignored)"
    )
    return _bandwidth_kde(
        "faulty/hrw-bandwidth-budget-ignored",
        epsilon_scale, epsilon_kde, delta, (n, grid_size, h_min, h_max, n_bandwidths), claim, flaw,
    )  # fmt: skip


def example_pair(name: str, seed: int = 0):
    """The worst pair: every record at 0 in ``D``; record 0 moved to 1 in ``D'``.

    It moves the Gini scale by its full sensitivity ``2/n`` and the KDE by its
    RKHS bound (0 and 1 are grid points, ``K_h(0, 1) ~ 0`` at ``h_min``).

    Args:
        name: ``"hrw-private-bandwidth-kde"`` or ``"faulty/hrw-bandwidth-budget-ignored"``.
        seed: unused (the pair is deterministic).

    Returns:
        ``(D, D')`` of the example parameters' size.

    Raises:
        ValueError: another name.
    """
    del seed
    if name not in ("hrw-private-bandwidth-kde", "faulty/hrw-bandwidth-budget-ignored"):
        raise ValueError(f"no example pair for {name!r} in mechanisms.hrw.bandwidth.")
    n = dpaudit.build(name).params["n"]
    d = np.zeros(n)
    d_prime = d.copy()
    d_prime[0] = 1.0
    return d, d_prime


@register_pair("faulty/hrw-bandwidth-budget-ignored")
def _ignored_pair():
    return example_pair("faulty/hrw-bandwidth-budget-ignored")
