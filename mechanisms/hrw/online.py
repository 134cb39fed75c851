r"""HRW's online release for a general kernel: each query conditioned on the answers given so far.

Mathematics: docs/papers/hrw.md#hrw-online-release; corrections:
docs/paper-errors.md#hrw-online-formulas.

**Recursion (HRW Sec. 5, corrected).** The release is ``f_D + s xi`` with
``xi ~ GP(0, K)`` the *unit* noise process and ``s`` the multiplier of
:func:`~mechanisms.hrw.release.hrw_noise_multiplier`. Query ``x_i`` is
answered by drawing ``xi(x_i)`` from its conditional law given the values
``xi(x_{1:i-1})`` already drawn (never given the released values, which
contain ``f_D``):

.. math::
    \xi(x_i)\mid\xi(x_{1:i-1}) \sim \mathcal N\big(V_i^\top C_i^{-1}\xi_{1:i-1},\;
    K(x_i,x_i) - V_i^\top C_i^{-1} V_i\big),\qquad C_i = K_{x_{1:i-1}},\ V_i = K(x_{1:i-1}, x_i),

and the answer is ``f_D(x_i) + s xi(x_i)``. The conditional variance is the
Schur complement of ``C_i`` in ``K_{x_{1:i}}``. dpaudit keeps ``C_i`` as its
Cholesky factor ``L_i`` and appends one row per query: with
``v = L_i^{-1} V_i`` the Schur complement is ``K(x_i, x_i) - v^T v``, the new
row is ``(v^T, sqrt(schur))``, and with the standard-normal innovations
``z_{1:i-1} = L_i^{-1} xi_{1:i-1}`` kept, the conditional mean is
``v^T z_{1:i-1}``. That is the block (Schur-complement) update of ``C_i^{-1}``
in factored form: ``O(i^2)`` per query, numerically stable where the explicit
inverse is not (nearby points of a smooth kernel make ``C_i`` ill-conditioned).

**Joint law.** The rows built by the recursion form a lower-triangular ``L``
with ``L L^T = K_{x_{1:m}}`` (the chain rule of Gaussian conditionals), so the
answers are ``f_D(x_{1:m}) + s L z`` with ``z ~ N(0, I_m)``: exactly HRW's
batch law ``N(f_D(x_{1:m}), s^2 K_{x_{1:m}})`` whatever the order of the
queries, and the batch guarantee (Prop. 3.3 / Cor. 3.5) covers every finite
set of answers. Queries chosen adaptively from earlier answers are covered
too: the answers are then evaluations of one path of ``f_D + s xi`` drawn
lazily, a post-processing of the full release. Unlike
:class:`~mechanisms.hrw.release.OnlineExponentialRelease` (the Ornstein–Uhlenbeck
special case, Markov in ``d = 1`` only), this works for any kernel and any
dimension.

**Degenerate queries.** A query whose Schur complement is at most
``DEGENERATE_RTOL * K(x, x)`` is (numerically) a linear function of the
earlier values: its answer is ``f_D(x) + s v^T z`` with no fresh noise, and it
does not enter the factor. A repeated query returns the earlier answer.

**Catalogue.** ``hrw-online-gp`` releases HRW's Gaussian KDE (Sec. 4.1) at a
public stream of query points through this recursion;
``faulty/hrw-online-unconditioned`` answers each query with fresh noise
``N(f_D(x_i), s^2 K(x_i, x_i))``, forgetting to condition: the answers are
independent and the Mahalanobis sensitivity of the query vector is no longer
bounded by the RKHS sensitivity (its ``KnownFlaw`` gives the true epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import scipy.linalg

import dpaudit
from dpaudit import Mechanism
from dpaudit.core.checks import check_count
from dpaudit.model.spaces import Kernel, Matern
from mechanisms.common import summary_release
from mechanisms.faulty import example_pair as faulty_example_pair
from mechanisms.faulty import register_pair
from mechanisms.faulty.calibration import gaussian_true_epsilon
from mechanisms.hrw.kde import gaussian_kde, gaussian_kde_kernel, gaussian_kde_sensitivity
from mechanisms.hrw.release import (
    check_points,
    check_positive_number,
    claim_reference,
    hrw_noise_multiplier,
    hrw_setting,
    kernel_matrix,
)

__all__ = [
    "DEGENERATE_RTOL",
    "OnlineGPRelease",
    "conditional_law",
    "example_pair",
    "gram",
    "hrw_online_gp",
    "hrw_online_unconditioned",
    "online_factor",
    "online_gp_release",
    "unconditioned_mu",
    "van_der_corput",
]

#: A Schur complement at most this fraction of ``K(x, x)`` is read as zero: the query is a
#: linear function of the earlier ones. 1e-12 sits a few orders above the float64 round-off
#: of ``K(x,x) - v^T v`` (about 1e-16 ``K(x,x)`` times the query count), so a genuine
#: conditional variance is never dropped and round-off never becomes noise.
DEGENERATE_RTOL = 1e-12


# Matérn closed forms of dpaudit.spaces.Matern in numpy: the online recursion meets a new shape
# at every query, where eager JAX would compile every operation again (seconds per query).
_MATERN_PROFILES = {
    0.5: lambda r: np.exp(-r),
    1.5: lambda r: (1.0 + math.sqrt(3.0) * r) * np.exp(-math.sqrt(3.0) * r),
    2.5: lambda r: (1.0 + math.sqrt(5.0) * r + 5.0 * r * r / 3.0) * np.exp(-math.sqrt(5.0) * r),
}


def gram(kernel: Kernel, x, y=None) -> np.ndarray:
    """Gram matrix ``[K(x_a, y_b)]`` in numpy (:func:`~mechanisms.hrw.release.kernel_matrix`,
    plus the half-integer Matérn kernels).

    Args:
        kernel: the kernel.
        x: ``(m, d)`` points.
        y: ``(k, d)`` points (default ``x``).

    Returns:
        ``(m, k)`` numpy array.
    """
    if isinstance(kernel, Matern) and float(kernel.nu) in _MATERN_PROFILES:
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        y = x if y is None else np.atleast_2d(np.asarray(y, dtype=np.float64))
        r = np.sqrt(np.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)) / kernel.lengthscale
        return kernel.variance * _MATERN_PROFILES[float(kernel.nu)](r)
    return kernel_matrix(kernel, x, y)


def van_der_corput(m: int) -> np.ndarray:
    """The first ``m`` points of the base-2 van der Corput sequence: 1/2, 1/4, 3/4, 1/8, ...

    A public query stream that refines ``[0, 1]`` the way an analyst zooming in would.

    Args:
        m: the number of points.

    Returns:
        ``(m,)`` points in ``(0, 1)``.
    """
    out = np.empty(m)
    for i in range(m):
        k, base, value = i + 1, 0.5, 0.0
        while k:
            value += base * (k & 1)
            k >>= 1
            base /= 2
        out[i] = value
    return out


def conditional_law(kernel: Kernel, past, x) -> tuple[np.ndarray, float]:
    r"""Weights and variance of ``xi(x) | xi(past)`` by direct Gaussian conditioning.

    ``weights = C^{-1} V`` and ``variance = K(x, x) - V^T C^{-1} V`` with
    ``C = K_past`` and ``V = K(past, x)`` (HRW Sec. 5 for the unit process),
    solved with a symmetric solver: the textbook formula, kept as the
    reference the recursion is tested against.

    Args:
        kernel: the noise kernel.
        past: ``(i, d)`` earlier query points (distinct).
        x: ``(d,)`` the new point.

    Returns:
        ``(weights (i,), variance)``.
    """
    past = np.atleast_2d(np.asarray(past, dtype=np.float64))
    x = np.asarray(x, dtype=np.float64).reshape(1, -1)
    kxx = float(gram(kernel, x)[0, 0])
    if past.shape[0] == 0:
        return np.zeros(0), kxx
    c = gram(kernel, past)
    v = gram(kernel, past, x)[:, 0]
    weights = scipy.linalg.solve(c, v, assume_a="pos")
    return weights, kxx - float(v @ weights)


class OnlineGPRelease:
    r"""Answer point queries of ``f_D + s xi``, ``xi ~ GP(0, K)``, one at a time (any kernel, any d).

    See the module docstring for the recursion. Answers are returned as numpy
    arrays of shape ``sample_shape`` (independent release paths drawn at once).

    Args:
        summary_fn: ``f_D`` as a function of points ``(k, d)`` -> ``(k,)``.
        kernel: the noise kernel ``K`` (the RKHS the sensitivity is measured in).
        sensitivity: the RKHS sensitivity ``Delta`` of ``f_D``.
        epsilon, delta, calibration: as :func:`~mechanisms.hrw.release.hrw_noise_multiplier`.
        dim: the dimension ``d`` of the domain ``[0, 1]^d``.
        key: a ``jax.random`` key; the ``i``-th fresh innovation uses ``fold_in(key, i)``.
        sample_shape: independent release paths drawn at once.

    Raises:
        ValueError / TypeError: invalid parameters (see ``hrw_noise_multiplier``).
    """

    def __init__(
        self,
        summary_fn: Callable,
        *,
        kernel: Kernel,
        sensitivity: float,
        epsilon: float,
        delta: float,
        key: jax.Array,
        dim: int = 1,
        calibration: str = "classical",
        sample_shape: tuple[int, ...] = (),
    ):
        if not callable(summary_fn):
            raise TypeError(f"summary_fn must be callable, got {type(summary_fn).__name__}.")
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a dpaudit.spaces.Kernel, got {type(kernel).__name__}.")
        self.summary_fn, self.kernel, self.dim = summary_fn, kernel, int(dim)
        self.scale = hrw_noise_multiplier(sensitivity, epsilon, delta, calibration)
        self.sample_shape = tuple(int(s) for s in sample_shape)
        self._key = key
        self._factor = np.zeros((0, 0))  # Cholesky factor of K over the factor points
        self._factor_points = np.zeros((0, self.dim))
        self._innovations = np.zeros((*self.sample_shape, 0))
        self._answered: dict[tuple, np.ndarray] = {}
        self.points: list[tuple[float, ...]] = []

    @property
    def factor(self) -> np.ndarray:
        """The lower-triangular factor ``L`` built so far (``L L^T = K`` of the factor points)."""
        return self._factor.copy()

    @property
    def innovations(self) -> np.ndarray:
        """The standard-normal innovations ``z`` drawn so far (``xi = L z`` at the factor points)."""
        return self._innovations.copy()

    def noise_at(self, x) -> np.ndarray:
        """The unit-process value ``xi(x)`` at a point already queried.

        Args:
            x: a queried point.

        Returns:
            ``xi(x)`` (shape ``sample_shape``).

        Raises:
            ValueError: ``x`` has not been queried.
        """
        key = tuple(np.asarray(check_points("query", np.reshape(x, (1, -1)), dim=self.dim))[0])
        if key not in self._answered:
            raise ValueError(f"{key} has not been queried.")
        return self._answered[key]

    def _extend(self, x: np.ndarray) -> np.ndarray:
        """Draw ``xi(x)`` given the factor points and, if not degenerate, append its row."""
        kxx = float(gram(self.kernel, x)[0, 0])
        i = self._factor.shape[0]
        if i:
            kv = gram(self.kernel, self._factor_points, x)[:, 0]
            v = scipy.linalg.solve_triangular(self._factor, kv, lower=True)
        else:
            v = np.zeros(0)
        schur = kxx - float(v @ v)
        mean = self._innovations @ v
        if schur <= DEGENERATE_RTOL * kxx:
            return mean
        root = math.sqrt(schur)
        z = np.asarray(jax.random.normal(jax.random.fold_in(self._key, i), self.sample_shape))
        factor = np.zeros((i + 1, i + 1))
        factor[:i, :i] = self._factor
        factor[i, :i], factor[i, i] = v, root
        self._factor = factor
        self._factor_points = np.vstack([self._factor_points, x])
        self._innovations = np.concatenate([self._innovations, z[..., None]], axis=-1)
        return mean + root * z

    def query(self, x) -> np.ndarray:
        """The release ``f_D(x) + s xi(x)`` at one point ``x`` of ``[0, 1]^d``.

        Args:
            x: the point (a number when ``d = 1``, else ``(d,)``).

        Returns:
            The released value (shape ``sample_shape``).

        Raises:
            ValueError: a point outside ``[0, 1]^d`` or of the wrong dimension.
        """
        point = np.asarray(check_points("query", np.reshape(x, (1, -1)), dim=self.dim))
        key = tuple(point[0])
        if key not in self._answered:
            self._answered[key] = self._extend(point)
            self.points.append(key)
        value = float(np.asarray(self.summary_fn(jnp.asarray(point)))[0])
        return value + self.scale * self._answered[key]


def online_gp_release(summary_fn: Callable, points, **options) -> np.ndarray:
    """Answer the queries ``points`` in the given order with :class:`OnlineGPRelease`.

    Args:
        summary_fn: ``f_D`` as a function of points ``(k, d)``.
        points: ``(m,)`` (``d = 1``) or ``(m, d)`` query points, in order.
        **options: the keyword arguments of :class:`OnlineGPRelease`.

    Returns:
        An array ``sample_shape + (m,)`` of answers, one per query.
    """
    release = OnlineGPRelease(summary_fn, **options)
    pts = np.asarray(points, dtype=np.float64).reshape(-1, release.dim)
    return np.stack([release.query(p) for p in pts], axis=-1)


def online_factor(kernel: Kernel, points) -> np.ndarray:
    """The factor ``L`` the online recursion builds on distinct, non-degenerate queries.

    Row ``i`` is ``(L_i^{-1} V_i, sqrt(K(x_i, x_i) - |L_i^{-1} V_i|^2))``: the answers are
    ``f_D + s L z`` with the innovations ``z`` (module docstring).

    Args:
        kernel: the noise kernel.
        points: ``(m, d)`` query points, in order.

    Returns:
        ``(m, m)`` lower-triangular factor.

    Raises:
        ValueError: a query whose Schur complement is (numerically) zero: a repeated or
            linearly dependent point adds no new coordinate to the release.
    """
    pts = np.asarray(points, dtype=np.float64)
    pts = pts[:, None] if pts.ndim == 1 else pts
    release = OnlineGPRelease(
        lambda p: jnp.zeros(p.shape[0]),
        kernel=kernel,
        sensitivity=1.0,
        epsilon=1.0,
        delta=0.5,
        key=jax.random.key(0),
        dim=pts.shape[1],
    )
    for i, p in enumerate(pts):
        release.query(p)
        if release.factor.shape[0] != i + 1:
            raise ValueError(
                f"query {i} ({p.tolist()}) repeats or is a linear function of the earlier "
                "queries for this kernel (Schur complement ~ 0); drop it or spread the queries."
            )
    return release.factor


# ------------------------------------------------------------------ catalogue entries

_ONLINE_EXAMPLE = {"epsilon": 1.0, "delta": 1e-3, "n": 20, "bandwidth": 0.1, "n_queries": 16}


def _queries(n_queries: int, dim: int) -> np.ndarray:
    """The public query stream: van der Corput points (per axis shifted when ``d > 1``)."""
    base = van_der_corput(n_queries)
    return np.stack([(base + k / (dim + 1.0)) % 1.0 for k in range(dim)], axis=1)


def _online_kde_parts(epsilon, delta, n, bandwidth, n_queries, dim, calibration):
    setting = hrw_setting(epsilon, delta, n, dim, 1, calibration, None)
    h = check_positive_number("bandwidth", bandwidth)
    n_queries = check_count("n_queries", n_queries)
    queries = _queries(n_queries, setting.dim)
    kernel = gaussian_kde_kernel(h, setting.dim)
    sensitivity = gaussian_kde_sensitivity(setting.n, h, setting.dim)
    s = hrw_noise_multiplier(sensitivity, epsilon, delta, calibration)
    q = jnp.asarray(queries)

    def summary(data):
        records = check_points("KDE data", data, dim=setting.dim, n=setting.n)
        return gaussian_kde(records, q, h)

    params = {
        "epsilon": epsilon,
        "delta": delta,
        "n": setting.n,
        "bandwidth": h,
        "n_queries": n_queries,
        "dim": setting.dim,
        "calibration": calibration,
        "queries": queries.tolist(),
        "sigma": s,
    }
    return setting, kernel, queries, sensitivity, s, summary, params


@dpaudit.register("hrw-online-gp", example=_ONLINE_EXAMPLE)
def hrw_online_gp(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 20,
    bandwidth: float = 0.1,
    n_queries: int = 16,
    dim: int = 1,
    calibration: str = "classical",
) -> Mechanism:
    r"""Gaussian KDE answered online at a public query stream, each answer conditioned on the earlier (HRW Sec. 5).

    The summary is HRW's Gaussian KDE (Sec. 4.1, RKHS sensitivity
    ``sqrt(2)/(n (2 pi h^2)^{d/2})``) at the first ``n_queries`` van der Corput
    points of ``[0, 1]^d``; the noise of query ``i`` is drawn from its
    conditional law given the noise already released (:class:`OnlineGPRelease`),
    so the answers are ``f_D + s L z`` with the factor ``L`` the recursion builds
    (:func:`online_factor`), and ``L L^T = K``: the batch law.

    Args:
        epsilon, delta: the claim (``epsilon <= 1`` for the classical calibration).
        n: public number of records in ``[0, 1]^d``.
        bandwidth: KDE bandwidth ``h`` (also the noise kernel's lengthscale).
        n_queries: the number of queries answered.
        dim: the dimension ``d``.
        calibration: ``"classical"`` or ``"analytic"``.

    Returns:
        The :class:`~dpaudit.Mechanism` (Gaussian release, RKHS claim).

    Raises:
        ValueError / TypeError: one sentence naming the bad argument.
    """
    setting, kernel, queries, sensitivity, s, summary, params = _online_kde_parts(
        epsilon, delta, n, bandwidth, n_queries, dim, calibration
    )
    scale_tril = jnp.asarray(s * online_factor(kernel, queries))
    gram_matrix = gram(kernel, queries)

    def mahalanobis(h):
        return jnp.sqrt(jnp.sum(h * jnp.linalg.solve(jnp.asarray(gram_matrix), h.T).T, axis=-1))

    return summary_release(
        "hrw-online-gp",
        summary,
        lambda loc: dist.MultivariateNormal(loc, scale_tril=scale_tril),
        epsilon=setting.epsilon,
        delta=setting.delta,
        sensitivity=sensitivity,
        sensitivity_norm="rkhs",
        reference=claim_reference("Sec. 5 (online release) and Sec. 4.1", calibration),
        difference_norm=mahalanobis,
        params=params,
        description=(
            f"Gaussian KDE (h={params['bandwidth']:g}) of n={setting.n} records in [0,1]^{dim}, "
            f"answered online at {n_queries} van der Corput queries, each noise value drawn "
            f"conditionally on the earlier ones (Schur-complement recursion), s = {s:.4g}."
        ),
    )


def unconditioned_mu(n: int, bandwidth: float, queries: np.ndarray, s: float):
    """Worst pair for the unconditioned release: ``max ||Delta f(q)||_2 / (s sqrt(K(q,q)))``.

    One replaced record moves from ``a`` to ``b`` in ``[0, 1]`` (``d = 1``): the
    query-vector difference is ``(g(q - a) - g(q - b)) / (n sqrt(2 pi) h)`` with
    ``g`` the Gaussian bump, and the noise is independent with variance ``s^2``
    (``K(q, q) = 1``). Maximised over a 401 x 401 grid of ``(a, b)`` and refined
    with L-BFGS-B from the best grid pair (the refinement can only increase it).

    Args:
        n: the number of records.
        bandwidth: ``h``.
        queries: ``(m, 1)`` query points.
        s: the noise multiplier.

    Returns:
        ``(mu, a, b)``.
    """
    import scipy.optimize  # on use: loading the catalogue does not need it

    q = np.asarray(queries, dtype=np.float64)[:, 0]
    c = 1.0 / (n * math.sqrt(2 * math.pi) * bandwidth * s)

    def norm(a, b):
        diff = np.exp(-((q - a) ** 2) / (2 * bandwidth**2)) - np.exp(
            -((q - b) ** 2) / (2 * bandwidth**2)
        )
        return c * np.sqrt(np.sum(diff * diff, axis=-1))

    grid = np.linspace(0.0, 1.0, 401)
    a, b = np.meshgrid(grid, grid, indexing="ij")
    values = norm(a[..., None], b[..., None])
    i, j = np.unravel_index(np.argmax(values), values.shape)
    best = scipy.optimize.minimize(
        lambda p: -norm(p[0], p[1]), x0=[grid[i], grid[j]], bounds=[(0, 1), (0, 1)]
    )
    if -best.fun > values[i, j]:
        return float(-best.fun), float(best.x[0]), float(best.x[1])
    return float(values[i, j]), float(grid[i]), float(grid[j])


@dpaudit.register("faulty/hrw-online-unconditioned", example=_ONLINE_EXAMPLE, faulty=True)
def hrw_online_unconditioned(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 20,
    bandwidth: float = 0.1,
    n_queries: int = 16,
) -> Mechanism:
    """Online KDE answers with fresh noise N(f_D(x_i), s^2 K(x_i, x_i)) per query: forgets to condition.

    Same summary, queries and multiplier as ``hrw-online-gp`` (``d = 1``), but
    each answer gets independent noise: the answers are no longer one GP path,
    and the Mahalanobis sensitivity of the query vector (independent noise) is
    ``||Delta f(q)||_2 / s``, not bounded by the RKHS sensitivity.

    Args:
        epsilon, delta, n, bandwidth, n_queries: as :func:`hrw_online_gp`.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    setting, kernel, queries, sensitivity, s, summary, params = _online_kde_parts(
        epsilon, delta, n, bandwidth, n_queries, 1, "classical"
    )
    mu, a, b = unconditioned_mu(setting.n, params["bandwidth"], queries, s)
    scale_tril = jnp.asarray(s * np.diag(np.sqrt(np.diag(gram(kernel, queries)))))
    return summary_release(
        "faulty/hrw-online-unconditioned",
        summary,
        lambda loc: dist.MultivariateNormal(loc, scale_tril=scale_tril),
        epsilon=setting.epsilon,
        delta=setting.delta,
        sensitivity=sensitivity,
        sensitivity_norm="rkhs",
        reference="Hall, Rinaldo & Wasserman 2013, Sec. 5, without the conditioning",
        difference_norm=lambda h: jnp.sqrt(jnp.sum(h * h, axis=-1)),
        params={**params, "mu": mu, "worst_records": [a, b]},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "each answer has independent noise s^2 K(x, x) instead of the conditional law: "
                f"the query vector is a Gaussian mechanism with Delta/sigma = {mu:.4g} (worst "
                f"record moving {a:.3g} -> {b:.3g}) instead of at most {sensitivity / s:.4g}."
            ),
            true_epsilon=gaussian_true_epsilon(mu, setting.delta),
            true_delta=setting.delta,
            visible_on=f"one record moved from {a:.4g} to {b:.4g}.",
        ),
    )


