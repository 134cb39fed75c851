"""The SVT quadrature density declares its working memory, and the density route honours it.

``SparseVector.log_prob`` integrates the threshold noise on a grid: each release holds
``(k, n_grid)`` tables, about 390 KB for both laws at ``k = 8`` (faulty/svt-lyu-alg6), so
a 2000-release chunk evaluated whole held 766 MB of XLA buffers on top of the suite. The
checks are in bytes, from XLA's own buffer assignment of the compiled programs.
"""

import jax
import numpy as np
import pytest

from dpaudit.model.loss import loss_at_releases
from dpaudit.model.noise.sparse_vector import SparseVector
from dpaudit.whitebox.kernels import batched_density_losses
from dpaudit.whitebox.plan import DENSITY_WORK_BYTES, density_batch_size

# the shipped forms: Lyu Alg. 6 (no cutoff), Alg. 3 (values released), Dwork-Roth (resample)
FORMS = {
    "no-cutoff": dict(k=8, cutoff=None, resample=False, release_values=False),
    "values": dict(k=8, cutoff=2, resample=False, release_values=True),
    "resample": dict(k=3, cutoff=1, resample=True, release_values=False),
    "cutoff-1": dict(k=3, cutoff=1, resample=False, release_values=False),
}


def _pair(k, cutoff, resample, release_values):
    queries = np.linspace(8.0, 11.0, k)
    law = dict(cutoff=cutoff, resample=resample, release_values=release_values)
    p = SparseVector(queries, 10.0, 2.0, 4.0, **law)
    q = SparseVector(queries + 1.0, 10.0, 2.0, 4.0, **law)
    return p, q


def _temp_bytes(program, *args) -> int:
    analysis = jax.jit(program).lower(*args).compile().memory_analysis()
    if analysis is None:
        pytest.skip("this backend reports no buffer assignment")
    return analysis.temp_size_in_bytes


@pytest.mark.parametrize(
    "form", [f if f in ("no-cutoff", "resample") else pytest.param(f, marks=pytest.mark.slow)
             for f in FORMS]
)  # fmt: skip
def test_the_declared_working_memory_bounds_xla_buffers_per_release(form):
    p, q = _pair(**FORMS[form])
    x = p.sample(jax.random.PRNGKey(0), (16,))
    temp = _temp_bytes(lambda xs: loss_at_releases(p, q, xs), x)
    declared = 8 * (p.density_work_elements + q.density_work_elements)
    assert temp / 16 <= declared


def test_a_closed_form_law_declares_little():
    p = SparseVector(np.arange(4.0), 10.0, 2.0, 0.0, cutoff=1)
    assert p.density_work_elements <= 8 * 4


def test_the_lyu_alg6_chunk_is_evaluated_in_batches_within_the_budget():
    """faulty/svt-lyu-alg6's 2000-release chunk: two density batches within the budget."""
    p, q = _pair(**FORMS["no-cutoff"])
    batch = density_batch_size(p, q, 2000)
    assert 2000 / 2 <= batch < 2000
    assert batch * 8 * (p.density_work_elements + q.density_work_elements) <= DENSITY_WORK_BYTES


@pytest.mark.slow
def test_the_compiled_lyu_alg6_density_step_stays_within_the_budget():
    """XLA's buffers of the batched step stay within DENSITY_WORK_BYTES (766 MB whole)."""
    p, q = _pair(**FORMS["no-cutoff"])
    n = 2000
    batch = density_batch_size(p, q, n)
    key = jax.random.PRNGKey(1)
    temp = _temp_bytes(lambda k: batched_density_losses(k, p, q, n, batch), key)
    assert temp <= DENSITY_WORK_BYTES
    whole = _temp_bytes(lambda k: batched_density_losses(k, p, q, n, n), key)
    assert whole > DENSITY_WORK_BYTES  # what the bound is for
