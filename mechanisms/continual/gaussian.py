r"""BMR's continual counter, Gaussian version (Thm 0.A.1): rho-zCDP running counts.

Mathematics: docs/papers/bmr.md#bmr-continual-observation.

The release is that of :mod:`mechanisms.continual.counter` with Gaussian node
noise: ``hat s_t = s_t + sum_l eta_(ceil(t/2^l), l)``, ``eta ~ N(0, k z^2)``
i.i.d. on the ``2^(L+1) - 1`` tree nodes, ``k = ceil((L+1)/2)``. With the
``N x nodes`` ancestor matrix ``A`` the release is ``N(s, k z^2 A A^T)``.

**Privacy.** One changed step shifts a suffix ``d 1_[t0, N]``, ``|d| <= 1``.
The Mahalanobis norm of a shift ``h`` for the covariance ``A A^T`` is the
smallest Euclidean norm of a node explanation,
``||h||_{AA^T} = min{||nu||_2 : A nu = h}`` (``A`` has full row rank: every
leaf is its own node). BMR explain a suffix by at most ``k`` signed nodes, so
``||nu||_2^2 <= k`` and the Gaussian ``mu = ||h|| / (sqrt(k) z) <= 1/z``, i.e.
``rho = mu^2 / 2 <= 1/(2 z^2)``: the corollary's ``1/(2 z^2)``-zCDP. The exact
worst case ``max_t0 ||1_[t0, N]||_{AA^T}^2`` is computed by a linear solve
(:func:`continual_gaussian_worst_case`); it is below ``k`` for ``N >= 4``
(a least-norm explanation spreads the shift over more nodes with fractional
weights), so the claim holds with room.

Registered (claims ``rho``-zCDP; spec field ``zcdp_rho``):

* ``continual-counter-gaussian`` — ``z = 1/sqrt(2 rho)``, node standard
  deviation ``sqrt(k) z``.
* ``faulty/continual-gaussian-one-level`` — the textbook binary mechanism
  (the noisy node counts themselves) with node standard deviation ``z``: the
  noise of one tree level, as if one step moved one node count, while it moves
  its ``L + 1`` ancestors. True parameter ``(L + 1) rho`` (``KnownFlaw``
  states its epsilon at ``delta = 1e-5``, the zCDP claims' anchor). (The same
  mistake on the ancestor-sum release would be nearly harmless: the worst
  least-norm explanation has squared norm 1.0095 for ``N = 8``.)
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

import dpaudit
from dpaudit.accounting.profiles import gaussian_epsilon
from dpaudit.core.checks import check_count, check_positive
from dpaudit.model.claims import ZCDPClaim
from dpaudit.model.noise.linear_laplace import ancestor_matrix
from mechanisms.common import gaussian_release, summary_release
from mechanisms.continual.counter import check_stream, running_counts, suffix_shifts
from mechanisms.ecdf.tree import tree_depth
from mechanisms.faulty import register_pair
from mechanisms.notions import with_notion_claim

__all__ = [
    "FLAW_DELTA",
    "continual_counter_gaussian",
    "continual_gaussian_worst_case",
    "explanation_norms",
    "gaussian_one_level",
]

#: The delta at which the faulty entry states its true epsilon (the zCDP claims' anchor).
FLAW_DELTA = 1e-5

_EXAMPLE = {"rho": 0.5, "n_steps": 8}
_REFERENCE = "Barczewski, Mawass & Ramon, Thm 0.A.1 (continual observation, Gaussian version)"


def _check_steps(n_steps) -> tuple[int, int, np.ndarray]:
    n_steps = check_count("n_steps", n_steps)
    depth = tree_depth(n_steps)
    return n_steps, depth, ancestor_matrix(depth, n_steps)


def explanation_norms(n_steps: int, shifts) -> np.ndarray:
    """``||h||_{AA^T} = min{||nu||_2 : A nu = h}`` for each row ``h`` of ``shifts``.

    The least-norm explanation is ``nu = A^T (A A^T)^{-1} h``, so the norm is
    ``sqrt(h^T (A A^T)^{-1} h)`` (a Cholesky solve in numpy).

    Args:
        n_steps: ``N``.
        shifts: ``(m, N)`` running-count shifts (or one ``(N,)`` shift).

    Returns:
        ``(m,)`` norms (a scalar array for one shift).
    """
    _, _, a = _check_steps(n_steps)
    h = np.asarray(shifts, dtype=np.float64)
    chol = np.linalg.cholesky(a @ a.T)
    w = np.linalg.solve(chol, h.T)
    return np.sqrt(np.sum(w * w, axis=0))


def continual_gaussian_worst_case(n_steps: int) -> tuple[float, int]:
    """``max_t0 ||1_[t0, N]||_{AA^T}^2`` and a step attaining it.

    Args:
        n_steps: ``N``.

    Returns:
        ``(worst squared norm, t0)``.
    """
    norms = explanation_norms(n_steps, suffix_shifts(n_steps))
    t0 = int(np.argmax(norms))
    return float(norms[t0] ** 2), t0


def _gaussian_counter(name, rho, n_steps, node_sd, known_flaw=None):
    n_steps, depth, a = _check_steps(n_steps)
    k = math.ceil((depth + 1) / 2)
    scale_tril = jnp.asarray(node_sd * np.linalg.cholesky(a @ a.T))
    chol = np.linalg.cholesky(a @ a.T)

    def summary(data):
        return running_counts(check_stream(data, n_steps))

    def difference_norm(h):
        w = jnp.linalg.solve(jnp.asarray(chol), jnp.atleast_2d(h).T)
        return jnp.sqrt(jnp.sum(w * w, axis=0)).reshape(jnp.shape(h)[:-1])

    mech = summary_release(
        name,
        summary,
        lambda loc: dist.MultivariateNormal(loc, scale_tril=scale_tril),
        epsilon=1.0,  # placeholder: the claim is replaced by the zCDP claim below
        sensitivity=math.sqrt(k),
        sensitivity_norm="cameron-martin",
        reference=_REFERENCE,
        difference_norm=difference_norm,
        params={"rho": rho, "n_steps": n_steps, "depth": depth, "node_sd": node_sd},
        description=(
            f"Running counts of a length-{n_steps} stream in [0,1]; every step gets "
            f"the N(0, {node_sd:.4g}^2) noise of its L+1 = {depth + 1} tree ancestors "
            "(BMR Thm 0.A.1, Gaussian version)."
        ),
        known_flaw=known_flaw,
    )
    return with_notion_claim(mech, ZCDPClaim(rho=rho, reference=_REFERENCE))


@dpaudit.register("continual-counter-gaussian", example=_EXAMPLE)
def continual_counter_gaussian(rho: float = 0.5, n_steps: int = 16) -> dpaudit.Mechanism:
    """Running counts with Gaussian tree noise N(0, ceil((L+1)/2) z^2), claimed 1/(2 z^2)-zCDP.

    Args:
        rho: the claimed zCDP parameter (> 0); ``z = 1/sqrt(2 rho)``.
        n_steps: ``N``, the public stream length (values in ``[0, 1]``,
            replace-one adjacency on the time steps).

    Returns:
        The :class:`~dpaudit.Mechanism` (a ``MultivariateNormal`` release, zCDP claim).

    Raises:
        ValueError / TypeError: a non-positive ``rho`` or a bad ``n_steps``.
    """
    check_positive("rho", rho)
    n_steps, depth, _ = _check_steps(n_steps)
    z = 1.0 / math.sqrt(2.0 * rho)
    node_sd = math.sqrt(math.ceil((depth + 1) / 2)) * z
    return _gaussian_counter("continual-counter-gaussian", rho, n_steps, node_sd)


@dpaudit.register("faulty/continual-gaussian-one-level", example=_EXAMPLE, faulty=True)
def gaussian_one_level(rho: float = 0.5, n_steps: int = 16) -> dpaudit.Mechanism:
    """Textbook binary mechanism (noisy node counts) with one level's noise N(0, z^2), claimed rho-zCDP.

    The noise ``z = 1/sqrt(2 rho)`` is calibrated as if a step moved one node
    count by 1; it moves the counts of its ``L + 1`` ancestors, an ``l2`` shift
    of ``sqrt(L + 1)``.

    Args:
        rho: the claimed zCDP parameter; ``z = 1/sqrt(2 rho)``.
        n_steps: ``N``.

    Returns:
        The :class:`~dpaudit.Mechanism` (independent ``Normal`` node noise), its
        ``known_flaw`` stating the true epsilon at :data:`FLAW_DELTA`
        (``mu = sqrt(2 (L + 1) rho)``).
    """
    check_positive("rho", rho)
    n_steps, depth, a = _check_steps(n_steps)
    z = 1.0 / math.sqrt(2.0 * rho)
    true_rho = (depth + 1) * rho
    flaw = dpaudit.KnownFlaw(
        reason=(
            f"node noise N(0, z^2) is calibrated for one node count moving by 1, but one step "
            f"moves its L+1 = {depth + 1} ancestor counts: the release is {true_rho:g}-zCDP, "
            f"not {rho:g}-zCDP."
        ),
        true_epsilon=gaussian_epsilon(FLAW_DELTA, math.sqrt(2.0 * true_rho)),
        true_delta=FLAW_DELTA,
        visible_on="any single step changed from 0 to 1.",
    )
    matrix = jnp.asarray(a)

    def summary(data):
        return check_stream(data, n_steps) @ matrix

    mech = gaussian_release(
        "faulty/continual-gaussian-one-level",
        summary,
        z,
        epsilon=1.0,  # placeholder: the claim is replaced by the zCDP claim below
        sensitivity=1.0,
        reference="BMR Thm 0.A.1, Gaussian version, with one tree level's noise",
        params={"rho": rho, "n_steps": n_steps, "depth": depth, "node_sd": z},
        description=(
            f"Noisy node counts of a length-{n_steps} stream (textbook binary mechanism), "
            f"N(0, {z:.4g}^2) per node: one level's noise for an L+1 = {depth + 1} level tree."
        ),
        known_flaw=flaw,
    )
    return with_notion_claim(mech, ZCDPClaim(rho=rho, reference=mech.claim.reference))


def example_pair(name: str, seed: int = 0):
    """The documented pair: a 0/1 stream with the worst step changed from 0 to 1.

    Args:
        name: ``"continual-counter-gaussian"`` or ``"faulty/continual-gaussian-one-level"``.
        seed: the seed of the shared 0/1 steps.

    Returns:
        ``(D, D')``.

    Raises:
        ValueError: another name.
    """
    if name not in ("continual-counter-gaussian", "faulty/continual-gaussian-one-level"):
        raise ValueError(f"no example pair for {name!r} in mechanisms.continual.gaussian.")
    n_steps = dpaudit.build(name).params["n_steps"]
    t0 = continual_gaussian_worst_case(n_steps)[1] if name == "continual-counter-gaussian" else 0
    d = np.random.default_rng(seed).integers(0, 2, size=n_steps).astype(float)
    d_prime = d.copy()
    d[t0], d_prime[t0] = 0.0, 1.0
    return d, d_prime


@register_pair("faulty/continual-gaussian-one-level")
def _one_level_pair():
    return example_pair("faulty/continual-gaussian-one-level")
