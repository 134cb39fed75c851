"""Sharded runs: any split of the chunk keys, merged in any order, gives the serial run's bits.

No Ray here: :class:`~dpaudit.runtime.LocalExecutor` runs the shards in this process,
last shard first, through the same shard functions and merges as the Ray executor.
"""

import hashlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpaudit
from dpaudit.blackbox import blackbox_audit, neighbour_candidates
from dpaudit.blackbox.certification import TallyJob, finish_tally, merge_tally, tally_shard
from dpaudit.blackbox.samplers import ReleaseSource
from dpaudit.core.executors import resolve_executor
from dpaudit.estimation.pld import init_hockey_stick, merge_hockey_stick, update_hockey_stick
from dpaudit.runtime import LocalExecutor, shard_ranges
from dpaudit.testing import Box, SearchBudget, worst_neighbours
from dpaudit.whitebox.run import DirectionState, finish_direction, init_direction, merge_direction

N = 10


def _laplace_mechanism(scale_factor=0.8):
    def model(d):
        numpyro.sample("release", dist.Laplace(jnp.mean(d), scale_factor / N))

    claim = dpaudit.Claim(epsilon=1.0, sensitivity=1.0 / N, sensitivity_norm="l1")
    return dpaudit.Mechanism("shard-laplace-mean", model, claim)


D, D_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)


def _digest(array) -> str:
    a = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
    return hashlib.sha256(a.tobytes()).hexdigest()


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("seconds", "timings")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def record(result) -> str:
    """Every number of a result to the last bit (JSON minus timings, plus array digests)."""
    out = {"to_dict": _strip(result.to_dict())}
    if hasattr(result, "directions"):
        out["losses"] = [_digest(d.losses) for d in result.directions]
        out["certificate"] = None if result.certificate is None else repr(result.certificate)
    if hasattr(result, "certification_scores"):
        out["scores"] = {
            k: _digest(v) for k, v in sorted(result.certification_scores.to_dict().items())
        }
    return json.dumps(out, sort_keys=True, default=repr)


@pytest.mark.parametrize(
    "route, samples, chunk, keep",
    [
        ("closed-form", 40_000, 3000, 10_000),
        pytest.param("density", 12_000, 1000, 5000, marks=pytest.mark.slow),
        pytest.param("model", 6000, 700, 6000, marks=pytest.mark.slow),
    ],
)
def test_white_box_shards_give_the_serial_bits(route, samples, chunk, keep):
    """1, 2 and 4 shards (merged last first) reproduce every number of the serial audit,
    on each route, with a partial last chunk and kept losses spanning several chunks."""
    mech = _laplace_mechanism()
    kwargs = dict(samples=samples, chunk_size=chunk, keep_samples=keep, route=route, seed=4)
    serial = record(dpaudit.audit(mech, D, D_PRIME, progress=False, **kwargs))
    for shards in (1, 2, 4):
        sharded = dpaudit.audit(
            mech, D, D_PRIME, progress=False, executor=LocalExecutor(shards), **kwargs
        )
        assert record(sharded) == serial, shards


def _sampler(data, n, key):
    """A Laplace count with integer-valued releases half the time (ties at the threshold)."""
    x = jnp.sum(data) + jax.random.laplace(key, (n, 1)) / 0.8
    return jnp.where(jax.random.bernoulli(jax.random.fold_in(key, 1), 0.5, (n, 1)), jnp.round(x), x)


def test_black_box_shards_give_the_serial_bits():
    """Certification counts, tie draws and kept scores: 1, 2, 4 shards = serial."""
    kwargs = dict(samples=50_000, select_samples=4000, chunk_size=3000, seed=2, progress=False)
    claim = dpaudit.Claim(epsilon=0.5)
    serial = blackbox_audit(_sampler, D, D_PRIME, claim, **kwargs)
    assert serial.event.counts.P > 0
    for shards in (1, 2, 4):
        sharded = blackbox_audit(
            _sampler, D, D_PRIME, claim, executor=LocalExecutor(shards), **kwargs
        )
        assert record(sharded) == record(serial), shards


