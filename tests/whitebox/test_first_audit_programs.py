"""The programs a first audit compiles in a fresh process (counts, never seconds).

A fresh process pays tracing, lowering and compiling (or reading from the persistent cache)
for every distinct XLA program the audit runs; eager ``jnp`` work outside ``jit`` compiles a
program per operation and shape. A first closed-form audit of a scalar Laplace mean runs
four programs (the key folding, the fused step, the regeneration of the largest loss's
release, the certificate's exact evaluation) where it ran 25 before issue 29's session 10.
And a program taking a distribution must have one persistent-cache key in every process:
numpyro orders a law's fields by a ``set`` of their names (string hashing differs per
process), so with plain ``jax.jit`` a filled cache missed such programs in a new process.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FIRST_AUDIT = """
import json, logging, re, sys
import numpy as np
import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist
import dpaudit

N = 10
def model(data):
    numpyro.sample("release", dist.Laplace(jnp.mean(data), 1.0 / N))

claim = dpaudit.Claim(epsilon=1.0, sensitivity=1.0 / N, sensitivity_norm="l1")
mechanism = dpaudit.Mechanism("laplace-mean", model, claim)
data = np.zeros(N)
data_prime = data.copy()
data_prime[0] = 1.0
if sys.argv[2] == "after-model":
    mechanism.release_distribution(data)  # the model's own operations are not the audit's
names = []

class Names(logging.Handler):
    def emit(self, record):
        found = re.search(r"Finished XLA compilation of jit\\((\\S+)\\)", record.getMessage())
        if found:
            names.append(found.group(1))

jax.config.update("jax_log_compiles", True)
for logger in ("jax._src.dispatch", "jax._src.interpreters.pxla"):
    log = logging.getLogger(logger)
    log.addHandler(Names())
    log.setLevel(logging.DEBUG)
    log.propagate = False
result = dpaudit.audit(mechanism, data, data_prime, samples=3000, route=sys.argv[1])
print(json.dumps({"names": names, "verdict": result.verdict}))
"""

CACHE_KEYS = """
import json, sys
import jax, jax.numpy as jnp, numpyro.distributions as dist
from dpaudit.core.compilation_cache import enable_compilation_cache
from dpaudit.model.densities import law_jit

enable_compilation_cache(sys.argv[1])
events = {"hits": 0, "misses": 0}

def listener(event, **kwargs):
    events["hits"] += event == "/jax/compilation_cache/cache_hits"
    events["misses"] += event == "/jax/compilation_cache/cache_misses"

jax.monitoring.register_event_listener(listener)

@law_jit
def log_density(law, x):
    return jnp.sum(law.log_prob(x))

law = dist.StudentT(3.0, jnp.array([0.0, 1.0]), 2.0).to_event(1)  # 4 fields, one a law
log_density(law, jnp.array([0.5, 0.25])).block_until_ready()
order = dist.StudentT.gather_pytree_data_fields()
print(json.dumps({**events, "order": list(order)}))
"""


#: each chunk size's step and its fold (``_update``: one program per chunk and grid size,
#: shared by every law, tests/whitebox/test_shared_fold.py)
DENSITY_STEPS = ["fold_in", "_density_step", "_update", "_density_step", "_update"]


#: A whole first audit: the model's own eager operations (its mean, its release drawn by
#: numpyro: the Laplace draw, its scale and its shift) once, each site's key split by one
#: program, and the audit's four. No program makes a key from a seed (``random.key``: two
#: programs), unpacks a split key, or checks a constant parameter (numpyro's ``Laplace``
#: checks ``loc`` and ``scale``: four programs).
WHOLE_CLOSED_FORM = [
    "_mean",
    "_split_key",
    "_laplace",
    "multiply",
    "add",
    "fold_in",
    "_closed_form_step",
    "_update",
    "closed_form_draws",
    "_evaluate_at",
]


def _run(script: str, *args: str, env: dict | None = None) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "DPAUDIT_CACHE": "0", **(env or {})}
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        (
            "closed-form",
            ["fold_in", "_closed_form_step", "_update", "closed_form_draws", "_evaluate_at"],
        ),
        # the pilot's own shape, then the main one; the release of the largest loss comes
        # out of the step (no program draws the chunk again)
        ("density", [*DENSITY_STEPS, "_evaluate_at"]),
    ],
)
def test_a_first_audit_in_a_fresh_process_compiles_few_programs(route, expected):
    record = _run(FIRST_AUDIT, route, "after-model")
    assert record["verdict"] == "pass"
    assert sorted(record["names"]) == sorted(expected), record["names"]


def test_a_whole_first_audit_traces_the_model_without_key_or_check_programs():
    """The plan's traces of the model: no key, unpacking or parameter-check programs."""
    record = _run(FIRST_AUDIT, "closed-form", "whole")
    assert record["verdict"] == "pass"
    assert sorted(record["names"]) == sorted(WHOLE_CLOSED_FORM), record["names"]


def test_a_program_of_a_distribution_has_one_cache_key_in_every_process(tmp_path):
    """Two processes with other string hash seeds: the second reads the first's program."""
    folder = str(tmp_path / "cache")
    env = {"DPAUDIT_CACHE": "1"}
    first = _run(CACHE_KEYS, folder, env={**env, "PYTHONHASHSEED": "1"})
    assert first["misses"] >= 1  # the program was compiled and written
    orders = [first["order"]]
    for seed in ("2", "3"):  # numpyro 0.22 orders StudentT's fields otherwise for these
        later = _run(CACHE_KEYS, folder, env={**env, "PYTHONHASHSEED": seed})
        assert later["misses"] == 0, f"hash seed {seed} (fields {later['order']}) missed"
        assert later["hits"] >= 1
        orders.append(later["order"])
    if all(order == orders[0] for order in orders):
        pytest.skip("numpyro's field order no longer follows the hash seed: nothing to show")
