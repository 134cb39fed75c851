"""Programs whose values reach a record compile at XLA's default level (counts, not seconds).

A cold ``make audit`` is mostly XLA compilation, and LLVM's optimisation is about a third of
it: at ``xla_backend_optimization_level=0`` the real programs compile in 0.6-0.7 of the CPU
(``benchmarks/compile_options.py``). But level 0 changes floating-point results (LLVM
contracts multiply-adds into fused ones at the default level, not at 0), even in programs
that run once per audit: a Gaussian draw (``erf_inv``) regenerated at level 0, a
multivariate normal's certificate loss and a sparse-vector density each moved in their last
bit, where the golden records of the shipped specs happened not to (BENCHMARKS.md,
"Compile options and the shared fold, session 14"). Only the pre-audit draw, whose release is only checked for
being finite, is compiled at level 0. This pins that every program whose values reach a
record keeps the default.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import compiler  # where JAX hands a module and its options to XLA

import dpaudit  # noqa: F401  (64-bit floats)
from dpaudit.estimation.pld import init_hockey_stick
from dpaudit.model.loss import evaluate_release, noise_shift
from dpaudit.model.noise import ICLPNoise, NoisyComparison, ThresholdNoise
from dpaudit.model.noise.sparse_vector import SparseVector
from dpaudit.whitebox.kernels import loss_kernel

LEVEL = "xla_backend_optimization_level"


@pytest.fixture
def compiled_levels(monkeypatch):
    """``{program name: {optimisation level asked for, None for XLA's default}}``."""
    levels = {}
    inner = compiler.backend_compile_and_load

    def recording(backend, module, devices, options, host_callbacks):
        name = str(module.operation.attributes["sym_name"]).strip('"')
        levels.setdefault(name, set()).add(dict(options.env_option_overrides).get(LEVEL))
        return inner(backend, module, devices, options, host_callbacks)

    monkeypatch.setattr(compiler, "backend_compile_and_load", recording)
    jax.clear_caches()  # compile here, whatever ran before in this process
    return levels


def _laws(k: int):
    lam = jnp.arange(1, k + 1.0) ** -2.0
    h = 0.4 * jnp.arange(1, k + 1.0) ** -1.5
    return ICLPNoise(lam, 1.0, loc=h), ICLPNoise(lam, 1.0)


def test_the_programs_behind_a_record_compile_at_the_default_level(compiled_levels):
    p, q = _laws(6)
    kernel = loss_kernel("closed-form", None, None, None, p, q, noise_shift(p, q))
    key, n = jax.random.key(3), 211
    _, _, _, index, _ = kernel.step(init_hockey_stick(5), key, np.linspace(0, 2, 5), n, n)
    evaluate_release(p, q, kernel.release(key, n, int(index)))
    density = loss_kernel("density", None, None, None, p, q, None)
    density.step(init_hockey_stick(5), key, np.linspace(0, 2, 5), n, n)
    law = _sparse_vector(0.0, cutoff=2)
    law.log_prob_error(law.patterns()[3])
    ThresholdNoise(2.0).marginal_log_prob_error([(NoisyComparison(0.5, 0.0, 3.0), 1.0)])
    for name in (
        "jit__closed_form_step",  # the losses
        "jit__density_step",
        "jit__evaluate_at",  # the certificate's loss
        "jit_closed_form_draws",  # the certified release
        "jit__log_prob_program",  # the sparse-vector densities' certified errors
        "jit__marginal_log_mass",
    ):
        assert compiled_levels[name] == {None}, name


def _sparse_vector(offset, **form):
    queries = jnp.array([9.0, 11.0, 10.0, 12.0, 8.0, 10.5]) + offset
    return SparseVector(queries, 10.0, 2.0 + offset, 4.0 + offset, **form)