def test_tally_shards_match_the_release_source_tally():
    """The sharded tally counts what ReleaseSource.tally (the unsharded loop) counts."""
    source = ReleaseSource(_sampler, D_PRIME, "s", 1000)
    key = jax.random.key(9)
    score = lambda x: x[:, 0]  # noqa: E731
    job = TallyJob(source, score, -1.0, -1.0, 10_500, 2500, key)
    above, ties, head = source.tally(10_500, key, score, -1.0, -1.0, 2500)
    parts = [tally_shard(job, r) for r in shard_ranges(11, 3)]
    merged = merge_tally(merge_tally(parts[2], parts[0]), parts[1])
    got = finish_tally(merged, job, 1000)
    assert (got[0], got[1]) == (above, ties) and ties > 0
    np.testing.assert_array_equal(got[2], head)
    with pytest.raises(ValueError, match="share chunks"):
        merge_tally(parts[0], parts[0])
    with pytest.raises(RuntimeError, match="incomplete"):
        finish_tally(merge_tally(parts[0], parts[2]), job, 1000)


def test_chunk_states_folded_in_order_equal_the_fused_update():
    """Folding per-chunk states with merge_hockey_stick, in chunk order, gives the bits of
    update_hockey_stick on the running state (the fused serial step)."""
    eps = jnp.linspace(0.0, 2.0, 9)
    rng = np.random.default_rng(0)
    chunks = [jnp.asarray(rng.laplace(0.3, 1.0, 777)) for _ in range(12)]
    fused = folded = init_hockey_stick(9)
    update, merge = jax.jit(update_hockey_stick), jax.jit(merge_hockey_stick)
    for chunk in chunks:
        fused = update(fused, chunk, eps)
        folded = merge(folded, update(init_hockey_stick(9), chunk, eps))
    for a, b in zip(fused, folded, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    # ... while another order of merging is not bit-identical in general (why order matters)
    pairs = [update(init_hockey_stick(9), c, eps) for c in chunks]
    tree = merge(merge(pairs[0], pairs[1]), merge(pairs[2], pairs[3]))
    seq = merge(merge(merge(pairs[0], pairs[1]), pairs[2]), pairs[3])
    np.testing.assert_allclose(np.asarray(tree.m2), np.asarray(seq.m2), rtol=1e-12)


def test_direction_states_refuse_overlaps_and_incomplete_runs():
    settings = _settings()
    empty = init_direction(settings)
    assert isinstance(empty, DirectionState) and empty.folded_chunks == 0
    with pytest.raises(RuntimeError, match="incomplete"):
        finish_direction(empty, None, 0, jax.random.key(0), settings)
    part = empty._replace(pending={0: None})
    with pytest.raises(ValueError, match="share chunks"):
        merge_direction(part, part)


def _settings():
    from dpaudit.whitebox.run import RunSettings

    grid = np.linspace(0.0, 2.0, 5)
    return RunSettings(grid, 2, 1.0, 100, 10, 0, 0.05, "bernstein", "x")


def test_shard_ranges_cover_every_chunk_once():
    for n, k in [(1, 4), (5, 2), (10, 3), (7, 7), (100, 8)]:
        ranges = shard_ranges(n, k)
        assert [c for r in ranges for c in r] == list(range(n))
        assert len(ranges) == min(n, k)


def test_unknown_executor_is_one_sentence():
    with pytest.raises(ValueError, match="executor must be None, 'ray'"):
        resolve_executor("dask")
    with pytest.raises(ValueError, match="executor must be"):
        dpaudit.audit(_laplace_mechanism(), D, D_PRIME, samples=100, executor="threads")


# --------------------------------------------------------- fan-out of selection and search

# Four candidate pairs: D with its first record replaced by 1, -1, 3 and 0.2.
PAIRS = neighbour_candidates(D, [1.0, -1.0, 3.0, 0.2])
SELECT = dict(samples=20_000, select_samples=3000, chunk_size=1500, seed=6, progress=False)


def selection_record(result) -> str:
    """:func:`record` plus the selection scores of the certified arm."""
    scores = {k: _digest(v) for k, v in sorted(result.selection_scores.to_dict().items())}
    return record(result) + json.dumps(scores, sort_keys=True)


def test_selection_fanned_out_per_pair_gives_the_serial_bits():
    """Several candidate pairs, fitted one task per pair (last pair first, each task on its own
    copy of the sources): the same chosen pair, event, counts and scores as the serial run."""
    claim = dpaudit.Claim(epsilon=0.5)
    serial = blackbox_audit(_sampler, claim=claim, pairs=PAIRS, **SELECT)
    assert serial.event.selection.pairs == 4
    fanned = blackbox_audit(_sampler, claim=claim, pairs=PAIRS, executor=LocalExecutor(2), **SELECT)
    assert selection_record(fanned) == selection_record(serial)


def _category_sampler(data, n, key):
    """Three string outputs, their odds moved by the data (category indices by first sight)."""
    logits = jnp.array([0.0, 0.0, 0.0]) + jnp.sum(data) * jnp.array([0.0, 0.5, 1.0])
    draws = np.asarray(jax.random.categorical(key, logits, shape=(n,)))
    return np.array(["low", "mid", "high"])[draws][:, None]


@pytest.mark.parametrize(
    "chunk",
    [pytest.param(None, id="probed", marks=pytest.mark.slow), pytest.param(1500, id="chunk-given")],
)
def test_selection_of_a_categorical_sampler_keeps_the_serial_category_indices(chunk):
    """Category indices follow the order of first sight across the pairs: such a sampler is
    fitted pair after pair in this process (seen at the probe, or after the tasks when no
    probe ran), so the result is the serial one."""
    claim = dpaudit.Claim(epsilon=0.5)
    kwargs = dict(SELECT, chunk_size=chunk, samples=6000)
    serial = blackbox_audit(_category_sampler, claim=claim, pairs=PAIRS, **kwargs)
    fanned = blackbox_audit(
        _category_sampler, claim=claim, pairs=PAIRS, executor=LocalExecutor(2), **kwargs
    )
    assert selection_record(fanned) == selection_record(serial)


def test_a_failing_pair_stops_the_fanned_out_selection_with_the_serial_error():
    """Pairs 1 and 3 fail; the tasks run last first, yet the error is pair 1's (the serial
    run's), with a note naming the pair; nothing is returned."""

    def fragile(data, n, key):
        if float(data[0]) in (-1.0, 0.2):
            raise RuntimeError(f"no releases for a first record of {float(data[0])}")
        return _sampler(data, n, key)

    claim = dpaudit.Claim(epsilon=0.5)
    with pytest.raises(ValueError, match=r"sampler 'fragile' failed.*of -1\.0") as serial:
        blackbox_audit(fragile, claim=claim, pairs=PAIRS, **SELECT)
    with pytest.raises(ValueError, match=r"sampler 'fragile' failed.*of -1\.0") as fanned:
        blackbox_audit(fragile, claim=claim, pairs=PAIRS, executor=LocalExecutor(2), **SELECT)
    assert str(fanned.value) == str(serial.value)
    assert "candidate pair 1 of 4" in " ".join(fanned.value.__notes__)


def mean_summary(x):
    return jnp.mean(x, axis=0)


def l2_norm(h):
    return jnp.sqrt(jnp.sum(h * h, axis=-1))


SEARCH = dict(record_space=Box(0.0, 1.0, 3), n=6, budget=SearchBudget(restarts=4, steps=30))


def worst_record(worst) -> tuple:
    arrays = (_digest(worst.data), _digest(worst.data_prime))
    return arrays, worst.index, worst.distance, worst.ratio, worst.method, worst.evaluations


@pytest.mark.parametrize("vary", ["pair", "dataset"])
def test_neighbour_search_fanned_out_per_start_point_gives_the_serial_pair(vary):
    """The gradient restarts one task per start point (last first): the same worst pair."""
    serial = worst_neighbours(mean_summary, l2_norm, 0.5, vary=vary, seed=3, **SEARCH)
    fanned = worst_neighbours(
        mean_summary, l2_norm, 0.5, vary=vary, seed=3, executor=LocalExecutor(), **SEARCH
    )
    assert serial.method == "gradient"
    assert worst_record(fanned) == worst_record(serial)