def _online_pair(name: str, seed: int = 0):
    mech = dpaudit.build(name)
    rng = np.random.default_rng(seed)
    d = rng.uniform(0.0, 1.0, size=(mech.params["n"], mech.params["dim"]))
    d_prime = d.copy()
    if "worst_records" in mech.params:
        d[0, 0], d_prime[0, 0] = mech.params["worst_records"]
    else:
        d[0], d_prime[0] = 0.0, 1.0
    return d, d_prime


@register_pair("faulty/hrw-online-unconditioned")
def _unconditioned_pair():
    return _online_pair("faulty/hrw-online-unconditioned")


def example_pair(name: str, seed: int = 0):
    """The documented neighbouring pair of an entry of this module (``generator = "example"``).

    Args:
        name: ``"hrw-online-gp"`` or ``"faulty/hrw-online-unconditioned"``.
        seed: the seed of the ``n - 1`` shared uniform records.

    Returns:
        ``(D, D')``: record 0 at the worst pair (faulty) or moved from 0 to 1.

    Raises:
        ValueError: another name.
    """
    if name == "faulty/hrw-online-unconditioned" and seed == 0:
        return faulty_example_pair(name)
    if name not in ("hrw-online-gp", "faulty/hrw-online-unconditioned"):
        raise ValueError(f"no example pair for {name!r} in mechanisms.hrw.online.")
    return _online_pair(name, seed)
