"""The SVT certificate's programs: its quadrature error is one compiled program per shape.

A certificate checks a release with the exact densities and adds the laws' certified
quadrature errors (``log_prob_error``, ``marginal_log_prob_error``); evaluated op by op
those were 26-102 small programs, each lowered (and read from the persistent cache) in
every process. Counts, not seconds.
"""

from types import SimpleNamespace

import jax
import jax.numpy as jnp

from dpaudit.model.claims import Claim
from dpaudit.model.noise import NoisyComparison, ThresholdNoise
from dpaudit.model.noise.sparse_vector import SparseVector
from dpaudit.whitebox.certificate import find_certificate

LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"


def _count_lowerings(call):
    count = [0]

    def listener(event, duration, **kwargs):
        if event == LOWER:
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        call()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return count[0]


def _certificate(offset, **kwargs):
    """The certificate step of an SVT pair of laws (5 queries: a shape no other test uses)."""
    queries = jnp.array([9.0, 11.0, 10.0, 12.0, 8.0]) + offset
    p = SparseVector(queries, 10.0, 2.0 + offset, 4.0 + offset, **kwargs)
    q = SparseVector(queries + 1.0, 10.0, 2.0 + offset, 4.0 + offset, **kwargs)
    kernels = [SimpleNamespace(dist_p=p, dist_q=q), SimpleNamespace(dist_p=q, dist_q=p)]
    release = p.patterns()[3]
    return lambda: find_certificate(Claim(epsilon=1.0), kernels, [release, release], None)


def test_a_first_svt_certificate_lowers_few_programs_and_a_second_none():
    for form in ({"cutoff": 2}, {"cutoff": 2, "resample": True}):
        # the loss at the release (one pair program per direction) and the quadrature's
        # error (one program for both laws), all of one shape: op by op it was dozens
        assert _count_lowerings(_certificate(0.0, **form)) <= 3
        assert _count_lowerings(_certificate(0.5, **form)) == 0  # other parameters, same shape


def test_the_marginal_quadrature_error_is_one_program_per_number_of_answers():
    def error(offset):
        rho = ThresholdNoise(2.0 + offset)
        answers = [(NoisyComparison(g + offset, 0.0, 3.0 + offset), c) for g, c in
                   ((0.5, 0.0), (1.5, 1.0), (-0.5, 0.0))]  # fmt: skip
        return lambda: rho.marginal_log_prob_error(answers)

    assert _count_lowerings(error(0.0)) <= 1
    assert _count_lowerings(error(0.25)) == 0


_CHILD = """
import jax, jax.numpy as jnp
from dpaudit.core.compilation_cache import enable_compilation_cache
enable_compilation_cache({folder!r})
hits = [0]
jax.monitoring.register_event_listener(
    lambda e, **k: hits.__setitem__(0, hits[0] + (e == "/jax/compilation_cache/cache_hits")))
from dpaudit.model.noise.sparse_vector import SparseVector
p = SparseVector(jnp.array([9.0, 11.0, 10.0]), 10.0, 2.0, 4.0, cutoff=1)
p.log_prob_error(p.patterns()[1])
print(hits[0])
"""


def test_the_quadrature_error_program_has_one_cache_key_in_every_process(tmp_path):
    """Other string hash seeds, one persistent-cache entry: the later processes read it
    (numpyro's field order follows the hash seed; the fields enter keyed by name)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = str(tmp_path / "cache")
    root = Path(__file__).resolve().parents[2]
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        out = subprocess.run(
            [sys.executable, "-c", _CHILD.format(folder=folder)],
            capture_output=True, text=True, check=True, env=env, cwd=root,
        )  # fmt: skip
        assert seed == "1" or int(out.stdout.split()[-1]) >= 1, f"hash seed {seed} missed"
    entries = [p.name for p in Path(folder).iterdir() if "log_prob_program" in p.name]
    assert len(entries) == 1, entries
