r"""BMR's federated ECDF protocols (Secs. 4.1–4.2) as one multi-site release.

**U-statistics (BMR Def. 2).** :func:`u_statistic` is the order-``m`` U-statistic
``binom(n, m)^{-1} sum_{i_1 < ... < i_m} phi(x_{i_1}, ..., x_{i_m})`` of a symmetric
kernel; :func:`noisy_u_statistic` is BMR's ``U_hat(X, I) = U(X) + sum_{i in I} eta_i``,
the value a secure-aggregation primitive ``UStat`` publishes. An ECDF value is the
order-1 U-statistic of the kernel ``1[phi(x) <= t]`` (BMR Sec. 4, Eq. 4).

**The protocols.** ``K`` parties each hold a non-empty dataset of scores (party
sizes public; BMR's one record per party is ``K = n``, sizes 1). All use one
public grid (checked: :func:`check_party_grids`).

* Pointwise evaluation (Sec. 4.1, :func:`pointwise_protocol`): for each grid
  point ``tau_i``, one secure aggregation of the parties' indicators with the
  noise of the ``L + 1`` tree nodes above leaf ``i`` added once, inside ``UStat``,
  on the count scale (docs/papers/bmr.md#bmr-federated).
* Function secret sharing (Sec. 4.2, :func:`fss_protocol`): each party splits
  its comparison function into additive shares held by ``m >= 2`` servers;
  each server sums its shares over the parties, the servers combine the sums
  and add the tree noise once. The shares here are truth tables over the
  public grid (the trivial FSS scheme; Boyle et al.'s keys are shorter but
  evaluate to the same shares): the combined counts are exactly the pooled
  counts, so both protocols release the same law as :mod:`.tree`'s ``bmr-ecdf``
  on the pooled data.

**The multi-site release** (``bmr-federated-ecdf``). Each party also publishes
its own private ECDF, so the audit sees ``K + 1`` sites: ``party_0 ... party_{K-1}``,
each a BMR tree release of that party's ECDF with node scale
``Delta* / epsilon_local`` on its counts, and ``aggregate``, the pooled ECDF
of the protocol with node scale ``Delta* / epsilon_aggregate`` (``Delta*`` =
:func:`~mechanisms.ecdf.tree.bmr_exact_sensitivity`, the exact worst case). A
replaced record lies in one party: it moves that party's site and the
aggregate by the same interval indicator of counts and no other party's site,
so the composed guarantee is ``epsilon_local + epsilon_aggregate`` (parallel
across parties, sequential between a party and the aggregate); the builder
splits the claimed epsilon by ``local_share``.

* ``faulty/bmr-federated-ecdf-aggregate-uncounted`` — the aggregate is taken for
  post-processing of the party releases and gets the whole epsilon, as does
  each party: a party's budget is counted once for two releases. True epsilon
  exactly ``2 epsilon``: the two moved sites have independent noise, so the
  supremum of the joint loss is the sum of the two sites' suprema, each
  ``Delta* / (Delta* / epsilon) = epsilon`` on the worst move.
* ``faulty/bmr-federated-ecdf-noise-split`` — the local noise is split across
  the parties: party ``k``'s node scale is its share ``n_k / n`` of the pooled
  scale, so its release spends ``epsilon_local n / n_k``. True epsilon exactly
  ``epsilon_local n / min_k n_k + epsilon_aggregate`` (``2 epsilon`` for three
  equal parties at ``epsilon / 2`` each).

Data are ``(scores, parties)``: a score per record and the index of the party
holding it (public; the party sizes are the builder's ``party_sizes``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

import dpaudit
from dpaudit.core.checks import check_count, check_epsilon, is_concrete
from dpaudit.model.noise.linear_laplace import AncestorLaplace
from mechanisms.ecdf.tree import bmr_exact_sensitivity, check_grid, tree_depth
from mechanisms.faulty import register_pair

__all__ = [
    "ancestor_noise",
    "check_party_data",
    "check_party_grids",
    "check_party_sizes",
    "example_pair",
    "federated_ecdf_mechanism",
    "fss_protocol",
    "noisy_u_statistic",
    "party_counts",
    "pointwise_protocol",
    "u_statistic",
]

_EXAMPLE = {"epsilon": 1.0, "party_sizes": (12, 12, 12), "n_points": 8}
_AGGREGATE = "aggregate"


# ---------------------------------------------------------------- U-statistics (Def. 2)


def u_statistic(kernel: Callable, data, order: int = 1) -> float:
    """BMR Def. 2: the average of a symmetric kernel over all ``order``-subsets of the records.

    Args:
        kernel: a symmetric function of ``order`` records returning a number.
        data: the records (a sequence or an array with records on the first axis).
        order: ``m >= 1``, the number of records the kernel takes.

    Returns:
        ``binom(n, m)^{-1} sum_{i_1 < ... < i_m} kernel(x_{i_1}, ..., x_{i_m})``.

    Raises:
        ValueError: if ``order`` is not a positive integer or exceeds the number of records.

    Example:
        >>> u_statistic(lambda x, y: (x - y) ** 2 / 2, [1.0, 2.0, 4.0], order=2)  # the variance
        2.3333333333333335
    """
    order = check_count("order", order)
    records = list(data)
    if order > len(records):
        raise ValueError(
            f"order must not exceed the number of records ({len(records)}), got {order}; "
            "pass more records or a smaller order."
        )
    total = math.fsum(float(kernel(*c)) for c in itertools.combinations(records, order))
    return total / math.comb(len(records), order)


def noisy_u_statistic(kernel: Callable, data, noise, indices, order: int = 1) -> float:
    """BMR's ``U_hat(X, I) = U(X) + sum_{i in I} eta_i``: what the primitive ``UStat`` publishes.

    Args:
        kernel: the symmetric kernel of :func:`u_statistic`.
        data: the records.
        noise: a mapping (or array) from noise indices to drawn values ``eta_i``.
        indices: the index set ``I`` of the noise terms to add.
        order: the kernel's order ``m``.

    Returns:
        The noisy U-statistic.
    """
    return u_statistic(kernel, data, order) + math.fsum(float(noise[i]) for i in indices)


def ancestor_noise(node_noise: Sequence, leaf: int) -> float:
    """``sum_{l=0}^{L} eta_(floor(i / 2^l), l)``: the noise leaf ``i`` receives (BMR Eq. 2, 4).

    Args:
        node_noise: ``L + 1`` arrays, level ``l`` holding the ``2^(L-l)`` node draws.
        leaf: the 0-based leaf index ``i``.

    Returns:
        The sum of the noise on the ``L + 1`` nodes from the leaf to the root.
    """
    return math.fsum(float(noise[leaf >> depth]) for depth, noise in enumerate(node_noise))


# ---------------------------------------------------------------- checks


def check_party_sizes(party_sizes) -> tuple[int, ...]:
    """Check the public party sizes: at least one party, each with at least one record.

    Args:
        party_sizes: one size per party.

    Returns:
        The sizes as a tuple of ints.

    Raises:
        ValueError: for no party or a party with no records.
    """
    sizes = tuple(party_sizes) if isinstance(party_sizes, Sequence | np.ndarray) else None
    if not sizes:
        raise ValueError(
            f"party_sizes must list at least one party (the party count is below one), "
            f"got {party_sizes!r}."
        )
    for k, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(
                f"party {k} has an empty or invalid dataset (size {size!r}); every party "
                "needs at least one record, so drop the party or give it data."
            )
    return tuple(int(s) for s in sizes)


def check_party_grids(grids) -> jax.Array:
    """The one public grid all parties share, or a ValueError when the parties' grids differ.

    Args:
        grids: one grid per party (at least one).

    Returns:
        The common grid.

    Raises:
        ValueError: for no grid, an invalid grid, or grids that differ across parties.
    """
    grids = [check_grid(g) for g in grids]
    if not grids:
        raise ValueError("grids must hold one grid per party (the party count is below one).")
    first = np.asarray(grids[0])
    for k, g in enumerate(grids[1:], start=1):
        if g.shape != first.shape or not np.array_equal(np.asarray(g), first):
            raise ValueError(
                f"party {k}'s grid differs from party 0's; the parties must evaluate their "
                "ECDFs on one public grid for the aggregate to be their sum."
            )
    return grids[0]


def check_party_data(data, party_sizes: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """Check ``(scores, parties)`` against the public party sizes.

    Args:
        data: ``(scores, parties)``, 1-D arrays of equal length.
        party_sizes: the public sizes (:func:`check_party_sizes`).

    Returns:
        ``(scores, parties)`` as float64 and int JAX arrays.

    Raises:
        ValueError: for the wrong structure or length, non-finite scores, or
            party labels whose counts are not the public sizes.
    """
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise ValueError("data must be (scores, parties): a score and a party index per record.")
    scores = jnp.asarray(data[0], dtype=jnp.float64)
    parties = jnp.asarray(data[1])
    n = sum(party_sizes)
    if scores.ndim != 1 or scores.shape != parties.shape or scores.shape[0] != n:
        raise ValueError(
            f"scores and parties must be 1-D of the public total size {n}, got shapes "
            f"{scores.shape} and {parties.shape}."
        )
    if is_concrete(scores) and not np.all(np.isfinite(np.asarray(scores))):
        raise ValueError("scores contain NaN or infinite values; remove or clip them first.")
    if is_concrete(parties):
        found = np.bincount(np.asarray(parties, dtype=int), minlength=len(party_sizes))
        if len(found) != len(party_sizes) or tuple(found) != party_sizes:
            raise ValueError(
                f"the party labels give sizes {tuple(found.tolist())}, but the mechanism was "
                f"built for the public party sizes {party_sizes}."
            )
    return scores, parties.astype(jnp.int32)


# ---------------------------------------------------------------- protocols


def party_counts(scores, parties, n_parties: int, grid) -> jax.Array:
    """``(K, N)`` counts ``#{x in party k : clamp(x) <= tau_i}``.

    Args:
        scores: ``(n,)`` scores.
        parties: ``(n,)`` party indices in ``[0, K)``.
        n_parties: ``K``.
        grid: the public grid.

    Returns:
        The parties' count vectors (their sum is the pooled count vector).
    """
    grid = check_grid(grid)
    x = jnp.clip(jnp.asarray(scores, dtype=jnp.float64), grid[0], grid[-1])
    member = (jnp.asarray(parties)[:, None] == jnp.arange(n_parties)[None, :]).astype(jnp.float64)
    below = (x[:, None] <= grid[None, :]).astype(jnp.float64)
    return member.T @ below


def pointwise_protocol(party_scores, grids, node_noise) -> np.ndarray:
    """BMR Sec. 4.1: ``F_hat(tau_i) = U_hat_{phi <= tau_i}(X, I[L, i])``, one aggregation per point.

    The noise is drawn on the count scale (node draws ``eta``), so the average
    receives ``eta / n`` (docs/paper-errors.md#bmr-error-units).

    Args:
        party_scores: one non-empty sequence of scores per party.
        grids: one grid per party (they must agree).
        node_noise: ``L + 1`` arrays of node draws (:func:`ancestor_noise`).

    Returns:
        ``(N,)`` released ECDF values of the pooled data.

    Raises:
        ValueError: for no party, an empty party, or grids that differ.
    """
    check_party_sizes([len(s) for s in party_scores])
    grid = np.asarray(check_party_grids(grids))
    pooled = np.clip(
        np.concatenate([np.asarray(s, dtype=float) for s in party_scores]), *grid[[0, -1]]
    )
    n = pooled.shape[0]
    out = np.empty(grid.shape[0])
    for i, t in enumerate(grid):
        noise = {0: ancestor_noise(node_noise, i) / n}
        out[i] = noisy_u_statistic(lambda x, t=t: float(x <= t), pooled, noise, [0])
    return out


def fss_protocol(party_scores, grids, node_noise, n_servers: int = 2, seed: int = 0):
    """BMR Sec. 4.2: servers sum additive shares of the parties' comparison functions.

    Each party splits the truth table ``1[x <= tau_i]`` of each record over the
    public grid into ``n_servers`` shares modulo ``2^32``; server ``j`` sums its
    shares over all records and parties; the combined sums are the pooled
    counts, to which the tree noise is added once.

    Args:
        party_scores: one non-empty sequence of scores per party.
        grids: one grid per party (they must agree).
        node_noise: ``L + 1`` arrays of node draws.
        n_servers: ``m >= 2`` non-colluding servers.
        seed: seed of the share randomness (it cancels in the combination).

    Returns:
        ``(released, server_sums)``: the ``(N,)`` released ECDF values and the
        ``(m, N)`` per-server sums (each alone uniform modulo ``2^32``).

    Raises:
        ValueError: for no party, an empty party, grids that differ, or ``n_servers < 2``.
    """
    check_party_sizes([len(s) for s in party_scores])
    if check_count("n_servers", n_servers) < 2:
        raise ValueError(
            f"n_servers must be at least 2 (FSS splits among servers), got {n_servers}."
        )
    grid = check_party_grids(grids)
    rng = np.random.default_rng(seed)
    modulus = np.uint64(2**32)
    sums = np.zeros((n_servers, grid.shape[0]), dtype=np.uint64)
    for scores in party_scores:
        x = np.clip(np.asarray(scores, dtype=float), float(grid[0]), float(grid[-1]))
        tables = (x[:, None] <= np.asarray(grid)[None, :]).astype(np.uint64)
        shares = rng.integers(0, 2**32, size=(n_servers - 1, *tables.shape), dtype=np.uint64)
        last = (tables - shares.sum(axis=0)) % modulus
        sums = (sums + np.concatenate([shares, last[None]]).sum(axis=1)) % modulus
    counts = sums.sum(axis=0) % modulus
    n = sum(len(s) for s in party_scores)
    noise = np.array([ancestor_noise(node_noise, i) for i in range(grid.shape[0])])
    return counts.astype(float) / n + noise / n, sums


# ---------------------------------------------------------------- the multi-site release


def federated_ecdf_mechanism(
    name: str,
    epsilon_local,
    epsilon_aggregate: float,
    claim: dpaudit.Claim,
    party_sizes,
    n_points: int,
    known_flaw: dpaudit.KnownFlaw | None = None,
) -> dpaudit.Mechanism:
    """The parties' ECDFs and the protocol's pooled ECDF as ``K + 1`` release sites.

    Args:
        name: the catalogue name.
        epsilon_local: the epsilon each party's own release is calibrated to (one
            number, or one per party).
        epsilon_aggregate: the epsilon the aggregate's tree noise is calibrated to.
        claim: the :class:`~dpaudit.Claim`.
        party_sizes: the public party sizes (at least one party, none empty).
        n_points: ``N >= 2`` grid points on the public range ``[0, 1]``.
        known_flaw: the true guarantee of a faulty variant.

    Returns:
        The :class:`~dpaudit.Mechanism`; data are ``(scores, parties)``.

    Raises:
        ValueError: for no party, an empty party, or a bad epsilon or grid size.
    """
    sizes = check_party_sizes(party_sizes)
    locals_ = tuple(epsilon_local) if isinstance(epsilon_local, tuple | list) else None
    locals_ = locals_ or (epsilon_local,) * len(sizes)
    if len(locals_) != len(sizes):
        raise ValueError(
            f"epsilon_local needs one value per party ({len(sizes)}), got {len(locals_)}."
        )
    for value in (*locals_, epsilon_aggregate):
        check_epsilon(value)
    n_points = check_count("n_points", n_points)
    depth, grid = tree_depth(n_points), jnp.linspace(0.0, 1.0, n_points)
    worst = bmr_exact_sensitivity(n_points)[0]
    local_scales = tuple(worst / float(e) for e in locals_)
    aggregate_scale = worst / epsilon_aggregate
    sites = (*(f"party_{k}" for k in range(len(sizes))), _AGGREGATE)
    n = sum(sizes)

    def model(data):
        scores, parties = check_party_data(data, sizes)
        counts = party_counts(scores, parties, len(sizes), grid)
        for k, size in enumerate(sizes):
            scale = local_scales[k]
            release = AncestorLaplace(counts[k] / size, depth, scale, count_scale=size)
            numpyro.sample(sites[k], release)
        pooled = jnp.sum(counts, axis=0) / n  # the secure sum of Sec. 4.1 / 4.2
        numpyro.sample(_AGGREGATE, AncestorLaplace(pooled, depth, aggregate_scale, count_scale=n))

    params = {
        "epsilon": claim.epsilon,
        "party_sizes": sizes,
        "n_points": n_points,
        "local_node_scales": local_scales,
        "aggregate_node_scale": aggregate_scale,
    }
    return dpaudit.Mechanism(
        name=name,
        model=model,
        claim=claim,
        params=params,
        release_site=sites,
        description=(
            f"{len(sizes)} parties' BMR ECDFs (node Lap({min(local_scales):g}) or wider) and their "
            "pooled ECDF "
            f"by secure aggregation (node Lap({aggregate_scale:g}), added once)."
        ),
        known_flaw=known_flaw,
    )


def _split(epsilon, local_share):
    check_epsilon(epsilon)
    if not isinstance(local_share, int | float) or not 0.0 < local_share < 1.0:
        raise ValueError(f"local_share must lie strictly between 0 and 1, got {local_share!r}.")
    return epsilon * local_share, epsilon * (1.0 - local_share)


@dpaudit.register("bmr-federated-ecdf", example=_EXAMPLE)
def bmr_federated_ecdf(
    epsilon: float = 1.0,
    party_sizes=(30, 30, 40),
    n_points: int = 16,
    local_share: float = 0.5,
) -> dpaudit.Mechanism:
    """BMR's federated ECDF: each party's release and the securely aggregated ECDF, composed.

    Args:
        epsilon: the claimed epsilon (``epsilon_local + epsilon_aggregate``).
        party_sizes: the public party sizes.
        n_points: ``N`` grid points on ``[0, 1]``.
        local_share: the fraction of ``epsilon`` each party's own release spends.

    Returns:
        The :class:`~dpaudit.Mechanism`.
    """
    eps_local, eps_aggregate = _split(epsilon, local_share)
    claim = dpaudit.Claim(
        epsilon=epsilon,
        adjacency="replace-one",
        reference="Barczewski, Mawass & Ramon, Secs. 4.1-4.2 and Thm 3.1 per release (exact node "
        "scale); parallel across parties, sequential between a party and the aggregate "
        "(docs/papers/bmr.md#bmr-federated)",
    )
    return federated_ecdf_mechanism(
        "bmr-federated-ecdf", eps_local, eps_aggregate, claim, party_sizes, n_points
    )


@dpaudit.register("faulty/bmr-federated-ecdf-aggregate-uncounted", example=_EXAMPLE, faulty=True)
def bmr_federated_ecdf_aggregate_uncounted(
    epsilon: float = 1.0, party_sizes=(30, 30, 40), n_points: int = 16
) -> dpaudit.Mechanism:
    """The federated ECDF with the aggregate taken for free post-processing (true ``2 epsilon``).

    Args:
        epsilon: the claimed epsilon, spent by each party's release and again by the aggregate.
        party_sizes: the public party sizes.
        n_points: ``N`` grid points on ``[0, 1]``.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon = 2 epsilon``.
    """
    check_epsilon(epsilon)
    flaw = dpaudit.KnownFlaw(
        reason="the aggregate adds fresh noise to the parties' raw counts, so it is not "
        "post-processing of their releases: a record in party k moves party k's site and the "
        "aggregate, and the two epsilon releases compose to 2 epsilon.",
        true_epsilon=2.0 * float(epsilon),
        visible_on="a record of one party moved across the worst interval of the tree",
    )
    claim = dpaudit.Claim(
        epsilon=epsilon, adjacency="replace-one", reference="aggregate wrongly counted as free"
    )
    return federated_ecdf_mechanism(
        "faulty/bmr-federated-ecdf-aggregate-uncounted",
        epsilon,
        epsilon,
        claim,
        party_sizes,
        n_points,
        known_flaw=flaw,
    )


@dpaudit.register("faulty/bmr-federated-ecdf-noise-split", example=_EXAMPLE, faulty=True)
def bmr_federated_ecdf_noise_split(
    epsilon: float = 1.0, party_sizes=(30, 30, 40), n_points: int = 16
) -> dpaudit.Mechanism:
    """The federated ECDF with the local noise split across parties by their share of ``n``.

    Each party's node scale is the pooled scale ``Delta*/epsilon_local`` times
    ``n_k / n`` (the pooled noise divided among the parties), so party ``k``'s
    release spends ``epsilon_local n / n_k``. True epsilon:
    ``(epsilon/2) n / min_k n_k + epsilon/2`` (``2 epsilon`` for three equal parties).

    Args:
        epsilon: the claimed epsilon (half local, half aggregate, as ``bmr-federated-ecdf``).
        party_sizes: the public party sizes.
        n_points: ``N`` grid points on ``[0, 1]``.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon`` as above.
    """
    eps_local, eps_aggregate = _split(epsilon, 0.5)
    sizes = check_party_sizes(party_sizes)
    n = sum(sizes)
    flaw = dpaudit.KnownFlaw(
        reason="each party's noise is its share n_k/n of the pooled noise, but a record moves "
        "its own party's ECDF by the same counts as the pooled one: the party release spends "
        "epsilon_local n/n_k.",
        true_epsilon=eps_local * n / min(sizes) + eps_aggregate,
        visible_on="a record of the smallest party moved across the worst interval of the tree",
    )
    claim = dpaudit.Claim(
        epsilon=epsilon, adjacency="replace-one", reference="local noise split by party share"
    )
    return federated_ecdf_mechanism(
        "faulty/bmr-federated-ecdf-noise-split",
        tuple(eps_local * n / size for size in sizes),
        eps_aggregate,
        claim,
        sizes,
        n_points,
        known_flaw=flaw,
    )


def _pair(party_sizes, n_points, seed):
    """Record 0 of party 0 moved from grid cell ``a`` to ``c``, the exact worst move."""
    _, (a, c) = bmr_exact_sensitivity(n_points)
    grid = np.linspace(0.0, 1.0, n_points)
    rng = np.random.default_rng(seed)
    parties = np.repeat(np.arange(len(party_sizes)), party_sizes)
    scores = rng.uniform(size=parties.shape[0])
    scores_prime = scores.copy()
    scores[0], scores_prime[0] = grid[a], grid[c]
    return (scores, parties), (scores_prime, parties.copy())


@register_pair("faulty/bmr-federated-ecdf-aggregate-uncounted")
@register_pair("faulty/bmr-federated-ecdf-noise-split")
def _worst_pair():
    """The worst move on the example of the faulty variants (party 0 is a smallest party)."""
    return _pair(_EXAMPLE["party_sizes"], _EXAMPLE["n_points"], 0)


def example_pair(name: str, seed: int = 0):
    """The neighbouring pair the audit specs of this module read (``generator = "example"``).

    Both entries get the exact worst move (record 0 of party 0 across the worst
    interval) on their example parameters.

    Args:
        name: ``bmr-federated-ecdf`` or its faulty variant.
        seed: seed of the other records' scores.

    Returns:
        ``((scores, parties), (scores', parties))``.

    Raises:
        ValueError: for another name.
    """
    if name not in (
        "bmr-federated-ecdf",
        "faulty/bmr-federated-ecdf-aggregate-uncounted",
        "faulty/bmr-federated-ecdf-noise-split",
    ):
        raise ValueError(f"mechanisms.ecdf.federated documents no example pair for {name!r}.")
    return _pair(_EXAMPLE["party_sizes"], _EXAMPLE["n_points"], seed)
