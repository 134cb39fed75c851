r"""BMR's private ROC as the sequential composition of two ECDF releases at two sites.

The true-positive and the false-positive ECDF of ``(score, label)`` records
(lower score = positive; docs/papers/bmr.md) are each a hierarchical BMR release
with node noise on counts, released at the sites
``"true_positive"`` and ``"false_positive"``, each calibrated to the exact
worst-case node explanation of one ECDF, ``Delta_1 =``
:func:`mechanisms.ecdf.bmr_exact_sensitivity` (node scale ``Delta_1 / epsilon_i``;
BMR's lemma scale ``(L+1)/epsilon_i`` over-calibrates enough to hide the flaw
below on small grids). A replaced record may change its
label and so move both ECDFs: parallel composition does not apply, and the
budget is split, ``epsilon_i = epsilon / 2`` (sequential composition).

* ``composed-bmr-roc`` — ``epsilon / 2`` per ECDF, claimed ``epsilon``.
* ``faulty/composed-bmr-roc-parallel`` — ``epsilon`` per ECDF (parallel
  composition wrongly assumed), claimed ``epsilon``. True epsilon: the exact
  joint worst case ``Delta* epsilon / Delta_1`` (``4/3 epsilon`` for ``N = 8``) with ``Delta*`` from
  :func:`mechanisms.ecdf.bmr_roc_exact_sensitivity` (the two sites' node
  explanations add up, the sites being independent).

The audit sees the joint law of the two sites; its supremum is the sum of the
two linear-Laplace suprema (:meth:`dpaudit.model.sites.JointRelease.exact_sup_loss`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro

import dpaudit
from dpaudit.core.checks import check_count, check_epsilon
from dpaudit.model.noise.linear_laplace import AncestorLaplace
from mechanisms.ecdf import (
    bmr_exact_sensitivity,
    bmr_roc_exact_sensitivity,
    check_scores,
    roc_counts,
    tree_depth,
)
from mechanisms.faulty import register_pair

__all__ = ["example_pair", "two_site_roc"]

_SITES = ("true_positive", "false_positive")
_EXAMPLE = {"epsilon": 1.0, "n": 40, "n_points": 8}


def two_site_roc(name, epsilon_each, claim, n, n_points, known_flaw=None) -> dpaudit.Mechanism:
    """The two ECDFs of the ROC at two sites, each a BMR release at ``epsilon_each``.

    Args:
        name: the catalogue name.
        epsilon_each: the epsilon each ECDF is calibrated to.
        claim: the :class:`~dpaudit.Claim`.
        n: the public number of records.
        n_points: grid points ``N`` on ``[0, 1]``.
        known_flaw: the true guarantee of a faulty variant.

    Returns:
        The :class:`~dpaudit.Mechanism`; data are ``(scores, labels)``.
    """
    n, n_points = check_count("n", n), check_count("n_points", n_points)
    depth = tree_depth(n_points)
    grid = jnp.linspace(0.0, 1.0, n_points)
    scale = bmr_exact_sensitivity(n_points)[0] / epsilon_each

    def model(data):
        scores, labels = data
        counts = roc_counts(check_scores(scores, n), labels, grid) / n
        for row, site in enumerate(_SITES):
            numpyro.sample(site, AncestorLaplace(counts[row], depth, scale, count_scale=n))

    params = {"epsilon": claim.epsilon, "n": n, "n_points": n_points, "node_scale": scale}
    return dpaudit.Mechanism(
        name=name,
        model=model,
        claim=claim,
        params=params,
        release_site=_SITES,
        description=f"True- and false-positive BMR ECDFs at two sites, Lap({scale:g}) per node.",
        known_flaw=known_flaw,
    )


@dpaudit.register("composed-bmr-roc", example=_EXAMPLE)
def composed_bmr_roc(epsilon: float = 1.0, n: int = 100, n_points: int = 16):
    """BMR ROC as two ECDF release sites at epsilon/2 each (sequential composition).

    Args:
        epsilon: the claimed epsilon.
        n: the public number of records.
        n_points: grid points ``N``.

    Returns:
        The :class:`~dpaudit.Mechanism`.
    """
    check_epsilon(epsilon)
    claim = dpaudit.Claim(
        epsilon=epsilon,
        reference="Barczewski, Mawass & Ramon, Thm 3.1 per ECDF (exact node scale); sequential "
        "composition "
        "(docs/paper-errors.md#bmr-roc-composition)",
    )
    return two_site_roc("composed-bmr-roc", epsilon / 2.0, claim, n, n_points)


@dpaudit.register("faulty/composed-bmr-roc-parallel", example=_EXAMPLE, faulty=True)
def composed_bmr_roc_parallel(epsilon: float = 1.0, n: int = 100, n_points: int = 16):
    """BMR ROC as two ECDF sites at the whole epsilon each (parallel composition assumed).

    Args:
        epsilon: the claimed (and per-ECDF) epsilon.
        n: the public number of records.
        n_points: grid points ``N``.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon`` is the exact worst case.
    """
    check_epsilon(epsilon)
    n_points = check_count("n_points", n_points)
    worst, _ = bmr_roc_exact_sensitivity(n_points)
    flaw = dpaudit.KnownFlaw(
        reason="a record that changes its label moves both ECDFs, so parallel composition "
        "does not apply: the two epsilon releases compose sequentially.",
        true_epsilon=worst * epsilon / bmr_exact_sensitivity(n_points)[0],
        visible_on="a record that changes both its score cell and its label (the worst move)",
    )
    claim = dpaudit.Claim(epsilon=epsilon, reference="parallel composition wrongly assumed")
    return two_site_roc(
        "faulty/composed-bmr-roc-parallel", epsilon, claim, n, n_points, known_flaw=flaw
    )


@register_pair("faulty/composed-bmr-roc-parallel")
def _worst_pair():
    """The worst replace-one move of :func:`bmr_roc_exact_sensitivity` on the example grid."""
    n, n_points = _EXAMPLE["n"], _EXAMPLE["n_points"]
    _, ((a, y), (c, y_prime)) = bmr_roc_exact_sensitivity(n_points)
    grid = np.linspace(0.0, 1.0, n_points)
    rng = np.random.default_rng(0)
    scores, labels = rng.uniform(size=n), rng.integers(0, 2, size=n).astype(float)
    scores_prime, labels_prime = scores.copy(), labels.copy()
    scores[0], labels[0] = grid[a], y
    scores_prime[0], labels_prime[0] = grid[c], y_prime
    return (scores, labels), (scores_prime, labels_prime)


def example_pair(name: str, seed: int = 0):
    """The neighbouring pair audit specs read for ``faulty/composed-bmr-roc-parallel``.

    Args:
        name: the catalogue name (only the faulty ROC variant documents a pair).
        seed: unused (the pair is the fixed worst move); accepted for the spec loader.

    Returns:
        ``((scores, labels), (scores', labels'))``.

    Raises:
        ValueError: for another name.
    """
    if name != "faulty/composed-bmr-roc-parallel":
        raise ValueError(f"mechanisms.composed.roc documents no example pair for {name!r}.")
    return _worst_pair()
