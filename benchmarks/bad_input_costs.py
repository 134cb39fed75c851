"""Issue 34 figures: how fast budgets are refused, and what the traced-randomness check costs.

Run from the repository root: ``python benchmarks/bad_input_costs.py``. Prints wall and CPU
seconds (this process, all threads) for: a black-box ``samples = 10**15`` and ``10**9``
refused (warm: JAX already started), a white-box ``samples = 10**15`` refused, and the two
extra model traces of :func:`dpaudit.model.traced_randomness.check_traced_randomness` for
a Laplace mean and a 20-step DP-SGD trajectory (the heaviest shipped model to trace), cold (the first
eager operations compile) and warm (as in an audit, whose plan traces the model too).
"""

import os
import time

import jax.numpy as jnp
import numpy as np

import dpaudit
from dpaudit.blackbox import numpy_generator
from dpaudit.model.traced_randomness import check_traced_randomness
from mechanisms.classic import laplace_mean
from mechanisms.dpsgd import breast_cancer_records, dpsgd_logistic


def _laplace(data, n, key):
    return float(np.sum(data)) + numpy_generator(key).laplace(size=n)


def _timed(label, call):
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        call()
        outcome = "ran"
    except ValueError as err:
        outcome = str(err)[:90] + "..."
    print(f"{label}: {time.perf_counter() - wall:.3f} s wall, {time.process_time() - cpu:.3f} s "
          f"CPU -- {outcome}")  # fmt: skip


def main():
    print(f"load average {os.getloadavg()}")
    d0, d1 = np.zeros(5), np.array([1.0, 0, 0, 0, 0])
    bb = dpaudit.blackbox_audit
    _timed("warm-up (black-box 10**15)", lambda: bb(_laplace, d0, d1, (1.0, 0.0), samples=10**15))
    _timed("black-box samples=10**15", lambda: bb(_laplace, d0, d1, (1.0, 0.0), samples=10**15))
    _timed("black-box samples=10**9", lambda: bb(_laplace, d0, d1, (1.0, 0.0), samples=10**9))
    mech = laplace_mean(epsilon=1.0, n=5)
    w0 = jnp.zeros((5, 1))
    w1 = w0.at[0, 0].set(1.0)
    _timed("white-box samples=10**15", lambda: dpaudit.audit(mech, w0, w1, samples=10**15))
    for state in ("cold", "warm"):
        _timed(
            f"two traces, Laplace mean ({state})",
            lambda: check_traced_randomness(mech.model, w0, "m"),
        )
    sgd = dpsgd_logistic()
    x, y = breast_cancer_records(sgd.params.get("n", 64) if sgd.params else 64)
    data = (jnp.asarray(x), jnp.asarray(y))
    for state in ("cold", "warm"):
        _timed(
            f"two traces, DP-SGD ({state})", lambda: check_traced_randomness(sgd.model, data, "sgd")
        )


if __name__ == "__main__":
    main()
